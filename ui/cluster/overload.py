"""The Mooncake cluster page's Overload view: admission policies under overload (arXiv v3 §7),
with prefills placed by load balancing or, on a trace with block ids, by the Conductor's Algorithm 1."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.common import glossary
from kvviz.common.numbers import readable
from kvviz.mooncake import overload
from kvviz.mooncake.overload.report import overload_notes, overload_paper_note
from kvviz.traces import Trace
from ui.cluster.controls import slo_sliders
from ui.kit import figures, frame, links
from ui.kit.errors import user_errors
from ui.kit.tables import Header, download_csv, turned_table
from ui.kit.traces import trace_picker
from ui.kit.work import confirm_cost, stepped

SUMMARY_HEADERS = {
    label: Header(overload.POLICY_SHORT[p], label)
    for p, label in overload.POLICY_LABELS.items()
    if overload.POLICY_SHORT[p] != label
}
"""The overload summary's columns, one per policy: a short header, the policy's full name in its help."""


def make_arrivals(spec: tuple, config: overload.ClusterConfig, seed: int) -> overload.Arrivals:
    """The arrivals a spec of plain values stands for: Poisson's parameters, or a trace's columns as bytes."""
    if spec[0] == "poisson":
        return overload.poisson_arrivals(config, *spec[1:3], seed, *spec[3:])
    _, times, inputs, outputs, blocks, offsets, block_size = spec
    ids = (np.frombuffer(blocks, np.int64), np.frombuffer(offsets, np.int64), block_size) if blocks else ()
    return overload.Arrivals(
        np.frombuffer(times), np.frombuffer(inputs, np.int64), np.frombuffer(outputs, np.int64), "trace", *ids
    )


def trace_spec(a: overload.Arrivals) -> tuple:
    """A trace's arrivals as plain values a cached function can hash."""
    ids = (a.blocks.astype(np.int64).tobytes(), a.offsets.astype(np.int64).tobytes()) if a.n_blocks else (b"", b"")
    return ("trace", a.time_s.tobytes(), a.input_length.tobytes(), a.output_length.tobytes(), *ids, a.block_size)


@st.cache_data(max_entries=64, ttl="1h", show_spinner=False)
def run_seed(spec: tuple, config: overload.ClusterConfig, seed: int) -> dict:
    """Every policy over one seed's arrivals (cached on plain inputs: numbers and bytes)."""
    arrivals = make_arrivals(spec, config, seed)
    runs = overload.compare(lambda s: arrivals, config, seeds=(seed,))
    return {"runs": runs, "capacity": overload.capacity(config, arrivals.input_length, arrivals.output_length)}


def run_overload(spec: tuple, config: overload.ClusterConfig, seeds: tuple[int, ...]):
    per_seed = stepped(
        lambda seed: f"Simulating the cluster: seed {seed}…", seeds, lambda seed: run_seed(spec, config, seed)
    )
    runs = {p: [r for s in per_seed for r in s["runs"][p]] for p in overload.POLICIES}
    return runs, overload.summary_table(runs), per_seed[0]["capacity"]


@links.view_fragment("cluster")
def policy_part(
    runs: dict[str, list[overload.OverloadResult]],
    table: pd.DataFrame,
    runs_key: str,
    settings: dict,
    trace_name: str | None,
) -> None:
    """The policy shown, its timeline and counts: switching the policy reruns only this part."""
    with st.container(horizontal=True, vertical_alignment="bottom"):
        policy = links.worded(
            st.segmented_control,
            "Policy",
            overload.POLICY_LABELS,
            "cluster_policy",
            default="early",
            required=True,
            **links.PART,
        )
        frame.terms("TTFT", "TBT", "SLO", "t_d")
    shown, row = runs[policy][0], table.set_index("policy").loc[policy]
    figures.figure("cluster.fig_timeline", shown, cache_key=f"{runs_key}:{policy}", key="cluster_timeline")
    with st.container(horizontal=True):
        st.metric("Completed", f"{row['completed']:,.0f}", border=True)
        st.metric("Rejected on arrival", f"{row['rejected_early']:,.0f}", border=True)
        st.metric("Rejected after prefill", f"{row['rejected_after_prefill']:,.0f}", border=True)
        st.metric("Wasted prefill", f"{row['wasted_prefill_s']:,.0f} s", border=True)
    download_csv(
        shown.timeline,
        "cluster",
        f"{overload.POLICY_LABELS[policy]} timeline",
        {"policy": policy, **settings},
        trace=trace_name,
    )


