"""A synthetic request workload with the reuse structure of a real serving trace.

Three kinds of request, as in lecture 9 §2.2 (code 03, demo 1) of the course notes:

* **document QA**: a document from a shared pool, chosen with Zipf-skewed popularity, followed by
  a short question; the document's full blocks are shared by everyone who asks about it;
* **multi-turn chat**: a session whose every turn re-sends the whole history (earlier prompts,
  the model's answers and the new message); full blocks of the history are reused by the next
  turn, the block where the last prompt ended is not (it has since grown);
* **one-shot**: a prompt nobody sends again.

Prompts are modelled at block level: a block is named by the chained hash of (its parent's id,
what its tokens are), so ids follow the Mooncake format's rule that equal ids mean equal
prefixes. With the defaults about half of all block accesses are reusable with an infinite
cache and most distinct blocks are never reused (the notes report ~52% and ~84%).
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

import numpy as np

from kvviz.common.args import MAX_SEED
from kvviz.common.errors import require
from kvviz.traces.model import DEFAULT_BLOCK_SIZE, Trace, from_records


@dataclass(frozen=True)
class WorkloadConfig:
    """Knobs of the generator; token lengths are means of log-normal draws."""

    requests: int = 3000
    seed: int = 0
    rate: float = 4.0  # requests per second, all kinds together
    share_doc_qa: float = 0.35  # shares of requests by kind (normalised)
    share_chat: float = 0.35
    share_oneshot: float = 0.30
    documents: int = 400  # size of the shared document pool
    doc_zipf: float = 1.25  # popularity skew of documents (Zipf exponent)
    doc_tokens: int = 10000
    question_tokens: int = 120
    chat_turns: float = 4.0  # mean turns per session (geometric)
    chat_first_tokens: int = 5000
    chat_turn_tokens: int = 400
    think_time_s: float = 60.0  # mean pause between an answer and the next turn
    oneshot_tokens: int = 8000
    output_tokens: int = 180
    block_size: int = DEFAULT_BLOCK_SIZE

    def validate(self) -> None:
        """Every knob within ``LIMITS`` (finite), and the expected block ids within ``MAX_BLOCK_IDS``."""
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            require(
                math.isfinite(value) and lo <= value <= hi, f"{name} must be in {lo:,}..{hi:,}, got {value}", field=name
            )
        shares = (self.share_doc_qa, self.share_chat, self.share_oneshot)
        require(sum(shares) > 0, "shares must be >= 0 and not all zero", field="shares")
        expected = self.expected_block_ids()
        require(
            expected <= MAX_BLOCK_IDS,
            f"about {expected:,.0f} block ids expected, at most {MAX_BLOCK_IDS:,}: "
            "lower requests or token lengths, or raise block_size",
            field="requests",
        )

    def expected_block_ids(self) -> float:
        """The mean number of block ids the trace will hold, from the knobs alone (before drawing).

        A chat session of geometric length with mean T re-sends its history: its requests average
        ``chat_first_tokens + (T - 1) (chat_turn_tokens + output_tokens)`` prompt tokens.
        """
        shares = np.array([self.share_doc_qa, self.share_chat, self.share_oneshot])
        prompt = np.array(
            [
                self.doc_tokens + self.question_tokens,
                self.chat_first_tokens + (self.chat_turns - 1) * (self.chat_turn_tokens + self.output_tokens),
                self.oneshot_tokens,
            ]
        )
        return self.requests * (float(shares @ prompt / shares.sum()) / self.block_size + 1)


MAX_GENERATED_REQUESTS = 200_000
"""The most requests one call may generate (drawn in a Python loop: about 4 s for the most)."""
MAX_TOKENS = 1_000_000
"""The largest mean token length of any part of a request."""
MAX_BLOCK_IDS = 10_000_000
"""The most block ids a generated trace may be expected to hold (about 550 MB while generating)."""
LIMITS: dict[str, tuple[float, float]] = {
    "requests": (1, MAX_GENERATED_REQUESTS),
    "seed": (0, MAX_SEED),
    "rate": (0.001, 10_000.0),
    "share_doc_qa": (0.0, 1_000.0),
    "share_chat": (0.0, 1_000.0),
    "share_oneshot": (0.0, 1_000.0),
    "documents": (1, 100_000),
    "doc_zipf": (0.0, 10.0),
    "doc_tokens": (1, MAX_TOKENS),
    "question_tokens": (1, MAX_TOKENS),
    "chat_turns": (1.0, 100.0),
    "chat_first_tokens": (1, MAX_TOKENS),
    "chat_turn_tokens": (1, MAX_TOKENS),
    "think_time_s": (0.0, 86_400.0),
    "oneshot_tokens": (1, MAX_TOKENS),
    "output_tokens": (1, MAX_TOKENS),
    "block_size": (1, 1 << 20),
}
"""Each knob's range, closed (the CLI's ``generate`` flags and the Trace page's inputs use these).

