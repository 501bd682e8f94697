"""Request scripts for the radix page and CLI: their steps, and their text and JSON forms.

A script is a list of operations. Requests go through ``kvviz.radix.scheduler.Scheduler`` (one
scheduling round per step; requests in one step arrive together); the raw operations act on the
tree directly, as in the acceptance scenarios S1–S11 of tests/radix/test_radix.py and
tests/radix/test_hiradix.py. The text form, one step per line::

    # a comment
    You are a helpful assistant . Hello !  => Hi !     a request: prompt => output (words or ints)
    & You are a helpful assistant . Bye !              '&' arrives in the same round as the line above
    doc1: 1..300 901                                   an optional name; a..b is a run of int tokens
    match 1 2 3 | insert 1 2 3 | lock 1 2 | unlock 1 2 | evict 5 | evict_host 5 | ack

Words become token ids through a vocabulary kept with the script, so the tree shows the words.
``kvviz.radix.replay`` runs a script.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from kvviz.common.errors import InputError, require
from kvviz.radix.radix_cache import MAX_TOKEN, as_tokens
from kvviz.radix.request import Request

RAW_OPS = ("match", "insert", "lock", "unlock", "evict", "evict_host", "ack")
MAX_STEPS = 2_000
MAX_SCRIPT_TOKENS = 2_000_000
MAX_REQUEST_TOKENS = 200_000
MAX_TEXT_BYTES = 512 * 1024
WORD_BASE = 1_000_000  # word ids start here, so typed integers and words never collide


@dataclass(frozen=True)
class Op:
    """One step: a wave of requests (``kind == "requests"``) or a raw tree operation."""

    kind: str
    requests: tuple[Request, ...] = ()
    tokens: tuple[int, ...] = ()
    n: int = 0
    extra_key: str | None = None
    caption: str = ""  # the script's comment lines just above this step

    def describe(self, vocab: dict[int, str]) -> str:
        if self.kind == "requests":
            return ", ".join(r.rid for r in self.requests) + (" arrives" if len(self.requests) == 1 else " arrive")
        if self.kind in ("evict", "evict_host"):
            where = "GPU" if self.kind == "evict" else "CPU"
            return f"evict {self.n:,} token{'s' if self.n != 1 else ''} from the {where}"
        if self.kind == "ack":
            return "acknowledge the pending CPU copies"
        return f"{self.kind} {_words(self.tokens, vocab)}"


@dataclass(frozen=True)
class Script:
    name: str
    ops: tuple[Op, ...]
    vocab: tuple[tuple[int, str], ...] = ()
    text: str = ""

    @property
    def words(self) -> dict[int, str]:
        return dict(self.vocab)

    @property
    def n_requests(self) -> int:
        return sum(len(op.requests) for op in self.ops)


def _words(tokens: tuple[int, ...], vocab: dict[int, str], n: int = 8) -> str:
    shown = " ".join(vocab.get(t, str(t)) for t in tokens[:n])
    return shown + (" …" if len(tokens) > n else "") if tokens else "∅"


# ---- parsing ------------------------------------------------------------------------------------
class _Vocab:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def tokens(self, text: str, line: int, what: str) -> tuple[int, ...]:
        out: list[int] = []
        for item in re.split(r"[\s,]+", text.strip()):
            if not item:
                continue
            run = re.fullmatch(r"(\d+)\.\.(\d+)", item)
            if run:
                a, b = int(run[1]), int(run[2])
                if b < a or b - a >= MAX_REQUEST_TOKENS:
                    raise InputError(
                        f"bad token run {item!r}: need a ≤ b and at most {MAX_REQUEST_TOKENS:,} tokens",
                        line=line,
                        field=what,
                    )
                out.extend(range(a, b + 1))
            elif re.fullmatch(r"\d+", item):
                if int(item) > MAX_TOKEN:
                    raise InputError(f"token {item} is larger than 2^62", line=line, field=what)
                out.append(int(item))
            else:
                out.append(self.ids.setdefault(item, WORD_BASE + len(self.ids)))
            if len(out) > MAX_REQUEST_TOKENS:
                raise InputError(f"more than {MAX_REQUEST_TOKENS:,} tokens", line=line, field=what)
        return tuple(out)

    def pairs(self) -> tuple[tuple[int, str], ...]:
        return tuple((i, w) for w, i in self.ids.items())


def parse_text(text: str, name: str = "typed script") -> Script:
    """Parse the one-step-per-line text form (see the module docstring)."""
    require(
        len(text.encode()) <= MAX_TEXT_BYTES, f"the script is larger than {MAX_TEXT_BYTES // 1024} KiB", field="script"
    )
    vocab, ops, n_req, notes = _Vocab(), [], 0, []
    for line_no, raw in enumerate(text.splitlines(), 1):
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            if comment.strip():
                notes.append(comment.strip())
            continue
        word, _, rest = line.partition(" ")
        joins = line.startswith("&") and ops and ops[-1].kind == "requests"
        if word in RAW_OPS:
            op = _raw_op(word, rest, vocab, line_no)
        else:
            spec = _request(line.lstrip("&").strip(), vocab, line_no, f"R{n_req + 1}")
            n_req += 1
            last = ops.pop() if joins else Op("requests")
            op = replace(last, requests=last.requests + (spec,))
        caption = " ".join(filter(None, [op.caption, *notes, comment.strip()]))
        ops.append(replace(op, caption=caption))
        notes = []
    return checked(Script(name, tuple(ops), vocab.pairs(), text))


def _raw_op(word: str, rest: str, vocab: _Vocab, line: int) -> Op:
    if word in ("evict", "evict_host"):
        require(
            re.fullmatch(r"\s*\d+\s*", rest) is not None,
            f"line {line}: {word} needs a whole number of tokens, got {rest.strip()!r}",
            field="script",
        )
        return Op(word, n=int(rest))
    if word == "ack":
        require(not rest.strip(), f"line {line}: ack takes no argument", field="script")
        return Op("ack")
    tokens = vocab.tokens(rest, line, word)
    require(bool(tokens) or word == "match", f"line {line}: {word} needs tokens", field="script")
    return Op(word, tokens=tokens)


def _request(line: str, vocab: _Vocab, line_no: int, default_name: str) -> Request:
    name = default_name
    head = re.match(r"([A-Za-z_][\w\-]*):\s", line)
    if head:
        name, line = f"{default_name} {head[1]}", line[head.end() :]
    prompt, _, output = line.partition("=>")
    tokens = vocab.tokens(prompt, line_no, "prompt")
    if not tokens:
        raise InputError("a request needs at least one prompt token", line=line_no, field="prompt")
    return Request(name, tokens, vocab.tokens(output, line_no, "output"))


def parse_json(data: str | bytes) -> Script:
    """Parse a JSON script: a list of steps, or {"name", "steps": [...]}.

    A step is a request ``{"tokens": [...] | "text": "...", "output": [...], "name", "extra_key"}``,
    a wave ``{"requests": [request, ...]}``, or a raw operation ``{"op": "evict", "n": 5}`` /
    ``{"op": "match", "tokens": [...]}`` / ``{"op": "ack"}``.
    """
    require(len(data) <= MAX_TEXT_BYTES * 4, "the script file is larger than 2 MiB", field="script")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise InputError(f"not valid JSON ({exc})", field="script") from None
    steps = doc.get("steps") if isinstance(doc, dict) else doc
    require(isinstance(steps, list), 'expected a list of steps (or an object with "steps")', field="steps")
    vocab, ops, counter = _Vocab(), [], [0]
    for i, step in enumerate(steps, 1):
        require(isinstance(step, dict), f"step {i} is not an object", field="steps")
        kind = step.get("op", "requests")
        if kind in ("request", "requests"):
            wave = step["requests"] if "requests" in step else [step]
            require(isinstance(wave, list) and wave, f'step {i}: "requests" must be a non-empty list', field="requests")
            ops.append(Op("requests", tuple(_json_request(r, vocab, i, counter) for r in wave)))
        elif kind in RAW_OPS:
            ops.append(_json_raw(kind, step, vocab, i))
        else:
            raise InputError(f"step {i}: unknown op {kind!r}; use request, {', '.join(RAW_OPS)}", field="op")
    name = doc.get("name", "JSON script") if isinstance(doc, dict) else "JSON script"
    return checked(Script(str(name)[:80], tuple(ops), vocab.pairs()))


def _json_tokens(value: Any, vocab: _Vocab, step: int, what: str) -> tuple[int, ...]:
    if isinstance(value, str):
        return vocab.tokens(value, step, what)
    try:
        return as_tokens(value if value is not None else (), what)
    except InputError as exc:
        raise InputError(f"step {step}: {exc}", field=what) from None


def _json_request(r: Any, vocab: _Vocab, step: int, counter: list[int]) -> Request:
    require(isinstance(r, dict), f"step {step}: a request must be an object", field="requests")
    counter[0] += 1
    tokens = _json_tokens(r.get("tokens", r.get("text")), vocab, step, "tokens")
    require(bool(tokens), f"step {step}: a request needs at least one prompt token", field="tokens")
    extra = r.get("extra_key")
    return Request(
        str(r.get("name", f"R{counter[0]}"))[:40],
        tokens,
        _json_tokens(r.get("output", ()), vocab, step, "output"),
        None if extra is None else str(extra)[:40],
    )


def _json_raw(kind: str, step: dict, vocab: _Vocab, i: int) -> Op:
    if kind in ("evict", "evict_host"):
        n = step.get("n")
        require(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0,
            f'step {i}: {kind} needs "n", a whole number of tokens ≥ 0',
            field="n",
        )
        return Op(kind, n=n)
    if kind == "ack":
        return Op("ack")
    tokens = _json_tokens(step.get("tokens", step.get("text")), vocab, i, "tokens")
    require(bool(tokens) or kind == "match", f"step {i}: {kind} needs tokens", field="tokens")
    return Op(kind, tokens=tokens, extra_key=step.get("extra_key"))


def checked(script: Script) -> Script:
    require(
        len(script.ops) > 0, "the script has no steps: add a request (one per line) or an operation", field="script"
    )
    require(
        len(script.ops) <= MAX_STEPS,
        f"the script has {len(script.ops):,} steps; the limit is {MAX_STEPS:,}",
        field="script",
    )
    total = sum(len(r.tokens) + len(r.output) for op in script.ops for r in op.requests)
    require(
        total <= MAX_SCRIPT_TOKENS,
        f"the script holds {total:,} tokens; the limit is {MAX_SCRIPT_TOKENS:,}",
        field="script",
    )
    return script


def to_text(script: Script) -> str:
    """The text form of a script of integer-token requests (e.g. one made from a trace)."""
    lines = []
    for op in script.ops:
        if op.kind != "requests":
            lines.append(
                f"{op.kind} {op.n}"
                if op.kind.startswith("evict")
                else f"{op.kind} {' '.join(map(str, op.tokens))}".strip()
            )
            continue
        for j, r in enumerate(op.requests):
            out = f" => {' '.join(map(str, r.output))}" if r.output else ""
            lines.append(f"{'& ' if j else ''}{' '.join(map(str, r.tokens))}{out}")
    return "\n".join(lines) + "\n"
