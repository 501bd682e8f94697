"""Summary statistics of a request trace (what Mooncake v3 §4 reports about its own trace).

The block statistics assume an infinite cache: an access hits when its block was seen before.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from kvviz.trace import Trace


@dataclass(frozen=True)
class TraceStats:
    requests: int
    time_span_s: float
    mean_input_tokens: float
    median_input_tokens: float
    mean_output_tokens: float
    median_output_tokens: float
    block_accesses: int | None
    distinct_blocks: int | None
    infinite_cache_hit_fraction: float | None
    never_reused_block_fraction: float | None
    top1pct_hit_share: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def block_counts(blocks: np.ndarray) -> np.ndarray:
    """Accesses per distinct block, most popular first."""
    _, counts = np.unique(blocks, return_counts=True)
    return np.sort(counts)[::-1]


def trace_stats(trace: Trace) -> TraceStats:
    """Requests, time span, lengths and (when the trace has block ids) infinite-cache reuse."""
    req = trace.requests
    ts = req["timestamp"].to_numpy()
    base = dict(
        requests=trace.n_requests,
        time_span_s=float(ts.max() - ts.min()) / 1000 if len(ts) else 0.0,
        mean_input_tokens=float(req["input_length"].mean()) if len(req) else 0.0,
        median_input_tokens=float(req["input_length"].median()) if len(req) else 0.0,
        mean_output_tokens=float(req["output_length"].mean()) if len(req) else 0.0,
        median_output_tokens=float(req["output_length"].median()) if len(req) else 0.0,
    )
    if not trace.has_block_ids or len(trace.blocks) == 0:
        return TraceStats(**base, block_accesses=None, distinct_blocks=None,
                          infinite_cache_hit_fraction=None, never_reused_block_fraction=None,
                          top1pct_hit_share=None)
    counts = block_counts(trace.blocks)
    accesses, distinct = int(counts.sum()), len(counts)
    hits = counts - 1
    top = max(1, math.ceil(0.01 * distinct))
    total_hits = int(hits.sum())
    return TraceStats(
        **base,
        block_accesses=accesses,
        distinct_blocks=distinct,
        infinite_cache_hit_fraction=total_hits / accesses,
        never_reused_block_fraction=float(np.count_nonzero(counts == 1)) / distinct,
        top1pct_hit_share=float(hits[:top].sum()) / total_hits if total_hits else 0.0,
    )
