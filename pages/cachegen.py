"""CacheGen: a real KV codec, and chunk-by-chunk adaptive streaming over a changing bandwidth."""

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from kvviz import streaming as S
from kvviz.cachegen import compare, model_kv, report
from kvviz.cachegen.kv import SyntheticKV, locality, profile_context, synthetic_kv
from kvviz.figures import cachegen as figs
from ui import frame

VIEWS = ("Streaming timeline", "Violation vs SLO", "Codec")
SOURCES = {"Persistent": "persistent", "i.i.d.": "iid", "Step": "step", "Upload": "upload"}   # label -> kind
SIZES = {"Paper preset": "paper", "This codec": "codec"}
RECOMPUTE = {"Prefill model": "prefill", "Fixed 0.2 s": "fixed"}
DEFAULT_POLICIES = ["paper", "artifact", "level2", "quant8", "text", "oracle"]

frame.header("cachegen", "How CacheGen shrinks KV into a bitstream, and picks a compression level for each "
                         "chunk as the network's bandwidth changes.")
view = st.segmented_control("View", VIEWS, default=VIEWS[0], required=True, key="cachegen_view",
                            bind="query-params", label_visibility="collapsed")


@st.cache_data(max_entries=2, ttl="1h", show_spinner="Generating the KV…")  # ≤ 512 MB an entry
def kv_pair(spec: SyntheticKV):
    return synthetic_kv(spec), synthetic_kv(profile_context(spec))


@st.cache_data(max_entries=8, ttl="1h", show_spinner="Encoding levels 1–3 with the codec…")
def codec_stream_levels(spec: SyntheticKV, group: int, sensitivity: float):
    return compare.stream_levels(*kv_pair(spec), group, sensitivity)


@st.cache_data(max_entries=16, ttl="1h", show_spinner=False)
def bandwidth(source: str, persistence: float, seed: int, chunks: int, traces: int, csv: bytes | None,
              csv_name: str = ""):
    return S.make_bandwidth(source, traces, chunks, persistence, seed, csv, csv_name)


@st.cache_data(max_entries=32, ttl="1h", show_spinner="Streaming the context under every policy…")
def runs_of(setup: S.StreamSetup, bw: S.Bandwidth, policies: tuple[str, ...]):
    return S.run_all(setup, bw, policies)


@st.cache_data(max_entries=64, ttl="1h", show_spinner=False)
def persistence_point(setup: S.StreamSetup, traces: int, seed: int, persistence: float):
    return S.persistence_sweep(setup, traces, seed, (persistence,))


@st.cache_data(max_entries=128, ttl="1h", show_spinner=False)
def sweep_point(setup: S.StreamSetup, bw: S.Bandwidth, slo: float, horizon: float):
    return S.slo_sweep(setup, bw, np.array([slo]), horizon=horizon)


def sweep_of(setup: S.StreamSetup, bw: S.Bandwidth, slos: tuple[float, ...]):
    """Every policy at each SLO, one cached point at a time (the bar is drawn here, not cached)."""
    parts = frame.stepped(lambda slo: f"Sweeping the SLO over every trace: {slo:g} s…", slos,
                          lambda slo: sweep_point(setup, bw, slo, max(slos)))
    return pd.concat(parts, ignore_index=True)


def persistence_of(setup: S.StreamSetup, traces: int, seed: int):
    parts = frame.stepped(lambda phi: f"Streaming over traces of persistence {phi:g}…", S.PERSISTENCE_GRID,
                          lambda phi: persistence_point(setup, traces, seed, phi))
    return pd.concat(parts, ignore_index=True)


@st.cache_data(max_entries=8, ttl="1h", show_spinner="Encoding every variant at every level…")
def codec_tables(spec: SyntheticKV, documents: int, level: int, group: int, sensitivity: float):
    """The ablation, the Pareto points and the locality ratios; ``documents`` > 0: the model's KV."""
    kv, profile, judge = model_kv.judged_kv(documents, spec.seed) if documents else (*kv_pair(spec), None)
    return (*compare.study(kv, profile, level, group, sensitivity, None, judge), locality(kv, group))


