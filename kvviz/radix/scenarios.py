"""Request scripts for the radix page and CLI: parsing, presets, and a step-by-step replay.

A script is a list of operations. Requests go through ``kvviz.strata.scheduler.Scheduler`` (one
scheduling round per step; requests in one step arrive together); the raw operations act on the
tree directly, as in the acceptance scenarios S1–S11 of tests/radix/test_radix.py and tests/radix/test_hiradix.py. The text form, one step per line::

    # a comment
    You are a helpful assistant . Hello !  => Hi !     a request: prompt => output (words or ints)
    & You are a helpful assistant . Bye !              '&' arrives in the same round as the line above
    doc1: 1..300 901                                   an optional name; a..b is a run of int tokens
    match 1 2 3 | insert 1 2 3 | lock 1 2 | unlock 1 2 | evict 5 | evict_host 5 | ack

Words become token ids through a vocabulary kept with the script, so the tree shows the words.
``replay`` runs a script once and keeps, for every step, a tidy frame of the tree's nodes, the
text dump, what happened, and running totals: moving a slider over the steps is then a lookup.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from kvviz.common.errors import InputError, require
from kvviz.radix.hiradix_cache import HiRadixCache
from kvviz.radix.radix_cache import MAX_TOKEN, RadixCache, as_tokens
from kvviz.radix.events import EVICTING, Event, EventKind, narrate
from kvviz.strata.inflight import StrataHiRadixCache, StrataRadixCache
from kvviz.strata.scheduler import COUNTERS, Request, Scheduler, SchedulerConfig

RAW_OPS = ("match", "insert", "lock", "unlock", "evict", "evict_host", "ack")
MAX_STEPS = 2_000
MAX_SCRIPT_TOKENS = 2_000_000
MAX_REQUEST_TOKENS = 200_000
MAX_TEXT_BYTES = 512 * 1024
WORD_BASE = 1_000_000   # word ids start here, so typed integers and words never collide


@dataclass(frozen=True)
class RequestSpec:
    name: str
    tokens: tuple[int, ...]
    output: tuple[int, ...] = ()
    extra_key: str | None = None


@dataclass(frozen=True)
class Op:
    """One step: a wave of requests (``kind == "requests"``) or a raw tree operation."""

    kind: str
    requests: tuple[RequestSpec, ...] = ()
    tokens: tuple[int, ...] = ()
    n: int = 0
    extra_key: str | None = None
    caption: str = ""          # the script's comment lines just above this step

    def describe(self, vocab: dict[int, str]) -> str:
        if self.kind == "requests":
            return ", ".join(r.name for r in self.requests) + (" arrives" if len(self.requests) == 1 else " arrive")
        if self.kind in ("evict", "evict_host"):
            return f"{self.kind}({self.n})"
        if self.kind == "ack":
            return "ack()"
        return f"{self.kind}({_words(self.tokens, vocab)})"


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
                    raise InputError(f"bad token run {item!r}: need a ≤ b and at most {MAX_REQUEST_TOKENS:,} "
                                     f"tokens", line=line, field=what)
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
    require(len(text.encode()) <= MAX_TEXT_BYTES, f"the script is larger than {MAX_TEXT_BYTES // 1024} KiB",
            field="script")
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
    return _checked(Script(name, tuple(ops), vocab.pairs(), text))


def _raw_op(word: str, rest: str, vocab: _Vocab, line: int) -> Op:
    if word in ("evict", "evict_host"):
        require(re.fullmatch(r"\s*\d+\s*", rest) is not None,
                f"line {line}: {word} needs a whole number of tokens, got {rest.strip()!r}", field="script")
        return Op(word, n=int(rest))
    if word == "ack":
        require(not rest.strip(), f"line {line}: ack takes no argument", field="script")
        return Op("ack")
    tokens = vocab.tokens(rest, line, word)
    require(bool(tokens) or word == "match", f"line {line}: {word} needs tokens", field="script")
    return Op(word, tokens=tokens)


def _request(line: str, vocab: _Vocab, line_no: int, default_name: str) -> RequestSpec:
    name = default_name
    head = re.match(r"([A-Za-z_][\w\-]*):\s", line)
    if head:
        name, line = f"{default_name} {head[1]}", line[head.end():]
    prompt, _, output = line.partition("=>")
    tokens = vocab.tokens(prompt, line_no, "prompt")
    if not tokens:
        raise InputError("a request needs at least one prompt token", line=line_no, field="prompt")
    return RequestSpec(name, tokens, vocab.tokens(output, line_no, "output"))


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
    require(isinstance(steps, list), "expected a list of steps (or an object with \"steps\")", field="steps")
    vocab, ops, counter = _Vocab(), [], [0]
    for i, step in enumerate(steps, 1):
        require(isinstance(step, dict), f"step {i} is not an object", field="steps")
        kind = step.get("op", "requests")
        if kind in ("request", "requests"):
            wave = step["requests"] if "requests" in step else [step]
            require(isinstance(wave, list) and wave, f"step {i}: \"requests\" must be a non-empty list",
                    field="requests")
            ops.append(Op("requests", tuple(_json_request(r, vocab, i, counter) for r in wave)))
        elif kind in RAW_OPS:
            ops.append(_json_raw(kind, step, vocab, i))
        else:
            raise InputError(f"step {i}: unknown op {kind!r}; use request, {', '.join(RAW_OPS)}", field="op")
    name = doc.get("name", "JSON script") if isinstance(doc, dict) else "JSON script"
    return _checked(Script(str(name)[:80], tuple(ops), vocab.pairs()))


def _json_tokens(value: Any, vocab: _Vocab, step: int, what: str) -> tuple[int, ...]:
    if isinstance(value, str):
        return vocab.tokens(value, step, what)
    try:
        return as_tokens(value if value is not None else (), what)
    except InputError as exc:
        raise InputError(f"step {step}: {exc}", field=what) from None


def _json_request(r: Any, vocab: _Vocab, step: int, counter: list[int]) -> RequestSpec:
    require(isinstance(r, dict), f"step {step}: a request must be an object", field="requests")
    counter[0] += 1
    tokens = _json_tokens(r.get("tokens", r.get("text")), vocab, step, "tokens")
    require(bool(tokens), f"step {step}: a request needs at least one prompt token", field="tokens")
    extra = r.get("extra_key")
    return RequestSpec(str(r.get("name", f"R{counter[0]}"))[:40], tokens,
                       _json_tokens(r.get("output", ()), vocab, step, "output"),
                       None if extra is None else str(extra)[:40])


def _json_raw(kind: str, step: dict, vocab: _Vocab, i: int) -> Op:
    if kind in ("evict", "evict_host"):
        n = step.get("n")
        require(isinstance(n, int) and not isinstance(n, bool) and n >= 0,
                f"step {i}: {kind} needs \"n\", a whole number of tokens ≥ 0", field="n")
        return Op(kind, n=n)
    if kind == "ack":
        return Op("ack")
    tokens = _json_tokens(step.get("tokens", step.get("text")), vocab, i, "tokens")
    require(bool(tokens) or kind == "match", f"step {i}: {kind} needs tokens", field="tokens")
    return Op(kind, tokens=tokens, extra_key=step.get("extra_key"))


def _checked(script: Script) -> Script:
    require(len(script.ops) > 0, "the script has no steps: add a request (one per line) or an operation",
            field="script")
    require(len(script.ops) <= MAX_STEPS, f"the script has {len(script.ops):,} steps; the limit is {MAX_STEPS:,}",
            field="script")
    total = sum(len(r.tokens) + len(r.output) for op in script.ops for r in op.requests)
    require(total <= MAX_SCRIPT_TOKENS, f"the script holds {total:,} tokens; the limit is {MAX_SCRIPT_TOKENS:,}",
            field="script")
    return script


def trace_rounds(trace, n: int, round_ms: int = 1000) -> list[list[RequestSpec]]:
    """The first ``n`` requests of a trace, block ids as tokens, grouped by arrival in windows of
    ``round_ms`` (one list per non-empty window; requests without blocks are left out)."""
    require(trace.has_block_ids, "this trace has no block ids (hash_ids), so it cannot be replayed in a "
            "radix tree", field="trace")
    require(n >= 1, "replay at least one request", field="requests")
    require(round_ms >= 1, "the round length must be at least 1 ms", field="round_ms")
    ts = trace.requests["timestamp"].to_numpy()[:n]
    window = (ts - ts[0]) // round_ms if len(ts) else ts
    rounds: list[list[RequestSpec]] = []
    for i in range(len(ts)):
        spec = RequestSpec(f"R{i + 1}", tuple(int(b) for b in trace.hash_ids(i)))
        if not spec.tokens:
            continue
        if rounds and window[i] == window[i - 1]:
            rounds[-1].append(spec)
        else:
            rounds.append([spec])
    return rounds


def script_from_trace(trace, n: int, round_ms: int = 1000) -> Script:
    """The first ``n`` requests of a trace, block ids as tokens; arrivals in the same
    ``round_ms`` window form one step (empty windows are skipped)."""
    ops = tuple(Op("requests", tuple(specs)) for specs in trace_rounds(trace, n, round_ms))
    return _checked(Script(f"{trace.name}: first {min(n, trace.n_requests)} requests", ops))


# ---- replay -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplayConfig:
    """The cache and scheduler a script is replayed on (capacities in tokens)."""

    cache: str = "hiradix"                  # "radix" or "hiradix"
    device_capacity: int = 64
    host_capacity: int = 256
    page_size: int = 1
    eviction_policy: str = "lru"
    write_policy: str = "write_through"
    deferral: bool = True
    threshold: int = 100
    auto_ack: bool = True
    hit_count_rule: str = "upstream"

    def build(self) -> tuple[RadixCache, Scheduler]:
        require(self.cache in ("radix", "hiradix"), f"unknown cache {self.cache!r}; use radix or hiradix",
                field="cache")
        if self.cache == "radix":
            cache = StrataRadixCache(self.page_size, self.eviction_policy, self.device_capacity, self.hit_count_rule)
        else:
            cache = StrataHiRadixCache(self.device_capacity, self.host_capacity, self.write_policy, self.page_size,
                                 self.eviction_policy, hit_count_rule=self.hit_count_rule)
        return cache, Scheduler(cache, SchedulerConfig(self.deferral, self.threshold, auto_ack=self.auto_ack))


def hit_counts_decide(cache: str, eviction_policy: str, write_policy: str) -> bool:
    """Whether the hit-count rule (upstream, or legacy: SGLang before PR #18843) can change what
    is evicted or backed up, not only the counts shown: LFU and SLRU order leaves by their counts,
    and HiCache's ``write_through`` and ``write_through_selective`` back a node up when its count
    reaches a threshold (``write_back`` only at eviction)."""
    return eviction_policy in ("lfu", "slru") or (cache == "hiradix" and write_policy != "write_back")


GAUGES = ("device_tokens", "host_tokens", "reserved", "evictable", "protected", "nodes", "in_flight_nodes")
EVENT_TOTALS = {EventKind.EVICT: "evicted_device", EventKind.TO_HOST: "evicted_device",
                EventKind.WRITE_BACK: "evicted_device", EventKind.EVICT_HOST: "evicted_host",
                EventKind.LOAD_BACK: "loaded_tokens", EventKind.BACKUP: "backed_up"}
TOTAL_COLUMNS = GAUGES + tuple(COUNTERS) + tuple(dict.fromkeys(EVENT_TOTALS.values()))


def gauges(cache: RadixCache) -> dict[str, int]:
    """The tree's state now: the ``GAUGES`` columns."""
    return dict(device_tokens=cache.total_size(), host_tokens=getattr(cache, "host_tokens", 0),
                reserved=cache.reserved, evictable=cache.evictable_size(), protected=cache.protected_size(),
                nodes=cache.n_nodes, in_flight_nodes=cache.n_in_flight)


def count_events(cache: RadixCache, seen: dict[str, int]) -> list[Event]:
    """Take the cache's new events, add their tokens to the running ``EVENT_TOTALS``, return them."""
    events = cache.take_events()
    for e in events:
        if e.kind in EVENT_TOTALS:
            seen[EVENT_TOTALS[e.kind]] += e.tokens
    return events


@dataclass(frozen=True)
class Replay:
    """A replayed script: per step, the tree (``nodes`` rows with ``step``), text and totals."""

    script: str
    config: ReplayConfig
    steps: pd.DataFrame            # step, op, caption, lines (list of str), events (tuple of Event),
                                   # clock_from, clock_to, error ("" if none), totals…
    nodes: pd.DataFrame            # the tidy node frame of every step, with a ``step`` column
    node_offsets: np.ndarray       # step k's rows are nodes[offsets[k]:offsets[k+1]]
    dumps: tuple[str, ...]
    requests: pd.DataFrame         # one row per request: its hits, computation and deferrals
    vocab: tuple[tuple[int, str], ...] = field(default=())
    first_snapshot: int = 0        # the step of the first kept tree (snapshots of a range of steps)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def tree(self, step: int) -> pd.DataFrame:
        k = step - self.first_snapshot
        return self.nodes.iloc[self.node_offsets[k]:self.node_offsets[k + 1]]

    def dump(self, step: int) -> str:
        return self.dumps[step - self.first_snapshot]

    @property
    def error(self) -> str | None:
        """The message of the operation that stopped the replay, if one did."""
        errs = [e for e in self.steps["error"] if e]
        return errs[0] if errs else None


SNAPSHOT_WINDOW = 25   # a long script keeps the trees of this many steps at a time


def snapshot_window(n_steps: int, step: int, window: int = SNAPSHOT_WINDOW) -> tuple[int, int]:
    """The steps (start, stop) whose trees a viewer at ``step`` keeps, for ``replay(snapshots=range(...))``:
    every step of a script of up to four windows, else the window that holds ``step``."""
    if n_steps <= 4 * window:
        return 0, n_steps
    start = step // window * window
    return start, start + window


def replay(script: Script, config: ReplayConfig = ReplayConfig(), *, snapshots: bool | range = True,
           max_drain: int = 200) -> Replay:
    """Run ``script`` on a fresh cache; keep the tree after every step (when ``snapshots``).

    ``snapshots`` may be a range of steps instead: only their trees are kept and the replay stops
    after the last of them (a long script is then viewed a window of steps at a time, without a
    snapshot of every step).

    Step 0 is the empty tree. After the script, rounds run until every request has finished.
    A bad operation (unlocking what holds no lock) ends the replay at that step with its message.
    """
    cache, sched = config.build()
    vocab = script.words
    rows, frames, dumps, requests, locks = [], [], [], [], {}
    seen = dict.fromkeys(EVENT_TOTALS.values(), 0)

    def record(op_text: str, said: dict[str, list[str]], clock_from: int, error: str = "", caption: str = "") -> None:
        events = tuple(count_events(cache, seen))
        lines = _interleave(narrate(events, vocab, config.eviction_policy),
                            events, said)
        rows.append(dict(step=len(rows), op=op_text, caption=caption, lines=lines, events=events,
                         clock_from=clock_from, clock_to=cache.clock, error=error,
                         **gauges(cache), **sched.totals, **seen))
        if snapshots is True or (isinstance(snapshots, range) and len(rows) - 1 in snapshots):
            frames.append(cache.node_frame(vocab))
            dumps.append(cache.pretty_print(vocab))

    record("start: an empty tree", {"": ["The tree holds only its root."]}, 0)
    pending = list(script.ops)
    while pending or not sched.idle:
        if isinstance(snapshots, range) and len(rows) >= snapshots.stop:
            break
        if len(rows) > len(script.ops) + max_drain:
            record("stopped", {"": [f"{len(sched.waiting)} requests still waiting after {max_drain} extra rounds "
                                    "(memory held by locks?)"]}, cache.clock, error="requests never admitted")
            break
        op = pending.pop(0) if pending else None
        clock_from, said = cache.clock + 1, {}
        text = op.describe(vocab) if op else "drain: the running batch finishes"
        try:
            if op is None or op.kind == "requests":
                arrivals = [Request(r.name, r.tokens, r.output, r.extra_key) for r in (op.requests if op else ())]
                requests.extend(arrivals)
                said = _round_lines(sched.round(arrivals), sched)
            else:
                said = {"": _raw(cache, op, locks)}
        except InputError as exc:
            record(text, said, clock_from, error=f"step {len(rows)} ({text}): {exc}", caption=op.caption if op else "")
            break
        record(text, said, clock_from, caption=op.caption if op else "")
    first = snapshots.start if isinstance(snapshots, range) else 0
    return _finish(script, config, rows, frames, dumps, requests, first)


def _finish(script, config, rows, frames, dumps, requests, first: int = 0) -> Replay:
    steps = pd.DataFrame(rows)
    if frames:
        sizes = [len(f) for f in frames]
        nodes = pd.concat(frames, ignore_index=True)
        nodes.insert(0, "step", np.repeat(np.arange(len(frames)), sizes))
        offsets = np.concatenate([[0], np.cumsum(sizes)])
    else:
        nodes, offsets = pd.DataFrame(), np.zeros(1, dtype=np.int64)
    req = pd.DataFrame([dict(request=r.rid, prompt=len(r.tokens), device_hit=r.device_hit, host_hit=r.host_hit,
                             loaded=r.loaded, in_flight=r.in_flight, computed=r.computed, deferrals=r.deferrals,
                             status=r.status) for r in requests])
    return Replay(script.name, config, steps, nodes, offsets, tuple(dumps), req, script.vocab, first)


def _round_lines(log: dict, sched: Scheduler) -> dict[str, list[str]]:
    """What the scheduler decided for each request this round, by request (its tree events come first)."""
    said: dict[str, list[str]] = {}
    for r in log["finished"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** finished: its prompt, then prompt + output, went into "
                                          "the tree (the inserts above)")
    for r in log["admitted"]:
        flight = f" ({r.in_flight} of them were in flight: **recomputed**)" if r.in_flight else ""
        said.setdefault(r.rid, []).append(f"**{r.rid}** admitted: computes {r.computed} of its {len(r.tokens)} "
                                          f"prompt tokens{flight}")
    for r, f in log["deferred"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** deferred (delay hit): its match runs over {f} in-flight "
                                          f"tokens > {sched.config.threshold}")
    for r in log["blocked"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** waits: not enough free GPU memory even after eviction")
    for r in log["rejected"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** rejected: it needs more KV than the whole GPU pool")
    return said or {"": ["Nothing to schedule this round."]}


def _interleave(narrated: list[str], events: tuple[Event, ...], said: dict[str, list[str]]) -> list[str]:
    """The events' sentences in order, each request's own decisions right after its last event."""
    said = {who: list(lines) for who, lines in said.items()}
    out: list[str] = []
    for i, (line, e) in enumerate(zip(narrated, events)):
        out.append(line)
        if i + 1 == len(events) or events[i + 1].who != e.who:
            out.extend(said.pop(e.who, []) if e.who else [])
    return out + [line for lines in said.values() for line in lines]


def _raw(cache: RadixCache, op: Op, locks: dict) -> list[str]:
    """Run one raw operation; the lines say what its events do not (a lock count, a transfer count)."""
    is_hi = isinstance(cache, HiRadixCache)
    if op.kind in ("evict_host", "ack") and not is_hi:
        raise InputError(f"{op.kind} needs the HiRadixCache (two tiers)", field="cache")
    if op.kind == "evict":
        freed = cache.evict(op.n)   # a shortfall is an event of its own, with its reason
        return [f"evict({op.n}) freed {freed} GPU tokens (whole leaves only)"] if freed >= op.n else []
    if op.kind == "evict_host":
        return [f"evict_host({op.n}) freed {cache.evict_host(op.n)} CPU tokens (whole leaves only)"]
    if op.kind == "ack":
        return [f"acknowledged {cache.ack()} CPU transfers; their locks are released"]
    if op.kind == "match":
        cache.match_prefix(op.tokens, op.extra_key)
        return ["a lookup changes no hit count"]
    if op.kind == "insert":
        tokens = op.tokens[:cache.page_align(len(op.tokens))]
        free = cache.device_free
        if free is not None and free < len(tokens):   # the allocator's side: lock the hit, evict the rest
            peek = cache.match_prefix(tokens, op.extra_key)
            cache.inc_lock_ref(peek.last_node)
            short = len(tokens) - peek.device_len
            ok = cache.alloc_device(short)
            cache.dec_lock_ref(peek.last_node)
            if not ok:
                raise InputError(f"insert: {short} new tokens do not fit in the device pool", field="insert")
            cache.release_device(short)
        cache.insert(tokens, extra_key=op.extra_key)
        return []
    m = cache.match_prefix(op.tokens, op.extra_key)
    node = m.last_node
    if op.kind == "lock":
        if node is cache.root:
            raise InputError("nothing of that key is cached on the device", field="lock")
        cache.inc_lock_ref(node)
        return [f"locked node {node.id} and its ancestors (lock_ref now {node.lock_ref})"]
    if node is cache.root:
        raise InputError("nothing of that key is cached on the device, so it holds no lock", field="unlock")
    cache.dec_lock_ref(node)
    return [f"unlocked node {node.id} (lock_ref now {node.lock_ref})"]


def to_text(script: Script) -> str:
    """The text form of a script of integer-token requests (e.g. one made from a trace)."""
    lines = []
    for op in script.ops:
        if op.kind != "requests":
            lines.append(f"{op.kind} {op.n}" if op.kind.startswith("evict") else
                         f"{op.kind} {' '.join(map(str, op.tokens))}".strip())
            continue
        for j, r in enumerate(op.requests):
            out = f" => {' '.join(map(str, r.output))}" if r.output else ""
            lines.append(f"{'& ' if j else ''}{' '.join(map(str, r.tokens))}{out}")
    return "\n".join(lines) + "\n"


def repeat_prompt_hit(length: int, page_size: int) -> int:
    """Tokens a request reports cached when the identical prompt ran just before (SGLang #27206)."""
    prompt = tuple(range(1, length + 1))
    cache, sched = ReplayConfig(cache="radix", device_capacity=max(4 * length, page_size),
                                page_size=page_size).build()
    second = Request("again", prompt)
    for arrivals in ([Request("first", prompt)], [second], []):
        sched.round(arrivals)
    return second.cached


def eviction_steps(rep: Replay) -> list[int]:
    """The steps whose events free GPU memory (a leaf evicted, moved to CPU or written back)."""
    return [int(row.step) for row in rep.steps.itertuples() if any(e.kind in EVICTING for e in row.events)]


def totals_frame(rep: Replay) -> pd.DataFrame:
    """The running totals, one row per step."""
    return rep.steps[["step", *TOTAL_COLUMNS]]


# ---- presets ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    title: str
    blurb: str
    text: str
    suggested: dict = field(default_factory=dict)

    def script(self) -> Script:
        return parse_text(self.text, self.title)


_SYS = "You are a helpful assistant ."
_SHOTS = "Q : 1+1 ? A : 2 . Q : 2+3 ? A : 5 ."
# Fig. 3's elided turns, given lengths (in tokens; commas separate tokens in a script, so none here)
# with which 120 tokens evict at the figure's steps and the figure's nodes (tests/radix/test_radix_report.py).
_THINK = ("Let us think . The first train is 60 km ahead when the second one starts ; the gap closes at 30 km / h "
          "so the second train then catches up exactly two hours later : at 6 pm sharp .")
_ASK = "What can you do for me and for my small team today ?"
_HELP = "I can help . I answer questions and write with you ."
_POEM = "Roses are red ; violets are blue ; sugar is sweet ; and so are you . That is all I have ."

PRESETS: dict[str, Preset] = {
    "sglang9": Preset(
        "SGLang paper: nine steps",
        "The RadixAttention figure of the SGLang paper (arXiv 2312.07104, Fig. 3): two chat sessions, a "
        "batch of few-shot queries and self-consistency samples share one tree under LRU eviction. Step k "
        "here is the figure's (k + 1). The figure elides its texts (\"...\") and gives no sizes: these "
        "lengths and 120 tokens of GPU memory evict where it does, at (5), (8) and (9).",
        f"""# (2) a chat session: system prompt, a user message and the reply
chat1: {_SYS} User : Hello ! => Assistant : Hi !
# (3) the same session continues: the first turn is reused, the new turn appended
chat1: {_SYS} User : Hello ! Assistant : Hi ! User : Solve this problem . => Assistant : Sure ! {_THINK}
# (4) a new chat session shares only the system prompt: the edge splits
chat2: {_SYS} User : {_ASK} => Assistant : {_HELP}
# (5) the second session continues: memory runs short, and the least recently used leaf (the first session's reply) goes
chat2: {_SYS} User : {_ASK} Assistant : {_HELP} User : Write a poem . => Assistant : {_POEM}
# (6) a few-shot query shares nothing: a new branch at the root
shot: {_SHOTS} Q : 3+3 ? => A : 6 .
# (7) a batch of few-shot queries with the same examples
shot: {_SHOTS} Q : 4+4 ? => A : 8 .
& shot: {_SHOTS} Q : 5+2 ? => A : 7 .
& shot: {_SHOTS} Q : 9+1 ? => A : 10 .
# (8) the first session returns and recomputes its evicted reply: the second session, least recently used, goes
chat1: {_SYS} User : Hello ! Assistant : Hi ! User : Solve this problem . Assistant : Sure ! {_THINK} User : Thanks => Assistant : Welcome
# (9) self-consistency: several sampled answers to one few-shot question; the other few-shot queries go
sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : 12 .
& sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : twelve .
& sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : 12 !
""",
        dict(cache="radix", device_capacity=120, page_size=1, eviction_policy="lru"),
    ),
    "system": Preset(
        "Shared system prompt",
        "Five users behind one system prompt: the prompt is computed once; the same question twice still "
        "recomputes its last token.",
        f"""alice: {_SYS} Answer briefly . User : What is a KV cache ? => It stores keys and values .
bob: {_SYS} Answer briefly . User : Why is prefill slow ? => It reads the whole prompt .
carol: {_SYS} Answer briefly . User : What is a radix tree ? => A compressed trie .
dave: {_SYS} Answer briefly . User : What is a KV cache ? => Keys and values of past tokens .
erin: {_SYS} Answer briefly . User : What is paging ? => Fixed-size blocks .
""",
        dict(cache="radix", device_capacity=128),
    ),
    "chat": Preset(
        "Multi-turn chat",
        "Two users take turns; every turn re-sends the history, and the reply of the last turn is in the tree "
        "because outputs are inserted at finish.",
        """u1: Plan a trip to Rome . => Day one : the Colosseum .
u2: Explain photosynthesis . => Plants turn light into sugar .
u1: Plan a trip to Rome . Day one : the Colosseum . And day two ? => Day two : the Vatican .
u2: Explain photosynthesis . Plants turn light into sugar . Where ? => In the chloroplasts .
u1: Plan a trip to Rome . Day one : the Colosseum . And day two ? Day two : the Vatican . Food ? => Try carbonara .
u2: Explain photosynthesis . Plants turn light into sugar . Where ? In the chloroplasts . Why green ? => Chlorophyll .
""",
        dict(cache="radix", device_capacity=96),
    ),
    "fewshot": Preset(
        "Few-shot prompts",
        "Questions behind the same examples share them; a different example set starts its own branch.",
        f"""{_SHOTS} Q : 3+3 ? => A : 6 .
{_SHOTS} Q : 4+4 ? => A : 8 .
{_SHOTS} Q : 7+1 ? => A : 8 .
Q : capital of France ? A : Paris . Q : capital of Spain ? => A : Madrid .
Q : capital of France ? A : Paris . Q : capital of Italy ? => A : Rome .
{_SHOTS} Q : 9+9 ? => A : 18 .
""",
        dict(cache="radix", device_capacity=64),
    ),
    "rag": Preset(
        "RAG documents",
        "Retrieved documents in a different order are a different prefix: only what comes before the "
        "first difference is reused (CacheBlend's motivation).",
        f"""{_SYS} Doc-A : the Nile is long . Doc-B : the Amazon is wide . Q : which is longer ? => The Nile .
{_SYS} Doc-B : the Amazon is wide . Doc-A : the Nile is long . Q : which is wider ? => The Amazon .
{_SYS} Doc-A : the Nile is long . Doc-B : the Amazon is wide . Q : where is the Nile ? => Africa .
{_SYS} Doc-C : Everest is high . Doc-A : the Nile is long . Q : which is higher ? => Everest .
""",
        dict(cache="radix", device_capacity=96),
    ),
    "delay": Preset(
        "Delay hits (Strata)",
        "Three questions on a new 300-token document arrive together. Without deferral all three compute "
        "the document; with Strata's rule the later two wait a round and hit it (spec S11).",
        """doc1: 1..300 901
& doc1: 1..300 902
& other: 2001..2050
& doc1: 1..300 903
doc2: 5001..5200 904
& doc2: 5001..5200 905
& doc1: 1..300 906
""",
        dict(cache="hiradix", device_capacity=1024, host_capacity=2048, deferral=True, threshold=100),
    ),
    "tiers": Preset(
        "HiCache tiers",
        "Documents cycle through a GPU that holds about one: they spill to CPU memory and load back; a "
        "CPU hit under 10 tokens is recomputed instead. Switch the write policy to compare what survives.",
        """a: 1..60 => 601..604
b: 1001..1060 => 1601..1604
# a was pushed to CPU by b: its 64 tokens load back
a: 1..60 601..604 701..706 => 801
# a little pressure: a's newest turn goes to CPU
tiny: 3001..3012
# its CPU part is under 10 tokens: recomputed, not loaded
a: 1..60 601..604 701..706 801 => 802
c: 2001..2060 => 2601
b: 1001..1060 1601..1604 => 1701
""",
        dict(cache="hiradix", device_capacity=80, host_capacity=400, write_policy="write_through"),
    ),
    "ops": Preset(
        "Tree operations (spec S1–S3, S8)",
        "The raw operations on their own: insert, a match that splits an edge, eviction with its cascade, and "
        "HiCache's backup lock until ack.",
        """insert 1 2 3 4 5
insert 1 2 3 9
match 1 2 3 4 7
match 1 2
insert 7 8
match 1 2 3 9 9
evict 2
evict 3
lock 1 2 3
evict 10
unlock 1 2 3
ack
evict 10
match 1 2 3
""",
        dict(cache="hiradix", device_capacity=32, host_capacity=64, auto_ack=False),
    ),
}