def arrival_controls() -> dict:
    """The sidebar's Arrivals section: Poisson's parameters, or a trace replayed faster."""
    st.header("Arrivals")
    source = st.segmented_control(
        "Arrivals",
        ["Poisson", "Trace replay"],
        default="Poisson",
        required=True,
        key="cluster_arrivals",
        bind="query-params",
        label_visibility="collapsed",
    )
    if source != "Poisson":
        speedup = st.slider(
            "Replay speed-up",
            0.5,
            10.0,
            2.0,
            0.5,
            key="cluster_speedup",
            bind="query-params",
            help="The paper replays its trace at 2× to overload the cluster.",
        )
        return {"source": source, "speedup": speedup, "trace": trace_picker("cluster")}
    return {
        "source": source,
        "load": st.slider("Overload (× capacity)", 0.5, 4.0, 2.0, 0.1, key="cluster_load", bind="query-params"),
        "minutes": st.slider("Duration (minutes)", 5, 60, 20, 5, key="cluster_minutes", bind="query-params"),
        "mean_in": st.number_input(
            "Mean prompt (tokens)", 500, 200_000, 20_000, 1000, key="cluster_mean_in", bind="query-params"
        ),
        "mean_out": st.number_input(
            "Mean output (tokens)", 10, 5000, 200, 10, key="cluster_mean_out", bind="query-params"
        ),
        "n_seeds": st.slider("Seeds (runs averaged)", 1, 5, 3, key="cluster_seeds", bind="query-params"),
        "seed": st.number_input("First seed", 0, 10**6, 0, key="cluster_first_seed", bind="query-params"),
    }


def placement_control(trace: Trace | None) -> str:
    """Where prefills run: a choice on a trace with block ids; load balancing otherwise, saying why."""
    reuse = trace is not None and trace.has_block_ids
    chosen = links.worded(
        st.segmented_control,
        "Prefill placement",
        overload.PLACEMENT_LABELS,
        "cluster_placement",
        default="balance",
        required=True,
        disabled=not reuse,
        help="KVCache-centric: the Conductor's Algorithm 1 sends each request to the prefill instance "
        "with the smallest predicted TTFT, counting the prefix cached there or fetched from another "
        "instance; the admission policies then decide as before. "
        + ("" if reuse else "It needs a trace that lists each request's block ids, so this run balances the load."),
    )
    return chosen if reuse else "balance"


def batch_limit_control(d: overload.ClusterConfig, tbt_slo_s: float, threshold: float) -> int:
    """The decode batch limit, capped where the TBT SLO already stops a batch (a higher limit would do nothing)."""
    cap = min(256, replace(d, tbt_slo_s=tbt_slo_s, threshold=threshold).tbt_batch())
    return st.slider(
        "Decode batch limit",
        1,
        max(cap, 2),
        min(d.batch_limit, max(cap, 2)),
        key="cluster_batch",
        bind="query-params",
        disabled=cap < 2,
        help=f"At most this many requests decode together on one instance (its KV memory). The TBT SLO "
        f"stops a batch at {cap} already: TBT = {d.tbt_base_s * 1000:g} ms + {d.tbt_per_request_s * 1000:g} ms "
        f"per request passes {threshold:g} × the {tbt_slo_s * 1000:g} ms SLO beyond it, so the limit goes up "
        f"to {cap}. Raise the TBT SLO or the threshold for larger batches.",
    )


def cluster_controls(d: overload.ClusterConfig) -> dict:
    """The sidebar's Cluster section: pool sizes, SLOs, the threshold, the batch limit and t_d."""
    st.header("Cluster")
    cfg = dict(
        prefill_instances=st.slider(
            "Prefill instances", 1, 32, d.prefill_instances, key="cluster_p", bind="query-params"
        ),
        decode_instances=st.slider("Decode instances", 1, 32, d.decode_instances, key="cluster_d", bind="query-params"),
        **slo_sliders("cluster_", d.ttft_slo_s, d.tbt_slo_s, 20),
        threshold=st.slider(
            "Rejection threshold (load)", 0.5, 1.5, d.threshold, 0.05, key="cluster_threshold", bind="query-params"
        ),
    )
    cfg["batch_limit"] = batch_limit_control(d, cfg["tbt_slo_s"], cfg["threshold"])
    cfg["t_d_s"] = st.number_input(
        "Predicted decode time (s)",
        0.1,
        3600.0,
        None,
        1.0,
        key="cluster_td",
        bind="query-params",
        placeholder="auto: mean output × full-batch TBT",
        help=glossary.define("t_d") + " Used by the prediction policy only.",
    )
    return cfg