def codec_controls() -> tuple[SyntheticKV, int, int, int, float]:
    sources = ["Synthetic", "Record-world model"] if model_kv.available() else ["Synthetic"]
    source = st.segmented_control("KV source", sources, default="Synthetic", required=True,
                                  key="cachegen_kvsource", bind="query-params")
    documents = 0
    if source != "Synthetic":
        documents = st.slider("Documents (24 tokens each)", 20, 400, 100, 20, key="cachegen_docs",
                              bind="query-params")
    elif len(sources) == 1:
        st.caption("The record-world model appears here once its weights (assets/record_world.npz) exist.")
    seed = st.number_input("Seed", 0, 10**6, 0, key="cachegen_kvseed", bind="query-params")
    if documents:
        return (SyntheticKV(seed=seed), documents, *encoder_controls())
    st.header("Synthetic KV")
    spec = SyntheticKV(
        layers=st.slider("Layers", 1, 32, 8, key="cachegen_layers", bind="query-params"),
        tokens=st.select_slider("Tokens", [256, 512, 1024, 2048, 4096], 1024, key="cachegen_tokens",
                                bind="query-params"),
        channels=st.select_slider("Channels per layer (K or V)", [16, 32, 64, 128, 256], 64,
                                  key="cachegen_channels", bind="query-params"),
        rho=st.slider("Token-to-token correlation ρ", 0.0, 0.99, 0.9, 0.01, key="cachegen_rho", bind="query-params"),
        offset=st.slider("Channel offset spread", 0.0, 5.0, 1.0, 0.1, key="cachegen_offset", bind="query-params"),
        outliers=st.slider("Outlier channels per layer", 0, 8, 2, key="cachegen_outliers", bind="query-params"),
        outlier_scale=st.slider("Outlier magnitude (×)", 1.0, 30.0, 8.0, 0.5, key="cachegen_outscale",
                                bind="query-params"),
        seed=seed)
    return (spec, documents, *encoder_controls())


def encoder_controls() -> tuple[int, int, float]:
    st.header("Encoder")
    group = st.slider("Anchor group size G (tokens)", 2, 64, 10, key="cachegen_group", bind="query-params")
    level = st.select_slider("Level (1–3 = the artifact's tables)", [0, 1, 2, 3, 4], 2, key="cachegen_level",
                             bind="query-params")
    sens = st.slider("Assumed sensitivity, first ÷ last layer", 1.0, 20.0, 4.0, 0.5, key="cachegen_sens",
                     bind="query-params", help="Weights each layer's error; shallow layers matter more (§5.1).")
    return group, level, sens


def stream_setup() -> tuple[S.StreamSetup, S.Bandwidth, int, int]:
    with st.sidebar:
        st.header("Bandwidth")
        source = SOURCES[st.segmented_control("Bandwidth trace", list(SOURCES), default="Persistent", required=True,
                                              key="cachegen_bw", bind="query-params",
                                              help="Persistent: AR(1) across chunks; i.i.d.: the artifact's "
                                                   "Uniform(0.1, 10) Gb/s per chunk; Step: 10 → 1 → 5 Gb/s.")
                         or "Persistent"]
        persistence = st.slider("Persistence (lag-1 correlation per chunk)", 0.0, 0.99, 0.9, 0.01,
                                key="cachegen_persist", bind="query-params", disabled=source != "persistent")
        seed = st.number_input("Trace seed", 0, 10**6, 0, key="cachegen_seed", bind="query-params")
        traces = st.select_slider("Random traces (K)", [100, 300, 1000, 3000], 1000, key="cachegen_k",
                                  bind="query-params")
        csv, csv_name = None, ""
        if source == "upload":
            up = st.file_uploader("Bandwidth CSV (`time_s, gbps`)", type=["csv", "txt"], key="cachegen_csv",
                                  max_upload_size=1, help="Parsed as numbers only; it stays in your session.")
            csv, csv_name = (up.getvalue(), up.name) if up else (None, "")
        st.header("Context and SLO")
        slo = st.slider("SLO (s)", 0.1, 5.0, 1.0, 0.05, key="cachegen_slo", bind="query-params")
        context = st.number_input("Context (tokens)", 1, 1_000_000, 9_500, 100, key="cachegen_context",
                                  bind="query-params")
        chunk = st.number_input("Chunk (tokens)", 1, 1_000_000, 1_500, 100, key="cachegen_chunk", bind="query-params")
        sizes = SIZES[st.segmented_control("Level sizes", list(SIZES), default="Paper preset", required=True,
                                           key="cachegen_sizes", bind="query-params") or "Paper preset"]
        recompute = RECOMPUTE[st.segmented_control("Text recompute", list(RECOMPUTE), default="Prefill model",
                                                   required=True, key="cachegen_recompute", bind="query-params")
                              or "Prefill model"]
    if source == "upload" and csv is None:
        st.info("Upload a CSV with two columns, `time_s, gbps` (header optional, times increasing, "
                "bandwidth > 0), up to 1 MiB.", icon=":material/upload_file:")
        st.stop()
    setup = S.StreamSetup(context_tokens=int(context), chunk_tokens=int(chunk), slo_s=float(slo), recompute=recompute)
    with frame.user_errors():
        setup.validate()
        if sizes == "codec":
            levels, q8 = codec_stream_levels(SyntheticKV(), 10, 4.0)
            setup = replace(setup, levels=levels, quant8=q8)
        bw = bandwidth(source, float(persistence), int(seed), setup.n_chunks, int(traces), csv, csv_name)
    return setup, bw, int(traces), int(seed)


