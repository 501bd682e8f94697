"""Summary statistics of a request trace (what Mooncake v3 §4 reports about its own trace).

The block statistics assume an infinite cache: an access hits when its block was seen before.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from kvviz.common import paper
from kvviz.traces.model import Trace


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


_COUNT_SLICE = 1 << 26


def block_counts(blocks: np.ndarray, ordered: bool = True) -> np.ndarray:
    """Accesses per distinct block, most popular first unless not ``ordered`` (a histogram when
    the ids are dense, as ingested traces' are: linear time instead of a sort of every access)."""
    if len(blocks) and blocks.min() >= 0 and blocks.max() < len(blocks) + 1024:  # histogram ≤ 8 B per access
        size = int(blocks.max()) + 1
        counts = np.zeros(size, np.int64)
        for start in range(0, len(blocks), _COUNT_SLICE):  # bincount copies its input to int64: a slice at a time
            counts += np.bincount(blocks[start : start + _COUNT_SLICE], minlength=size)
        counts = counts[counts > 0]
    else:
        _, counts = np.unique(blocks, return_counts=True)
    return np.sort(counts)[::-1] if ordered else counts


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
        return TraceStats(
            **base,
            block_accesses=None,
            distinct_blocks=None,
            infinite_cache_hit_fraction=None,
            never_reused_block_fraction=None,
            top1pct_hit_share=None,
        )
    counts = block_counts(trace.blocks, ordered=False)
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
        top1pct_hit_share=float(np.partition(hits, distinct - top)[distinct - top :].sum()) / total_hits
        if total_hits
        else 0.0,
    )


# Mooncake v3 §4 on its released 23,608-request trace, and the lecture notes' synthetic load
# (lecture 9 §2.2, code 03 demo 1): (label, TraceStats field, what is reported, bound, kind)
# where kind "about" compares within 15% and "above" checks the value exceeds the bound.
PAPER_REFERENCE: tuple[tuple[str, str, str, float, str], ...] = (
    ("mean input tokens", "mean_input_tokens", "8,590 (Mooncake trace, as the notes quote it)", 8590.0, "about"),
    ("mean output tokens", "mean_output_tokens", "182 (Mooncake trace)", 182.0, "about"),
    (
        "reusable block accesses, infinite cache",
        "infinite_cache_hit_fraction",
        "~55% (Mooncake trace); ~52% (notes' synthetic load)",
        0.55,
        "about",
    ),
    (
        "distinct blocks never reused",
        "never_reused_block_fraction",
        "more than half (Mooncake); 84% (notes' synthetic load)",
        0.5,
        "above",
    ),
    ("hits taken by the top 1% of blocks", "top1pct_hit_share", "more than half (notes' synthetic load)", 0.5, "above"),
)


MOONCAKE_TRACE = (23_608, 512)
"""Mooncake's released trace: its requests and block size (tokens). Only that trace is graded
against the paper's numbers; any other is described beside them."""


def is_mooncake_trace(trace: Trace) -> bool:
    """Whether ``trace`` is Mooncake's own trace (its request count and block size, with block ids)."""
    return trace.has_block_ids and (trace.n_requests, trace.block_size) == MOONCAKE_TRACE


def paper_rows(stats: TraceStats, graded: bool) -> list[dict]:
    """The page's paper-vs-trace rows (kvviz.common.paper). ``graded`` (the trace is the one the
    paper measured): "about" within 15% of the paper's number, "above" a stated condition. Any
    other trace is described beside the paper's numbers, not graded. Block statistics of a trace
    without block ids have no row."""
    rows = []
    for label, attr, reported, bound, kind in PAPER_REFERENCE:
        value = getattr(stats, attr)
        if value is None:
            continue
        shown = f"{value:.1%}" if attr.endswith(("fraction", "share")) else f"{value:,.0f}"
        if not graded:
            rows.append(paper.beside(label, reported, shown, "another trace than the one the paper measured"))
        elif kind == "above":
            rows.append(paper.check(label, reported, shown, value > bound, f"more than {bound:.0%}"))
        else:
            rows.append(paper.close(label, reported, shown, (bound, value), 0.15))
    return rows


def trace_notes(stats: TraceStats) -> list[str]:
    """The Trace page's "What to notice", from this trace's numbers, about the charts drawn for it:
    arrivals and lengths always, block popularity and reuse only when the trace has block ids."""
    notes = [_arrival_note(stats), _length_note(stats)]
    if stats.block_accesses is None:
        return notes + [
            "This trace has no block ids, so it cannot say which prompts share a prefix: the block "
            "popularity and reuse charts, and every cache replay, need them."
        ]
    never, top = stats.never_reused_block_fraction, stats.top1pct_hit_share
    most = "Most" if never > 0.5 else "Some"
    return notes + [
        f"{most} distinct blocks are used once ({never:.0%} of {stats.distinct_blocks:,}); the most popular 1% "
        f"take {top:.0%} of the hits: the head of the popularity chart.",
        f"The infinite-cache line ({stats.infinite_cache_hit_fraction:.1%} of accesses) is the ceiling for every "
        "eviction policy: no cache can hit a block's first access.",
        "Where the LRU curve flattens, more capacity buys little; where it rises in steps, a group of requests "
        "re-reads the same history.",
    ]


def _arrival_note(stats: TraceStats) -> str:
    rate = stats.requests / stats.time_span_s if stats.time_span_s > 0 else None
    pace = f", {rate:,.3g} a second on average" if rate is not None else ", all at the same moment"
    return f"{stats.requests:,} requests over {stats.time_span_s:,.0f} s{pace}: the arrivals chart shows their bursts."


def _length_note(stats: TraceStats) -> str:
    mean_in, median_in = stats.mean_input_tokens, stats.median_input_tokens
    tail = " (a tail of long prompts pulls the mean above the median)" if mean_in > 1.25 * median_in else ""
    ratio = mean_in / stats.mean_output_tokens if stats.mean_output_tokens else None
    per = f": {ratio:,.3g} prompt tokens for every output token" if ratio is not None else ""
    return (
        f"Prompts average {mean_in:,.0f} tokens, median {median_in:,.0f}{tail}; outputs average "
        f"{stats.mean_output_tokens:,.0f}{per}."
    )
