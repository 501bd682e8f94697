"""Eviction hit curves: hit ratio against cache capacity for eight policies, on any trace."""

import pandas as pd
import streamlit as st

from kvviz.common import glossary
from kvviz.eviction.curves import TABLE1_CAPACITIES, curve_of, findings, paper_rows
from kvviz.eviction.figures import curve_table, sample_note, short_blocks
from kvviz.eviction.grid import AUTO_ABOVE, BOUND, INFINITE, ONLINE, POLICIES, chosen_rate, log_capacities
from kvviz.eviction.notes import TIE, lead_runs, leader_at
from kvviz.eviction.replay import coarsen
from kvviz.traces import fingerprint
from kvviz.traces.stats import is_mooncake_trace
from ui import eviction as cached
from ui import figures, frame
from ui.errors import user_errors
from ui.tables import download_csv
from ui.text import plain
from ui.traces import replay_trace_picker
from ui.work import confirm_cost

LADDER = [m * 10**k for k in range(7) for m in (1, 2, 5)]  # 1 … 5,000,000 blocks
FACTORS = [1, 2, 4, 8]
SAMPLING = ["auto", "exact", "10%", "1%"]
TIME_VIEWS = ["Leader vs LRU", "All policies"]


frame.header(
    "eviction",
    "How much KV reuse survives a finite cache: hit ratio against capacity for eight "
    "eviction policies, with Belady's optimum and the infinite cache as the bounds.",
)
EXPLAIN = (
    "Every request's blocks go through one cache of *C* blocks, in arrival order. A block already cached is "
    "a **hit**; a miss inserts it and, when the cache is full, the policy picks a victim. **Hit ratio = block "
    "hits / block accesses.** *Prefix mode* counts a hit only while every earlier block of the request hit too "
    "— what a prefix cache can actually reuse. **Belady** (evict the block needed farthest in the future) "
    "needs the future, so no real cache can beat it; the dotted **infinite cache** line counts every access "
    "whose block was seen before. The simulators match libCacheSim 0.3.5 hit for hit.\n\n"
    + "\n".join(f"- **{p.label}**: {p.rule}." for p in POLICIES.values())
)

trace = replay_trace_picker("eviction")

with st.sidebar:
    st.header("Cache")
    policies = st.multiselect(
        "Policies",
        ONLINE,
        default=["lru", "lfu", "length_aware", "s3fifo"],
        format_func=lambda p: POLICIES[p].label,
        key="eviction_policies",
        bind="query-params",
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
        help="Cache blocks made of 1, 2, 4 or 8 trace blocks (a coarse block is named by its last chained hash id).",
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


with user_errors():
    cache_trace = coarsen(trace, int(factor))
    key = fingerprint(cache_trace)
    replay = cached.prepared(key, cache_trace)
    top = max(int(low), min(int(high), replay.n_ids))  # a bigger cache than the trace's blocks never evicts
    capacities = log_capacities(int(low), top, int(points)) + (INFINITE,)
    rate = None if prefix else chosen_rate(sampling, replay.accesses)
    confirm_cost(cached.sweep_cost(replay.accesses, [*policies, BOUND], len(capacities), rate), "eviction_sweep")
    if rate is None:
        curve, note = curve_of(cached.run_sweep(key, [*policies, BOUND], capacities, cache_trace), prefix), None
    else:
        estimate = cached.sampled(key, (*policies, BOUND), capacities, rate, cache_trace)
        curve, note = estimate.curve, sample_note(estimate.rate, estimate.lru_error, estimate.unreliable)
found = findings(curve, policies)
runs = lead_runs(curve, policies) if len(policies) > 1 else ()

capped = f" (capped at the {replay.n_ids:,} distinct blocks: a bigger cache never evicts)" if top < high else ""
st.caption(
    f"**{plain(trace.name)}** · {replay.accesses:,} block accesses · {replay.n_ids:,} distinct blocks of "
    f"{cache_trace.block_size:,} tokens · capacities {low:,}–{top:,} blocks{capped}"
)
figures.figure(
    "eviction.fig_hit_curve",
    curve,
    prefix=prefix,
    paper=paper and bool(in_range),
    block_tokens=cache_trace.block_size,
    sample=note,
    runs=runs,
    key="eviction_curve",
)
if "s3fifo" in policies and low < 20:
    st.caption(
        "S3-FIFO caches nothing below 20 blocks: like libCacheSim, it never admits a block as large "
        "as its 10% small queue."
    )
if note:
    st.caption(cached.sample_caption(estimate, note))
elif prefix and sampling != "exact":
    st.caption("Prefix mode needs every block of a request, so the curve is exact.")
settings = {
    "policies": ",".join(policies),
    "capacities": f"{low}-{top} blocks, {points} points",
    "block size (tokens)": cache_trace.block_size,
    "prefix mode": bool(prefix),
    "sampling": "exact" if rate is None else f"SHARDS {rate:.4g}",
}
if box := frame.folded("The curve as a table", "eviction_table"):
    table = curve_table(curve)
    box.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(c, format="%.3f") for c in table.columns[1:]},
    )
download_csv(curve, "eviction", "hit curve", settings, trace=trace.name)
frame.explain(EXPLAIN)


@st.fragment
def over_time_view(finite: list, gap_at: float) -> None:
    """Hit ratio over time at one capacity: its controls rerun only this part of the page."""
    left, mid, right = st.columns([3, 2, 2])
    at = left.select_slider(
        "Capacity (blocks)",
        finite,
        value=gap_at if gap_at in finite else finite[len(finite) // 2],
        format_func=lambda c: f"{c:,}",
        key="eviction_at",
        bind="query-params",
        help="Starts where Belady is farthest ahead of the best online policy.",
    )
    lead = leader_at(curve, policies, at) if policies else TIE
    shown_mode = mid.segmented_control(
        "Policies shown",
        TIME_VIEWS,
        default=TIME_VIEWS[0],
        required=True,
        key="eviction_time_show",
        bind="query-params",
        help="The leader at this capacity, LRU and Belady; or every policy.",
    )
    smooth = right.slider(
        "Rolling window (time windows)",
        1,
        9,
        5,
        key="eviction_smooth",
        bind="query-params",
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


st.subheader("Over time, at one capacity")
over_time_view([c for c in capacities if c != INFINITE], found.widest_gap[0])


frame.what_to_notice(cached.notice(curve, policies, found, prefix, key, cache_trace))
with user_errors():
    table1 = pd.concat(
        [cached.policy_sweep(key, p, TABLE1_CAPACITIES, cache_trace) for p in ("lru", "lfu", "length_aware")]
    )
frame.paper_vs_sim(
    paper_rows(curve_of(table1, prefix), cache_trace.block_size, is_mooncake_trace(trace)),
    note="Mooncake measured Table 1 on **its own one-hour trace of 23,608 requests** (512-token blocks, one global "
    "pool), which you may not have: the right column replays *this* trace at the same capacities, so the two "
    "agree only as far as the workloads do. The public FAST'25 conversation trace is a different sample. On "
    "Mooncake's trace LRU won at 10K–50K blocks, which the authors put down to temporal locality; LengthAware "
    "follows the rule documented in docs/eviction.md (the paper gives none).",
)