if view == "Codec":
    with st.sidebar:
        spec, documents, group, level, sens = codec_controls()
    with frame.user_errors():
        spec.validate()
        table, points, loc = codec_tables(spec, documents, level, group, sens)
    if "accuracy" in table.columns:
        st.caption(f"The model answers {table.accuracy.iloc[-1]:.1%} of {documents * 12:,} questions right over "
                   f"its fp16 KV; the `accuracy` column is the same over each decoded KV.")
    frame.figure(figs.fig_pareto(points), key="cachegen_pareto")
    st.subheader(f"Ablation at level {level}")
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("bits_per_value", "ideal_bits_per_value",
                                                                   "header_bits_per_value")} | {
        c: st.column_config.NumberColumn(format="%.2e") for c in ("rel_error", "weighted_error", "mse")} | {
        "accuracy": st.column_config.NumberColumn(format="percent")})
    frame.explain(
        "Every row is encoded **for real**: the bytes are the rANS coder's output plus everything a receiver "
        "needs (each stream's final state, fp16 per-token scales, 8-bit anchors, and the 16-bit CDF tables "
        "when they are shipped; the streams are interleaved, so no per-stream lengths). `ideal_bits_per_value` replaces the coded bytes by −Σ log₂ p under the "
        "data's own histograms. The paper's encoder uses anchors + deltas and tables profiled offline on "
        "other contexts; the released artifact quantizes raw values and ships each chunk's tables.")
    frame.what_to_notice(report.codec_notice(table, None if documents else spec.rho))
    frame.paper_vs_sim(report.codec_rows(table, loc), note=report.CODEC_NOTE)
    st.stop()

setup, bw, traces, seed = stream_setup()
label = bw.name
if view == "Streaming timeline":
    policies = st.multiselect("Policies (one row each)", S.policy_names(setup), DEFAULT_POLICIES,
                              key="cachegen_policies", format_func=figs.policy_label)
    with frame.user_errors():
        runs = runs_of(setup, bw.first(), tuple(policies or ["paper"]))
    frame.figure(figs.fig_timeline(setup, runs, bw), key="cachegen_timeline")
    if bw.kind == "chunk":
        frame.figure(figs.fig_chunk_bandwidth(bw, setup), key="cachegen_chunkbw")
    table = pd.concat([S.timeline(setup, r) for r in runs], ignore_index=True)
    st.dataframe(table, hide_index=True, width="stretch", height=240, column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("start_s", "end_s", "MB", "gbps_seen",
                                                                   "estimate_gbps", "quality")})
    frame.explain(
        "Each chunk (1,500 tokens by default) is pre-encoded at three levels; it can also be sent as **text** "
        "and recomputed on the GPU over the earlier chunks' KV. **Paper rule** (§5.3): estimate the bandwidth "
        "from the previous chunk's throughput, then pick the least-loss configuration whose expected delay fits "
        "this chunk's share of the remaining SLO. **Artifact rule** (`run_adaptation.py`): a fixed budget SLO/n "
        "per chunk, the *current* chunk's bandwidth, levels best first, else text. Bars are as tall as the "
        "bandwidth the transfer saw.")
else:
    against = st.segmented_control("Against", ["SLO", "Mean bandwidth", "Persistence"], default="SLO",
                                   required=True, key="cachegen_against", bind="query-params")
    with frame.user_errors():
        if against == "SLO":
            sweep = sweep_of(setup, bw, tuple(report.slo_grid(setup.slo_s)))
            frame.figure(figs.fig_violation(sweep, setup.slo_s), key="cachegen_violation")
            summary = sweep[np.isclose(sweep.slo_s, setup.slo_s)]
        elif against == "Mean bandwidth":
            runs = runs_of(setup, bw, S.policy_names(setup))
            summary = S.summary(runs).assign(slo_s=setup.slo_s)
            frame.figure(figs.fig_violation(S.by_mean_bandwidth(runs, bw), x="mean_gbps"), key="cachegen_bybw")
        else:
            sweep = persistence_of(setup, traces, seed)
            frame.figure(figs.fig_violation(sweep, x="persistence"), key="cachegen_bypersist")
            summary = sweep_of(setup, bw, (setup.slo_s,))
    frame.explain(f"Every point runs each policy over the same {bw.traces:,} trace(s): at each SLO (the dashed line is "
                  "the sidebar's), or at the sidebar's SLO with the traces grouped by the mean bandwidth their chunks "
                  f"see, or over {traces:,} fresh persistent traces per persistence value (same Uniform(0.1, 10) Gb/s "
                  "marginal, so only predictability changes). The oracle knows each trace in advance: no policy can "
                  "beat it.")

if view == "Streaming timeline":
    summary = sweep_of(setup, bw, (setup.slo_s,))
st.caption(f"Over {bw.traces:,} trace(s) at SLO {setup.slo_s:g} s ({frame.plain(label)}):")
st.dataframe(summary.drop(columns="slo_s"), hide_index=True, width="stretch")
frame.what_to_notice(report.stream_notice(summary, frame.plain(label)))
frame.paper_vs_sim(report.stream_rows(setup, summary, label), note=report.STREAM_NOTE)
