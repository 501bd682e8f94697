"""Eviction hit curves: hit ratio against cache capacity for eight policies, on any trace."""

from dataclasses import astuple

import pandas as pd
import streamlit as st

from kvviz.common import budget
from kvviz.eviction.curves import TABLE1_CAPACITIES, curve_of, findings, paper_rows
from kvviz.eviction.figures import curve_table, sample_note
from kvviz.eviction.grid import BOUND, INFINITE, POLICIES, chosen_rate, log_capacities
from kvviz.eviction.notes import lead_runs
from kvviz.eviction.replay import coarsen
from kvviz.traces import fingerprint
from kvviz.traces.stats import is_mooncake_trace
from ui.eviction import cached
from ui.eviction.controls import cache_controls, over_time_view
from ui.kit import figures, frame
from ui.kit.errors import user_errors
from ui.kit.tables import download_csv
from ui.kit.text import plain
from ui.kit.traces import replay_trace_picker
from ui.kit.work import confirm_cost, confirm_memory

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

policies, low, high, points, factor, prefix, paper, in_range, sampling = astuple(cache_controls(trace))

with user_errors():
    cache_trace = coarsen(trace, int(factor))
    key = fingerprint(cache_trace)
    sweeps = (len(policies) + 1) * (int(points) + 1)
    confirm_memory(budget.replay_memory(budget.EVICTION, cache_trace, sweeps), "eviction_sweep")
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


st.subheader("Over time, at one capacity")
over_time_view(curve, policies, key, prefix, cache_trace, [c for c in capacities if c != INFINITE], found.widest_gap[0])


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
    "follows the rule given with the policies above (the paper gives none).",
)
