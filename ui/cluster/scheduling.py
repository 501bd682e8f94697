"""The Mooncake cluster page's Scheduling view: one trace replayed through four prefill schedulers,
KVCache-centric (the Conductor's Algorithm 1: arXiv v3 §6.1, FAST'25 §4.1) among them, each with a
decode pool and, when asked, rejection of the requests predicted to miss an SLO."""

from __future__ import annotations

import streamlit as st

from kvviz.common import hardware as hw
from kvviz.mooncake import conductor
from kvviz.mooncake.notes import scheduling_notes, scheduling_paper_note
from kvviz.traces import Trace
from ui.cluster.controls import slo_sliders
from ui.kit import figures, frame, links
from ui.kit.errors import user_errors
from ui.kit.tables import turned_table
from ui.kit.text import plain
from ui.kit.traces import HASH_TRACE, trace_picker
from ui.kit.work import confirm_cost


@st.cache_data(
    max_entries=16, ttl="1h", show_spinner="Replaying the trace through four schedulers…", hash_funcs=HASH_TRACE
)
def run_schedulers(trace: Trace, config: conductor.ConductorConfig):
    """All four schedulers over one trace (cached on the trace's content)."""
    return conductor.compare(trace, config), conductor.offered_load(trace, config)


def view() -> None:
    """The Scheduling view: its trace and prefill pool in the sidebar, then the four schedulers compared."""
    trace = trace_picker("cluster")
    if trace is None:
        st.info("Load a trace that lists each request's block ids to compare schedulers.")
        links.stop()
    if not trace.has_block_ids:
        st.warning(
            "This trace has no block ids, so prefix reuse cannot be simulated. It still drives the Overload "
            "view (timestamps and lengths); load a trace that lists each request's block ids for scheduling.",
            icon=":material/warning:",
        )
        links.stop()
    with st.sidebar:
        cfg = {**prefill_controls(trace), **admission_controls()}
    with user_errors():
        config = conductor.ConductorConfig(**cfg)
        config.validate()
        confirm_cost(conductor.cost(trace, config, len(conductor.SCHEDULERS)), "cluster_schedule")
        results, offered = run_schedulers(trace, config)
    show(trace, config, cfg, results, offered)


def prefill_controls(trace: Trace) -> dict:
    """The sidebar's Prefill pool section: instances, their caches, Algorithm 1's knobs, the speed-up."""
    st.header("Prefill pool")
    d, model = conductor.ConductorConfig(), conductor.CLUSTER_MODEL
    block_mib = trace.block_size * model.kv_bytes_per_token / 2**20
    return dict(
        instances=st.slider("Prefill instances", 1, 32, d.instances, key="cluster_instances", bind="query-params"),
        cache_blocks=st.number_input(
            "Local cache per instance (blocks)",
            1,
            1_000_000,
            d.cache_blocks,
            500,
            key="cluster_cache",
            bind="query-params",
            help=f"A {trace.block_size}-token block of {hw.MODEL_TITLES[model.name]} is {block_mib:,.0f} MiB.",
        ),
        balancing_threshold=st.slider(
            "Balancing threshold (prefix ratio)",
            1.0,
            4.0,
            d.balancing_threshold,
            0.05,
            key="cluster_balance",
            bind="query-params",
            help="KVCache-centric only: an instance holding part of the longest "
            "prefix fetches it when it is at least this many times its own. "
            "*What to notice* says how often that happened here, and which "
            "thresholds give the same run.",
        ),
        bandwidth_gbps=st.select_slider(
            "Fetch bandwidth (Gb/s)",
            [1, 3, 10, 25, 100, 200, 400, 800],
            int(d.bandwidth_gbps),
            key="cluster_bw",
            bind="query-params",
        ),
        speedup=st.slider("Replay speed-up", 0.5, 10.0, 3.0, 0.5, key="cluster_sched_speedup", bind="query-params"),
    )


def admission_controls() -> dict:
    """The sidebar's Decode pool and SLOs section: decode instances, rejection and the two SLOs."""
    st.header("Decode pool and SLOs")
    d = conductor.ConductorConfig()
    return dict(
        decode_instances=st.slider(
            "Decode instances", 1, 32, d.decode_instances, key="cluster_decode", bind="query-params"
        ),
        reject=st.toggle(
            "Reject requests that would miss an SLO",
            False,
            key="cluster_reject",
            bind="query-params",
            help="Algorithm 1 turns a request away on arrival (HTTP 429) when its predicted TTFT or its predicted "
            "TBT on the decode instance it would join misses the SLO. Off: every request is served, and the "
            "SLOs only decide which count as goodput.",
        ),
        **slo_sliders(
            "cluster_sched_",
            d.ttft_slo_s,
            d.tbt_slo_s,
            30,
            " A decode step reads the weights and every admitted prompt's KV, so TBT grows with the batch and its KV.",
        ),
    )


def show(
    trace: Trace,
    config: conductor.ConductorConfig,
    cfg: dict,
    results: dict[str, conductor.ScheduleResult],
    offered: float,
) -> None:
    """The view's body: Fig. 8 beside this run, what happened to the requests, TTFTs, reuse and notes."""
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(
            f"**{plain(trace.name)}**: {trace.n_requests:,} requests; prefill work without reuse is "
            f"{offered:.0%} of the pool's capacity at this speed-up."
        )
        frame.terms("TTFT", "TBT", "SLO")
    figures.figure("cluster.fig_fig8", results, key="cluster_fig8")
    figures.figure("cluster.fig_admission", results, key="cluster_admission")
    frame.explain(
        f"Each prefill instance keeps its own cache of {trace.block_size}-token KV blocks, SGLang's radix cache "
        "evicting the least recently used leaves (the same cache the Tiers page's routers run), so a request's "
        "reusable prefix there is its run of leading blocks found in that cache. "
        "**Algorithm 1** costs every instance: if the longest prefix anywhere is at least *threshold* × its own, "
        "TTFT = transfer + queue + prefill of the rest of the prompt; otherwise queue + prefill from its own prefix. "
        "The smallest TTFT wins and fetched blocks stay there. KV exists only once the prefill computing it ends: "
        "until then a fetch waits for it, or the instance recomputes if that is sooner. The decode instance is "
        "the one whose predicted TBT stays lowest with the request counted on it; with **rejection** on, a "
        "request whose predicted TTFT or TBT misses its SLO is turned away and takes no queue, cache or slot."
    )
    figures.figure("cluster.fig_ttft_ecdf", results, key="cluster_ecdf")
    figures.figure("cluster.fig_schedule_bars", results, key="cluster_bars")
    turned_table(conductor.display_table(results), "Scheduler", "cluster", "scheduler table", cfg, trace=trace.name)
    frame.what_to_notice(scheduling_notes(results, config, trace.block_size))
    frame.paper_vs_sim(conductor.paper_rows(results), note=scheduling_paper_note(results))