def _arrivals_spec(chosen: dict, config: overload.ClusterConfig) -> tuple[tuple, tuple[int, ...], float, float, int]:
    """(spec, seeds, expected arrivals, span in seconds, block ids) of the chosen arrivals."""
    if chosen["source"] == "Poisson":
        span = chosen["minutes"] * 60.0
        spec = ("poisson", float(chosen["load"]), span, int(chosen["mean_in"]), int(chosen["mean_out"]))
        n = overload.poisson_rate(config, chosen["load"], int(chosen["mean_in"]), int(chosen["mean_out"])) * span
        return spec, tuple(range(int(chosen["seed"]), int(chosen["seed"]) + chosen["n_seeds"])), n, span, 0
    a = overload.trace_arrivals(chosen["trace"], chosen["speedup"])
    return trace_spec(a), (0,), len(a.time_s), a.span_s, a.n_blocks


def view() -> None:
    """The Overload view: its arrivals and cluster in the sidebar, then every policy over them."""
    with st.sidebar:
        chosen = arrival_controls()
        trace = chosen.get("trace")
        placement = placement_control(trace) if chosen["source"] != "Poisson" else "balance"
        d = overload.ClusterConfig()
        cfg = {**cluster_controls(d), "placement": placement}
    with user_errors():
        config = overload.with_defaults(d, **cfg)
        if chosen["source"] != "Poisson" and trace is None:
            st.info("Upload a trace (timestamps and lengths are enough for this view).")
            links.stop()
        spec, seeds, n, span, blocks = _arrivals_spec(chosen, config)
        confirm_cost(overload.cost(n, span, config, len(overload.POLICIES) * len(seeds), blocks), "cluster_overload")
        runs, table, cap = run_overload(spec, config, seeds)
    results(runs, table, cap, chosen, spec, seeds, cfg, config)


def results(
    runs: dict[str, list[overload.OverloadResult]],
    table: pd.DataFrame,
    cap: overload.Capacity,
    chosen: dict,
    spec: tuple,
    seeds: tuple[int, ...],
    cfg: dict,
    config: overload.ClusterConfig,
) -> None:
    """The view's body: capacity, the policy shown, every policy's loads, outcomes, notes and the paper."""
    rate = table["arrived"].iloc[0] / max(runs["baseline"][0].loads["time_s"].iloc[-1], 1.0)
    st.caption(
        f"Capacity without reuse: prefill pool {cap.prefill_rps:.2f} req/s, decode pool {cap.decode_rps:.2f} "
        f"req/s (the **{cap.bottleneck}** pool is the bottleneck); offered ≈ {rate:.2f} req/s. "
        f"Predicted decode time of a request: {readable(runs['baseline'][0].totals['t_d_s'])} s. Prefill placement: "
        f"**{overload.PLACEMENT_LABELS[config.placement]}**."
    )
    arrivals = (
        dict(zip(("load (x capacity)", "duration (s)", "mean prompt", "mean output"), spec[1:]))
        if spec[0] == "poisson"
        else {"replay speed-up": chosen["speedup"]}
    )
    settings = {**arrivals, "seeds": ",".join(map(str, seeds)), **cfg}
    trace_name = chosen["trace"].name if chosen["source"] != "Poisson" else None
    runs_key = str(hash((spec, config, seeds)))  # stands for the runs in the figure cache
    policy_part(runs, table, runs_key, settings, trace_name)
    frame.explain(
        "Prefill and decode run on separate pools. **Prefill load** is a new request's predicted TTFT over the "
        "TTFT SLO; **decode load** is max(TBT ÷ TBT SLO, batch ÷ batch limit). A request is admitted while the "
        "load its policy looks at stays ≤ the threshold; the decode pool still turns away a finished prefill "
        "that would overload it. Only completed requests count (goodput). With **KVCache-centric** placement a "
        "request's TTFT counts the prefix cached on (or fetched to) the instance it is sent to, so it costs less "
        "prefill and is admitted more often."
    )
    figures.figure(
        "cluster.fig_policy_multiples", {p: r[0] for p, r in runs.items()}, cache_key=runs_key, key="cluster_multiples"
    )
    figures.figure("cluster.fig_totals", table, cache_key=runs_key, key="cluster_totals")
    turned_table(
        overload.display_table(table),
        "Policy",
        "cluster",
        "overload summary",
        settings,
        headers=SUMMARY_HEADERS,
        trace=trace_name,
    )
    frame.what_to_notice(overload_notes(table))
    frame.paper_vs_sim(overload.paper_rows(table), note=overload_paper_note(table))
