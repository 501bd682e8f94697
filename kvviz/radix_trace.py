"""A whole trace through SGLang's radix tree, totals only.

The step-through (``kvviz.radix_scenarios.replay``) keeps the tree, its text dump and a line of
prose after every step, which is what a lecture needs for a few hundred requests and far too much
for a trace of ten thousand. This runs the same rounds — the requests arriving in one
``round_ms`` window form one scheduler round, then rounds run until every request has finished —
on the same cache and scheduler (``ReplayConfig.build``), and keeps only the running totals, so it
reports exactly what the step-through's last row would. A request's hash ids are its tokens
(one id per block, as in ``script_from_trace``): the tree is block-granular, and every capacity
and count is in blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.errors import require
from kvviz.radix_scenarios import EVENT_TOTALS, ReplayConfig
from kvviz.strata_sched import Request
from kvviz.trace import Trace

MAX_DRAIN_ROUNDS = 200


@dataclass(frozen=True)
class TraceTotals:
    """The totals of a trace replay: the scheduler's counters, the event totals, the end state."""

    requests: int                 # requests replayed (those with at least one block)
    rounds: int
    totals: dict[str, int]        # kvviz.radix_scenarios.TOTAL_COLUMNS, as the step-through's last row
    finished: bool                # every request finished (False: memory stayed locked)

    @property
    def hit_ratio(self) -> float:
        """Device hit plus loaded-back blocks over prompt blocks (SGLang's cached_tokens share)."""
        t = self.totals
        return (t["device_hit"] + t["loaded_back"]) / t["prompt_tokens"] if t["prompt_tokens"] else 0.0


def _rounds(trace: Trace, n: int, round_ms: int) -> list[list[Request]]:
    """The arrivals of each non-empty ``round_ms`` window, as ``script_from_trace`` groups them."""
    ts = trace.requests["timestamp"].to_numpy()[:n]
    window = (ts - ts[0]) // round_ms if n else np.array([], dtype=np.int64)
    rounds: list[list[Request]] = []
    last = None
    for i in range(n):
        tokens = tuple(int(b) for b in trace.hash_ids(i))
        if not tokens:
            continue
        if rounds and window[i] == last:
            rounds[-1].append(Request(f"R{i + 1}", tokens))
        else:
            rounds.append([Request(f"R{i + 1}", tokens)])
        last = window[i]
    return rounds


def replay_trace(trace: Trace, config: ReplayConfig, n: int | None = None, round_ms: int = 1000) -> TraceTotals:
    """Replay the first ``n`` requests (default all) of ``trace`` and return the totals."""
    require(trace.has_block_ids, "this trace has no block ids (hash_ids), so it cannot be replayed in a "
            "radix tree", field="trace")
    require(round_ms >= 1, "the round length must be at least 1 ms", field="round_ms")
    n = trace.n_requests if n is None else n
    require(n >= 1, "replay at least one request", field="requests")
    n = min(n, trace.n_requests)
    cache, sched = config.build()
    seen = dict.fromkeys(dict.fromkeys(EVENT_TOTALS.values()), 0)
    arrivals = _rounds(trace, n, round_ms)
    rounds = drained = 0

    def count_events() -> None:
        for e in cache.events:
            if e["event"] in EVENT_TOTALS:
                seen[EVENT_TOTALS[e["event"]]] += e["tokens"]
        cache.events.clear()

    for batch in arrivals:
        sched.round(batch)
        count_events()
        rounds += 1
    while not sched.idle and drained <= MAX_DRAIN_ROUNDS:
        sched.round([])
        count_events()
        rounds, drained = rounds + 1, drained + 1
    gauges = dict(device_tokens=cache.total_size(), host_tokens=getattr(cache, "host_tokens", 0),
                  reserved=cache.reserved, evictable=cache.evictable_size(), protected=cache.protected_size(),
                  nodes=cache.n_nodes, in_flight_nodes=cache.n_in_flight)
    return TraceTotals(sum(len(b) for b in arrivals), rounds, {**gauges, **sched.totals, **seen}, sched.idle)
