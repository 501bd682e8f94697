"""Mooncake cluster: overload admission (early rejection and its oscillation) and KVCache-centric scheduling."""

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.common import glossary
from kvviz.mooncake import overload
from kvviz.mooncake.overload.report import overload_notes, overload_paper_note
from ui import cluster_scheduling as scheduling
from ui import figures, frame
from ui.errors import user_errors
from ui.tables import data_table, download_csv
from ui.traces import trace_picker
from ui.work import confirm_cost, stepped

frame.header(
    "cluster",
    "How Mooncake's disaggregated cluster copes with overload, and where its Conductor sends "
    "each request so that KV already computed is reused.",
)
view = st.segmented_control(
    "View",
    ["Overload", "Scheduling"],
    default="Overload",
    required=True,
    key="cluster_view",
    bind="query-params",
    label_visibility="collapsed",
)


def make_arrivals(spec: tuple, config: overload.ClusterConfig, seed: int) -> overload.Arrivals:
    if spec[0] == "poisson":
        return overload.poisson_arrivals(config, *spec[1:3], seed, *spec[3:])
    return overload.Arrivals(np.frombuffer(spec[1]), np.frombuffer(spec[2], np.int64), np.frombuffer(spec[3], np.int64))


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


@st.fragment
def policy_part(
    runs: dict[str, list[overload.OverloadResult]],
    table: pd.DataFrame,
    runs_key: str,
    settings: dict,
    trace_name: str | None,
) -> None:
    """The policy shown, its timeline and counts: switching the policy reruns only this part."""
    with st.container(horizontal=True, vertical_alignment="bottom"):
        policy = st.segmented_control(
            "Policy",
            overload.POLICIES,
            default="early",
            required=True,
            key="cluster_policy",
            bind="query-params",
            format_func=overload.POLICY_LABELS.get,
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


def overload_view() -> None:
    with st.sidebar:
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
        if source == "Poisson":
            load = st.slider("Overload (× capacity)", 0.5, 4.0, 2.0, 0.1, key="cluster_load", bind="query-params")
            minutes = st.slider("Duration (minutes)", 5, 60, 20, 5, key="cluster_minutes", bind="query-params")
            mean_in = st.number_input(
                "Mean prompt (tokens)", 500, 200_000, 20_000, 1000, key="cluster_mean_in", bind="query-params"
            )
            mean_out = st.number_input(
                "Mean output (tokens)", 10, 5000, 200, 10, key="cluster_mean_out", bind="query-params"
            )
            n_seeds = st.slider("Seeds (runs averaged)", 1, 5, 3, key="cluster_seeds", bind="query-params")
            seed = st.number_input("First seed", 0, 10**6, 0, key="cluster_first_seed", bind="query-params")
        else:
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
            trace = trace_picker("cluster")
        st.header("Cluster")
        d = overload.ClusterConfig()
        cfg = dict(
            prefill_instances=st.slider(
                "Prefill instances", 1, 32, d.prefill_instances, key="cluster_p", bind="query-params"
            ),
            decode_instances=st.slider(
                "Decode instances", 1, 32, d.decode_instances, key="cluster_d", bind="query-params"
            ),
            batch_limit=st.slider(
                "Decode batch limit", 1, 256, d.batch_limit, key="cluster_batch", bind="query-params"
            ),
            ttft_slo_s=st.slider(
                "TTFT SLO (s)",
                1.0,
                120.0,
                d.ttft_slo_s,
                1.0,
                key="cluster_ttft",
                bind="query-params",
                help=glossary.define("TTFT") + "\n\n" + glossary.define("SLO"),
            ),
            tbt_slo_s=st.slider(
                "TBT SLO (ms)",
                20,
                1000,
                int(d.tbt_slo_s * 1000),
                10,
                key="cluster_tbt",
                bind="query-params",
                help=glossary.define("TBT"),
            )
            / 1000,
            threshold=st.slider(
                "Rejection threshold (load)", 0.5, 1.5, d.threshold, 0.05, key="cluster_threshold", bind="query-params"
            ),
            t_d_s=st.number_input(
                "t_d: predicted decode time (s)",
                0.1,
                3600.0,
                None,
                1.0,
                key="cluster_td",
                bind="query-params",
                placeholder="auto: mean output × full-batch TBT",
                help=glossary.define("t_d") + " Used by the prediction policy only.",
            ),
        )
    with user_errors():
        config = overload.with_defaults(d, **cfg)
        if source == "Poisson":
            spec, seeds = (
                ("poisson", float(load), minutes * 60.0, int(mean_in), int(mean_out)),
                tuple(range(int(seed), int(seed) + n_seeds)),
            )
            span = minutes * 60.0
            n = overload.poisson_rate(config, load, int(mean_in), int(mean_out)) * span
        else:
            if trace is None:
                st.info("Upload a trace (timestamps and lengths are enough for this view).")
                st.stop()
            a = overload.trace_arrivals(trace, speedup)
            spec, seeds = ("trace", a.time_s.tobytes(), a.input_length.tobytes(), a.output_length.tobytes()), (0,)
            n, span = len(a.time_s), a.span_s
        confirm_cost(overload.cost(n, span, config, len(overload.POLICIES) * len(seeds)), "cluster_overload")
        runs, table, cap = run_overload(spec, config, seeds)
    rate = table["arrived"].iloc[0] / max(runs["baseline"][0].loads["time_s"].iloc[-1], 1.0)
    st.caption(
        f"Capacity: prefill pool {cap.prefill_rps:.2f} req/s, decode pool {cap.decode_rps:.2f} req/s "
        f"(the **{cap.bottleneck}** pool is the bottleneck); offered ≈ {rate:.2f} req/s. "
        f"t_d = {runs['baseline'][0].totals['t_d_s']:.1f} s."
    )
    arrivals = (
        dict(zip(("load (x capacity)", "duration (s)", "mean prompt", "mean output"), spec[1:]))
        if spec[0] == "poisson"
        else {"replay speed-up": speedup}
    )
    settings = {**arrivals, "seeds": ",".join(map(str, seeds)), **cfg}
    trace_name = trace.name if source != "Poisson" else None
    runs_key = str(hash((spec, config, seeds)))  # stands for the runs in the figure cache
    policy_part(runs, table, runs_key, settings, trace_name)
    frame.explain(
        "Prefill and decode run on separate pools. **Prefill load** is a new request's predicted TTFT over the "
        "TTFT SLO; **decode load** is max(TBT ÷ TBT SLO, batch ÷ batch limit). A request is admitted while the "
        "load its policy looks at stays ≤ the threshold; the decode pool still turns away a finished prefill "
        "that would overload it. Only completed requests count (goodput)."
    )
    figures.figure(
        "cluster.fig_policy_multiples", {p: r[0] for p, r in runs.items()}, cache_key=runs_key, key="cluster_multiples"
    )
    figures.figure("cluster.fig_totals", table, cache_key=runs_key, key="cluster_totals")
    summary = overload.display_table(table)
    data_table(summary, "cluster", "overload summary", settings, trace=trace_name)
    frame.what_to_notice(overload_notes(table))
    frame.paper_vs_sim(overload.paper_rows(table), note=overload_paper_note(table))


if view == "Overload":
    overload_view()
else:
    scheduling.view()