The rate is at least one request in 1,000 s so that 200,000 requests end within the trace
format's ten years; a document pool of 100,000 and 100 turns per chat are far past any lecture.
"""


class _BlockNamer:
    """Block ids in order of first appearance, with the chain rule built in.

    A shared block is named by (its content's key, its position): everything before it is the
    same content, so the chained hash would be the same too. Blocks unique to one request get
    fresh ids.
    """

    def __init__(self) -> None:
        self.shared: dict[tuple, int] = {}
        self.next_id = 0

    def _fresh(self, count: int) -> range:
        ids = range(self.next_id, self.next_id + count)
        self.next_id += count
        return ids

    def name(self, shared_key: tuple, full_shared: int, n_blocks: int) -> list[int]:
        ids = []
        for k in range(full_shared):
            block = self.shared.get((shared_key, k))
            if block is None:
                block = self.shared[(shared_key, k)] = self._fresh(1)[0]
            ids.append(block)
        ids.extend(self._fresh(n_blocks - full_shared))
        return ids


def _length(rng: np.random.Generator, mean: float) -> int:
    """A log-normal token count with the given mean (sigma 0.6), at least 1."""
    return max(1, round(rng.lognormal(math.log(mean) - 0.18, 0.6)))


def _pick(rng: np.random.Generator, cdf: list[float]) -> int:
    """An index drawn with the probabilities whose running sum is ``cdf``."""
    return min(bisect.bisect(cdf, rng.random()), len(cdf) - 1)


class _Generator:
    """Draws requests unit by unit: a document question, a one-shot prompt or a chat session.

    A request is (arrival ms, input tokens, output tokens, shared content key, number of full
    blocks of shared content, number of blocks). Blocks wholly inside the shared content (a
    document, a chat history) are reused by whoever sends the same content; the rest, including
    the block that straddles the end of the shared part, belong to this request alone.
    """

    def __init__(self, config: WorkloadConfig):
        self.c = config
        self.rng = np.random.default_rng(config.seed)
        popularity = 1.0 / np.arange(1, config.documents + 1) ** config.doc_zipf
        self.doc_cdf = np.cumsum(popularity / popularity.sum()).tolist()
        self.doc_len = [_length(self.rng, config.doc_tokens) for _ in range(config.documents)]
        self.sessions = itertools.count()

    def _request(self, t: float, n_in: int, shared_tokens: int, shared_key: tuple) -> tuple:
        n_out = _length(self.rng, self.c.output_tokens)
        bs = self.c.block_size
        return round(t * 1000), n_in, n_out, shared_key, min(shared_tokens, n_in) // bs, -(-n_in // bs)

    def doc_qa(self, t: float) -> list[tuple]:
        doc = _pick(self.rng, self.doc_cdf)
        n_in = self.doc_len[doc] + _length(self.rng, self.c.question_tokens)
        return [self._request(t, n_in, self.doc_len[doc], ("doc", doc))]

    def oneshot(self, t: float) -> list[tuple]:
        return [self._request(t, _length(self.rng, self.c.oneshot_tokens), 0, ())]

    def chat(self, t: float) -> list[tuple]:
        session, history, rows = ("chat", next(self.sessions)), 0, []
        for turn in range(int(self.rng.geometric(1.0 / self.c.chat_turns))):
            mean_new = self.c.chat_first_tokens if turn == 0 else self.c.chat_turn_tokens
            n_in = history + _length(self.rng, mean_new)
            # The whole prompt is history for the next turn, but its partial last block is not:
            # the answer appended to it makes it a different block next time.
            rows.append(self._request(t, n_in, n_in, session))
            history = n_in + rows[-1][2]
            t += rows[-1][2] * 0.03 + self.rng.exponential(self.c.think_time_s)
        return rows


def generate(config: WorkloadConfig = WorkloadConfig()) -> Trace:
    """A synthetic trace of ``config.requests`` requests; the same config gives the same trace."""
    config.validate()
    gen = _Generator(config)
    c = config
    unit_p = np.array([c.share_doc_qa, c.share_chat / c.chat_turns, c.share_oneshot])
    unit_p /= unit_p.sum()
    unit_rate = c.rate / (unit_p @ np.array([1.0, c.chat_turns, 1.0]))  # a session is several requests
    kinds, kind_cdf = (gen.doc_qa, gen.chat, gen.oneshot), np.cumsum(unit_p).tolist()
    rows: list[tuple] = []
    t, horizon = 0.0, np.inf
    # Chat turns land in the future, so draw until every request before the horizon is drawn.
    while t <= horizon:
        t += gen.rng.exponential(1.0 / unit_rate)
        rows.extend(kinds[_pick(gen.rng, kind_cdf)](t))
        if horizon == np.inf and len(rows) >= c.requests:
            horizon = np.partition([r[0] for r in rows], c.requests - 1)[c.requests - 1] / 1000
    rows.sort(key=lambda r: r[0])
    rows = rows[: c.requests]
    namer = _BlockNamer()
    return from_records(
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        [namer.name(*r[3:]) for r in rows],
        block_size=c.block_size,
        name=f"synthetic (seed {c.seed})",
    )
