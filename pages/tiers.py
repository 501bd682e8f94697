"""Tiers: a trace replayed through GPU memory, host DRAM and storage, answered in TTFT and dollars."""

import streamlit as st

from kvviz.common import budget
from kvviz.common import hardware as hw
from kvviz.tiers.config import GIB, weight_bytes
from kvviz.tiers.replay import cost
from kvviz.traces import fingerprint
from ui.kit import figures, frame
from ui.kit.errors import user_errors
from ui.kit.traces import replay_trace_picker
from ui.kit.work import confirm_cost, confirm_memory
from ui.prefix_cache.views import prepared
from ui.tiers import cached as tiers
from ui.tiers import plan as tiers_plan
from ui.tiers import routers as tiers_routers

frame.header(
    "tiers",
    "How much GPU memory, host DRAM and SSD a workload needs: its own trace replayed through a tiered "
    "prefix cache, answered in hits, time to first token, throughput and dollars.",
)
glance = st.container()  # the routers' answer, filled once it is computed below: seen without scrolling
frame.explain(
    "Each instance keeps KV in three tiers, the way SGLang's HiCache does: **GPU memory** (what the GPUs' HBM "
    "holds after the model's weights), **host DRAM**, and **storage** (a local SSD, or one remote pool for the "
    "cluster). A request reuses the longest cached prefix of its prompt: the part in GPU memory is free, the "
    "part in DRAM is **loaded layer by layer while the model computes**, the part in storage is **read while the "
    "request waits** for a GPU (what has not arrived when it starts is recomputed), and the rest is computed. "
    "Requests queue on the instances in the trace's own arrival order, so the time to first token (TTFT) "
    "includes waiting. Beside every number stand the same trace with **no cache** and with **GPU memory "
    "only**, so you see what each tier buys."
)

trace = replay_trace_picker("tiers")
key = fingerprint(trace)
chosen, target = tiers.deployment()
with user_errors():
    config = tiers.deployed(chosen)
    confirm_memory(budget.replay_memory(budget.TIERED, trace), "tiers_replay")
    confirm_cost(cost(prepared(key, trace), 2), "tiers_replay")
    result = tiers.replayed(key, chosen, trace)

weights = config.replicas * weight_bytes(config.model) / GIB
gpu_name, model_name = hw.GPU_TITLES[config.gpu.name], hw.MODEL_TITLES[config.model.name]
st.caption(
    f"**GPU memory for KV: {config.hbm_for_kv_gib:,.1f} GiB per instance**: {config.gpus} × {gpu_name} "
    f"({config.gpu.hbm_gb:g} GB each) × {config.kv_fraction:.0%} reserved, less {config.replicas} replica(s) of "
    f"{model_name}'s weights ({weights:,.1f} GiB). One {trace.block_size}-token block of KV is "
    f"{trace.block_size * config.model.kv_bytes_per_token / 2**20:,.2f} MiB."
)

s = result.summary()
with st.container():  # always drawn, so the elements below keep their places whether or not there is a warning
    for warning in (w for w in s["warnings"] if w not in config.warnings()):  # those are beside their control
        st.warning(warning[0].upper() + warning[1:] + ".", icon=":material/warning:")
hits, storage = s["hit_blocks"], tiers.STORAGE_NAMES[config.storage]
with st.container(horizontal=True):
    st.metric(
        "Hit ratio", f"{s['hit_ratio']:.1%}", border=True, help=f"An infinite cache: {s['ceiling_hit_ratio']:.1%}."
    )
    for name, tier in (("GPU memory", "gpu"), ("host DRAM", "dram"), (storage, config.storage)):
        st.metric(f"Hits from {name}", f"{hits[tier] / s['accesses']:.1%}", border=True, help=f"{hits[tier]:,} blocks")
with st.container(horizontal=True):
    ttft, none = s["ttft_s"], s["ttft_no_cache_s"]
    st.metric(
        "TTFT p90", f"{ttft['p90']:.3g} s", f"{ttft['p90'] - none['p90']:+.3g} s vs no cache", "inverse", border=True
    )
    st.metric("Prefill GPU-s saved", f"{s['prefill_gpu_s_saved']:,.0f}", border=True, help="Against no cache.")
    st.metric(
        "Prefill per GPU", f"{s['tokens_per_gpu_s']:,.0f} tok/s", border=True, help="Input tokens per busy GPU-second."
    )
    st.metric("Cost", f"${s['cost_per_hour']:,.2f}/h", border=True, help=tiers.cost_help(config))
    st.metric(
        "Per million input tokens", f"${s['cost_per_million_input_tokens']:,.3f}", border=True,
        help="The cluster's cost per hour over the input tokens the trace brings in an hour. With every GPU "
        f"prefilling all the time it would be ${s['cost_per_million_input_tokens_fully_busy']:,.3f}.",
    )  # fmt: skip

quantiles = tiers.ttft_quantiles(result)
figures.figure(
    "tiers.fig_ttft_cdf",
    quantiles,
    tiers.QUANTILES,
    target,
    cache_key=f"{key}|{tiers.unpriced(chosen)}|{target}",
    key="tiers_cdf",
)
# The tables under the figure, as wide as the page: beside it, projector fonts pushed their numbers out of sight.
st.markdown("**Time to first token (s)**")
st.dataframe(tiers.ttft_table(s), width="stretch", column_config=tiers.TTFT_COLUMNS)
st.markdown("**Where each request's prompt came from**")
st.dataframe(tiers.token_table(result, storage), width="stretch", hide_index=True, column_config=tiers.TOKEN_COLUMNS)
for note in tiers.unchanged_notes(result, prepared(key, trace).n_nodes, trace.block_size, storage):
    st.caption(note)

frame.what_to_notice(tiers.notice(s, config, storage))
with st.expander("What is simulated, what is not, and every assumption"):
    st.markdown("\n".join(f"- {line}" for line in tiers.assumptions(config, target)))

st.subheader("What to buy")
with user_errors():
    start = tiers_plan.answer(key, trace, chosen, target)  # a long search asks first, and stops the page there

st.subheader("Which router, how many instances")
with user_errors():
    routed = tiers_routers.section(key, trace, chosen, target, start)
if routed:
    router_notes, met = routed
    (glance.success if met else glance.warning)(router_notes[0], icon=":material/hub:")
    frame.what_to_notice(router_notes)

st.subheader("Each tier's capacity, and the mixes for the instances as set")
with user_errors():
    tiers_plan.section(key, trace, chosen, target)
