"""A whole trace through SGLang's radix tree, totals only.

The step-through (``kvviz.radix.scenarios.replay``) keeps the tree, its text dump and a line of
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

from kvviz.radix.scenarios import EVENT_TOTALS, ReplayConfig, count_events, gauges, trace_rounds
from kvviz.strata.scheduler import Request
from kvviz.traces import Trace

MAX_DRAIN_ROUNDS = 200


@dataclass(frozen=True)
class TraceTotals:
    """The totals of a trace replay: the scheduler's counters, the event totals, the end state."""

    requests: int                 # requests replayed (those with at least one block)
    rounds: int
    totals: dict[str, int]        # kvviz.radix.scenarios.TOTAL_COLUMNS, as the step-through's last row
    finished: bool                # every request finished (False: memory stayed locked)

    @property
    def hit_ratio(self) -> float:
        """Device hit plus loaded-back blocks over prompt blocks (SGLang's cached_tokens share)."""
        t = self.totals
        return (t["device_hit"] + t["loaded_back"]) / t["prompt_tokens"] if t["prompt_tokens"] else 0.0


def replay_trace(trace: Trace, config: ReplayConfig, n: int | None = None, round_ms: int = 1000) -> TraceTotals:
    """Replay the first ``n`` requests (default all) of ``trace`` and return the totals."""
    arrivals = [[Request(r.name, r.tokens) for r in specs]
                for specs in trace_rounds(trace, trace.n_requests if n is None else n, round_ms)]
    cache, sched = config.build()
    seen = dict.fromkeys(EVENT_TOTALS.values(), 0)
    rounds = drained = 0
    for batch in arrivals:
        sched.round(batch)
        count_events(cache, seen)
        rounds += 1
    while not sched.idle and drained <= MAX_DRAIN_ROUNDS:
        sched.round([])
        count_events(cache, seen)
        rounds, drained = rounds + 1, drained + 1
    return TraceTotals(sum(len(b) for b in arrivals), rounds, {**gauges(cache), **sched.totals, **seen}, sched.idle)
