"""The Eviction page's controls: the cache's (sidebar) and the over-time view's, which reruns alone."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from kvviz.common import glossary
from kvviz.eviction.curves import TABLE1_CAPACITIES
from kvviz.eviction.figures import short_blocks
from kvviz.eviction.grid import AUTO_ABOVE, BOUND, INFINITE, ONLINE, POLICIES
from kvviz.eviction.notes import TIE, leader_at
from kvviz.traces.model import Trace
from ui.eviction import cached
from ui.kit import figures, links

LADDER = [m * 10**k for k in range(7) for m in (1, 2, 5)]  # 1 … 5,000,000 blocks
FACTORS = [1, 2, 4, 8]
SAMPLING = ["auto", "exact", "10%", "1%"]
TIME_VIEWS = ["Leader vs LRU", "All policies"]
POLICY_WORDS = {p: POLICIES[p].label for p in ONLINE}
"""The online policies by their names (LRU, S3-FIFO): the URL carries these; a link with the codes opens too."""


@dataclass(frozen=True)
class CacheControls:
    """The sidebar's choices: policies, capacity range and points, cache block (in trace blocks),
    prefix mode, the paper's points (and which of its capacities fall in the range), sampling."""

    policies: list[str]
    low: int
    high: int
    points: int
    factor: int
    prefix: bool
    paper: bool
    in_range: list
    sampling: str


def cache_controls(trace: Trace) -> CacheControls:
    """The sidebar's Cache section, every control in the URL."""
    with st.sidebar:
        st.header("Cache")
        policies = links.worded(
            st.multiselect,
            "Policies",
            POLICY_WORDS,
            "eviction_policies",
            default=["lru", "lfu", "length_aware", "s3fifo"],
            help="Belady and the infinite cache are always drawn.",
        )
        low, high = st.select_slider(
            "Capacity range (blocks)",
            LADDER,
            value=(100, 100_000),
            format_func=short_blocks,
            key="eviction_range",
            bind="query-params",
        )
        points = st.slider("Points on the curve", 4, 40, 20, key="eviction_points", bind="query-params")
        factor = st.segmented_control(
            "Cache block size (tokens)",
            FACTORS,
            default=1,
            required=True,
            format_func=lambda f: str(f * trace.block_size),
            key="eviction_block",
            bind="query-params",
            help="Cache blocks made of 1, 2, 4 or 8 trace blocks (a coarse block is named by its last "
            "chained hash id).",
        )
        prefix = st.toggle(
            "Prefix mode",
            key="eviction_prefix",
            bind="query-params",
            help="Count a hit only while every earlier block of the request hit too.",
        )
        in_range = [c for c in TABLE1_CAPACITIES if c != INFINITE and low <= c <= high]
        paper = st.toggle(
            "Show Mooncake Table 1",
            value=True,
            key="eviction_paper",
            bind="query-params",
            disabled=not in_range,
            help="Table 1's points (1K–100K blocks) as open diamonds."
            + ("" if in_range else " Off: none of them falls inside the capacity range."),
        )
        sampling = st.segmented_control(
            "Sampling",
            SAMPLING,
            default="auto",
            required=True,
            key="eviction_sample",
            bind="query-params",
            disabled=bool(prefix),
            help=f"SHARDS spatial sampling of the blocks; auto samples traces over "
            f"{AUTO_ABOVE:,} accesses. LRU always stays exact."
            + (" Off in prefix mode: it needs every block of a request." if prefix else "")
            + "\n\n"
            + glossary.define("SHARDS"),
        )

    return CacheControls(policies, low, high, points, factor, prefix, paper, in_range, sampling)


@links.view_fragment("eviction")
def over_time_view(
    curve: pd.DataFrame, policies: list[str], key: str, prefix: bool, cache_trace: Trace, finite: list, gap_at: float
) -> None:
    """Hit ratio over time at one capacity of ``finite`` (first where ``gap_at``, Belady's widest lead),
    for the curve's policies on the trace replayed (``key`` its fingerprint): its controls rerun only
    this part of the page."""
    left, mid, right = st.columns([3, 2, 2])
    at = left.select_slider(
        "Capacity (blocks)",
        finite,
        value=gap_at if gap_at in finite else finite[len(finite) // 2],
        format_func=lambda c: f"{c:,}",
        key="eviction_at",
        **links.PART,
        help="Starts where Belady is farthest ahead of the best online policy.",
    )
    lead = leader_at(curve, policies, at) if policies else TIE
    shown_mode = mid.segmented_control(
        "Policies shown",
        TIME_VIEWS,
        default=TIME_VIEWS[0],
        required=True,
        key="eviction_time_show",
        **links.PART,
        help="The leader at this capacity, LRU and Belady; or every policy.",
    )
    smooth = right.slider(
        "Rolling window (time windows)",
        1,
        9,
        5,
        key="eviction_smooth",
        **links.PART,
        help="Each point sums the hits and accesses of the last windows: less noise, same totals.",
    )
    if shown_mode == TIME_VIEWS[0]:
        time_policies = list(dict.fromkeys([*(p for p in (lead,) if p != TIE), "lru", BOUND]))
    else:
        time_policies = [*policies, BOUND]
    with st.spinner("Replaying at one capacity…"):
        windows = {p: cached.over_time(key, p, at, prefix, cache_trace) for p in time_policies}
    figures.figure("eviction.fig_over_time", windows, at, prefix=prefix, smooth=int(smooth), key="eviction_time")
    if shown_mode == TIME_VIEWS[0]:
        st.caption(
            f"At {int(at):,} blocks "
            + (
                "the online policies tie within 0.001, so LRU is shown with Belady."
                if lead == TIE
                else f"the leader is **{POLICIES[lead].label}**."
            )
        )
