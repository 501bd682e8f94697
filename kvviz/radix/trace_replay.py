"""A trace's requests through SGLang's radix tree: as a script to step through, or totals only.

A request's hash ids are its tokens (one id per block): the tree is block-granular, and every
capacity and count is in blocks. Output tokens have no ids in a trace, so a request's prompt is
inserted twice, after prefill and at finish, as SGLang's scheduler does for a request that decodes;
a request whose output is a single token finishes at prefill and is inserted once. The requests
arriving in one ``round_ms`` window form one scheduler round. ``script_from_trace`` makes the first
requests a script for the step-through (``kvviz.radix.replay.replay``), which keeps the tree, its
text dump and a line of prose after every step: what a lecture needs for a few hundred requests, and
far too much for a trace of ten thousand. ``replay_trace`` runs the same rounds, then rounds until
every request has finished, on the same cache and scheduler (``ReplayConfig.build``), and keeps only
the running totals, so it reports exactly what the step-through's last row would.

It is a serving engine's run, not a hit-ratio curve: requests wait in rounds, hold their locks
while they run, always compute their last prompt token, may be deferred (Strata) and may load
from a host tier (HiCache). A whole trace's hit ratio at every capacity, requests completing one
by one with none of that, is ``kvviz.prefix_cache.replay``'s compiled replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.common.errors import require
from kvviz.radix.replay import EVENT_TOTALS, ReplayConfig, count_events, gauges
from kvviz.radix.request import Request
from kvviz.radix.script import Op, Script, checked
from kvviz.traces import Trace


def trace_rounds(trace: Trace, n: int, round_ms: int = 1000) -> list[list[Request]]:
    """The first ``n`` requests of a trace, block ids as tokens, grouped by arrival in windows of
    ``round_ms`` (one list per non-empty window; requests without blocks are left out)."""
    require(
        trace.has_block_ids,
        "this trace has no block ids (hash_ids), so it cannot be replayed in a radix tree",
        field="trace",
    )
    require(n >= 1, "replay at least one request", field="requests")
    require(round_ms >= 1, "the round length must be at least 1 ms", field="round_ms")
    ts = trace.requests["timestamp"].to_numpy()[:n]
    window = (ts - ts[0]) // round_ms if len(ts) else ts
    outputs = trace.requests["output_length"].to_numpy()[:n]
    rounds: list[list[Request]] = []
    for i in range(len(ts)):
        request = Request(f"R{i + 1}", tuple(int(b) for b in trace.hash_ids(i)), generates=int(outputs[i]))
        if not request.tokens:
            continue
        if rounds and window[i] == window[i - 1]:
            rounds[-1].append(request)
        else:
            rounds.append([request])
    return rounds


def script_from_trace(trace: Trace, n: int, round_ms: int = 1000) -> Script:
    """The first ``n`` requests of a trace, block ids as tokens; arrivals in the same
    ``round_ms`` window form one step (empty windows are skipped)."""
    ops = tuple(Op("requests", tuple(wave)) for wave in trace_rounds(trace, n, round_ms))
    return checked(Script(f"{trace.name}: first {min(n, trace.n_requests)} requests", ops))


MAX_DRAIN_ROUNDS = 200


@dataclass(frozen=True)
class TraceTotals:
    """The totals of a trace replay: the scheduler's counters, the event totals, the end state."""

    requests: int  # requests replayed (those with at least one block)
    rounds: int
    totals: dict[str, int]  # kvviz.radix.replay.TOTAL_COLUMNS, as the step-through's last row
    finished: bool  # every request finished (False: memory stayed locked)

    @property
    def hit_ratio(self) -> float:
        """Device hit plus loaded-back blocks over prompt blocks (SGLang's cached_tokens share)."""
        t = self.totals
        return (t["device_hit"] + t["loaded_back"]) / t["prompt_tokens"] if t["prompt_tokens"] else 0.0


def replay_trace(trace: Trace, config: ReplayConfig, n: int | None = None, round_ms: int = 1000) -> TraceTotals:
    """Replay the first ``n`` requests (default all) of ``trace`` and return the totals."""
    arrivals = trace_rounds(trace, trace.n_requests if n is None else n, round_ms)
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
