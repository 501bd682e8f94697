"""CacheGen: a real KV codec, and chunk-by-chunk adaptive streaming over a changing bandwidth."""

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.cachegen import compare, levels, model_kv, report
from kvviz.cachegen import streaming as S
from kvviz.cachegen.kv import SyntheticKV, locality, profile_context, synthetic_kv
from kvviz.figures import cachegen as figs
from ui import frame

VIEWS = ("Streaming timeline", "Violation vs SLO", "Codec")
SOURCES = {"Persistent": "persistent", "i.i.d.": "iid", "Step": "step", "Upload": "upload"}   # label -> kind
SIZES = {"Synthetic KV": "synthetic", "Record-world KV": "model"}
RECOMPUTE = {"Prefill model": "prefill", "Fixed 0.2 s": "fixed"}
DEFAULT_POLICIES = ["paper", "artifact", "level2", "quant8", "text", "oracle"]
FORMATS = {c: st.column_config.NumberColumn(format="%.3f") for c in (
    "bits_per_value", "ideal_bits_per_value", "header_bits_per_value", "start_s", "end_s", "MB", "gbps_seen",
    "estimate_gbps", "quality")} | {c: st.column_config.NumberColumn(format="%.2e") for c in (
    "rel_error", "weighted_error", "mse", "kl", "log p(right answer)")} | {
    "accuracy": st.column_config.NumberColumn(format="percent")}

frame.header("cachegen", "How CacheGen shrinks KV into a bitstream, and picks a compression level for each "
                         "chunk as the network's bandwidth changes.")
view = st.segmented_control("View", VIEWS, default=VIEWS[0], required=True, key="cachegen_view",
                            bind="query-params", label_visibility="collapsed")


@st.cache_data(max_entries=8, ttl=3600, show_spinner="Encoding levels 1–3 and judging them on the record-world model…")
def measured_levels(study: levels.LevelStudy) -> levels.Measured:
    return levels.measure(study)


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def bandwidth(source: str, persistence: float, seed: int, chunks: int, traces: int, csv: bytes | None,
              csv_name: str = ""):
    return S.make_bandwidth(source, traces, chunks, persistence, seed, csv, csv_name)


@st.cache_data(max_entries=32, ttl=3600, show_spinner="Streaming the context under every policy…")
def runs_of(setup: S.StreamSetup, bw: S.Bandwidth, policies: tuple[str, ...]):
    return S.run_all(setup, bw, policies)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def persistence_point(setup: S.StreamSetup, traces: int, seed: int, persistence: float):
    return S.persistence_sweep(setup, traces, seed, (persistence,))


@st.cache_data(max_entries=128, ttl=3600, show_spinner=False)
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


@st.cache_data(max_entries=8, ttl=3600, show_spinner="Encoding every variant at every level…")
def codec_tables(spec: SyntheticKV, documents: int, level: int, group: int, sensitivity: float):
    """The ablation, the Pareto points and the locality ratios; ``documents`` > 0: the model's KV."""
    kv, profile, judge = model_kv.judged_kv(documents, spec.seed) if documents else \
        (synthetic_kv(spec), synthetic_kv(profile_context(spec)), None)
    return (*compare.study(kv, profile, level, group, sensitivity, None, judge), locality(kv, group))


def slider(label, lo, hi, default, key, step=None, **kw):
    return st.slider(label, lo, hi, default, step, key=key, bind="query-params", **kw)


def codec_controls() -> tuple[SyntheticKV, int, int, int, float]:
    sources = ["Synthetic", "Record-world model"] if model_kv.available() else ["Synthetic"]
    source = st.segmented_control("KV source", sources, default="Synthetic", required=True,
                                  key="cachegen_kvsource", bind="query-params")
    seed = st.number_input("Seed", 0, 10**6, 0, key="cachegen_kvseed", bind="query-params")
    if source != "Synthetic":
        return (SyntheticKV(seed=seed), slider("Documents (24 tokens each)", 20, 400, 100, "cachegen_docs", 20),
                *encoder_controls())
    if len(sources) == 1:
        st.caption("The record-world model appears here once its weights (assets/record_world.npz) exist.")
    st.header("Synthetic KV")
    spec = SyntheticKV(
        layers=slider("Layers", 1, 32, 8, "cachegen_layers"),
        tokens=st.select_slider("Tokens", [256, 512, 1024, 2048, 4096], 1024, key="cachegen_tokens",
                                bind="query-params"),
        channels=st.select_slider("Channels per layer (K or V)", [16, 32, 64, 128, 256], 64,
                                  key="cachegen_channels", bind="query-params"),
        rho=slider("Token-to-token correlation ρ", 0.0, 0.99, 0.9, "cachegen_rho", 0.01),
        offset=slider("Channel offset spread", 0.0, 5.0, 1.0, "cachegen_offset", 0.1),
        outliers=slider("Outlier channels per layer", 0, 8, 2, "cachegen_outliers"),
        outlier_scale=slider("Outlier magnitude (×)", 1.0, 30.0, 8.0, "cachegen_outscale", 0.5), seed=seed)
    return (spec, 0, *encoder_controls())


def encoder_controls() -> tuple[int, int, float]:
    st.header("Encoder")
    group = slider("Anchor group size G (tokens)", 2, 64, 10, "cachegen_group")
    level = st.select_slider("Level (1–3 = the artifact's tables)", [0, 1, 2, 3, 4], 2, key="cachegen_level",
                             bind="query-params")
    sens = slider("Assumed sensitivity, first ÷ last layer", 1.0, 20.0, 4.0, "cachegen_sens", 0.5,
                  help="Weights each layer's error; shallow layers matter more (§5.1).")
    return group, level, sens


def choice(label: str, options: dict, key: str, **kw) -> str:
    first = next(iter(options))
    picked = st.segmented_control(label, list(options), default=first, required=True, key=key,
                                  bind="query-params", **kw)
    return options[picked or first]


def stream_setup() -> tuple[S.StreamSetup, S.Bandwidth, int, int, levels.Measured, str]:
    with st.sidebar:
        st.header("Bandwidth")
        source = choice("Bandwidth trace", SOURCES, "cachegen_bw", help="Persistent: AR(1) across chunks; i.i.d.: "
                        "the artifact's Uniform(0.1, 10) Gb/s per chunk; Step: 10 → 1 → 5 Gb/s.")
        persistence = slider("Persistence (lag-1 correlation per chunk)", 0.0, 0.99, 0.9, "cachegen_persist", 0.01,
                             disabled=source != "persistent")
        seed = st.number_input("Trace seed", 0, 10**6, 0, key="cachegen_seed", bind="query-params")
        traces = st.select_slider("Random traces (K)", [100, 300, 1000, 3000], 1000, key="cachegen_k",
                                  bind="query-params")
        csv, csv_name = None, ""
        if source == "upload":
            up = st.file_uploader("Bandwidth CSV (`time_s, gbps`)", type=["csv", "txt"], key="cachegen_csv",
                                  max_upload_size=1, help="Parsed as numbers only; it stays in your session.")
            csv, csv_name = (up.getvalue(), up.name) if up else (None, "")
        st.header("Context and SLO")
        slo = slider("SLO (s)", 0.1, 5.0, 1.0, "cachegen_slo", 0.05)
        context = st.number_input("Context (tokens)", 1, 1_000_000, 9_500, 100, key="cachegen_context",
                                  bind="query-params")
        chunk = st.number_input("Chunk (tokens)", 1, 1_000_000, 1_500, 100, key="cachegen_chunk", bind="query-params")
        sizes = choice("Level sizes encoded from", SIZES, "cachegen_sizes", help="A synthetic chunk with "
                       "Mistral-7B's 32 layers, or the record-world model's real KV; quality is always measured on "
                       "the record-world model.")
        recompute = choice("Text recompute", RECOMPUTE, "cachegen_recompute")
    if source == "upload" and csv is None:
        st.info("Upload a CSV with two columns, `time_s, gbps` (header optional, times increasing, "
                "bandwidth > 0), up to 1 MiB.", icon=":material/upload_file:")
        st.stop()
    with frame.user_errors():
        study = levels.LevelStudy.for_stream(sizes, int(context), int(chunk))
        frame.confirm_cost(levels.cost(study), "cachegen_levels")
        measured = measured_levels(study)
        setup = S.StreamSetup(measured.levels, measured.quant8, context_tokens=int(context), chunk_tokens=int(chunk),
                              slo_s=float(slo), recompute=recompute, per_chunk=measured.per_chunk)
        setup.validate()
        bw = bandwidth(source, float(persistence), int(seed), setup.n_chunks, int(traces), csv, csv_name)
    return setup, bw, int(traces), int(seed), measured, levels.SIZE_SOURCES[sizes]


if view == "Codec":
    with st.sidebar:
        spec, documents, group, level, sens = codec_controls()
    with frame.user_errors():
        spec.validate()
        frame.confirm_cost(compare.study_cost(model_kv.kv_values(documents) if documents else spec.values),
                           "cachegen_codec")
        table, points, loc = codec_tables(spec, documents, level, group, sens)
    if "accuracy" in table.columns:
        st.caption(f"The model answers {table.accuracy.iloc[-1]:.1%} of {documents * 12:,} questions right over "
                   f"its fp16 KV; `accuracy` and `kl` (nats from the fp16 answers) are the same over each decoded KV.")
        frame.figure(figs.fig_quality(points), key="cachegen_quality")
    frame.figure(figs.fig_pareto(points), key="cachegen_pareto")
    st.subheader(f"Ablation at level {level}")
    st.dataframe(table, hide_index=True, width="stretch", column_config=FORMATS)
    frame.explain(report.CODEC_EXPLAIN)
    frame.what_to_notice(report.codec_notice(table, points, None if documents else spec.rho))
    frame.paper_vs_sim(report.codec_rows(table, loc), note=report.CODEC_NOTE)
    st.stop()

setup, bw, traces, seed, measured, sizes_from = stream_setup()
label = frame.plain(bw.name)
extra = []
if view == "Streaming timeline":
    policies = st.multiselect("Policies (one row each)", S.policy_names(setup), DEFAULT_POLICIES,
                              key="cachegen_policies", format_func=figs.policy_label)
    with frame.user_errors():
        runs = runs_of(setup, bw.first(), tuple(policies or ["paper"]))
    frame.figure(figs.fig_timeline(setup, runs, bw), key="cachegen_timeline")
    if bw.kind == "chunk":
        frame.figure(figs.fig_chunk_bandwidth(bw, setup), key="cachegen_chunkbw")
    table = pd.concat([S.timeline(setup, r) for r in runs], ignore_index=True)
    st.dataframe(table, hide_index=True, width="stretch", height=240, column_config=FORMATS)
    frame.explain(report.TIMELINE_EXPLAIN)
    with frame.user_errors():
        frame.confirm_cost(S.stream_cost(setup, bw.traces, len(S.policy_names(setup))), "cachegen_summary")
    summary = sweep_of(setup, bw, (setup.slo_s,))
else:
    against = st.segmented_control("Against", ["SLO", "Mean bandwidth", "Persistence"], default="SLO",
                                   required=True, key="cachegen_against", bind="query-params")
    slos = tuple(report.slo_grid(setup.slo_s))
    repeats = {"SLO": len(slos), "Mean bandwidth": 1}.get(against, len(S.PERSISTENCE_GRID) + 1)
    swept = traces if against == "Persistence" else bw.traces          # the persistence sweep draws K fresh traces
    with frame.user_errors():
        frame.confirm_cost(S.stream_cost(setup, max(swept, bw.traces), len(S.policy_names(setup)), repeats),
                           "cachegen_sweep")
        if against == "SLO":
            sweep = sweep_of(setup, bw, slos)
            frame.figure(figs.fig_violation(sweep, setup.slo_s), key="cachegen_violation")
            summary = sweep[np.isclose(sweep.slo_s, setup.slo_s)]
        elif against == "Mean bandwidth":
            runs = runs_of(setup, bw, S.policy_names(setup))
            summary = S.summary(runs).assign(slo_s=setup.slo_s)
            frame.figure(figs.fig_violation(S.by_mean_bandwidth(runs, bw), x="mean_gbps"), key="cachegen_bybw")
        else:
            sweep = persistence_of(setup, traces, seed)
            frame.figure(figs.fig_violation(sweep, x="persistence"), key="cachegen_bypersist")
            extra = [report.persistence_notice(sweep)]
            summary = sweep_of(setup, bw, (setup.slo_s,))
    frame.explain(report.sweep_explain(bw.traces, traces))

st.caption(f"Over {bw.traces:,} trace(s) at SLO {setup.slo_s:g} s ({label}):")
st.dataframe(summary.drop(columns="slo_s"), hide_index=True, width="stretch")
st.caption(report.levels_caption(setup, sizes_from))
st.dataframe(measured.table, hide_index=True, width="stretch", column_config=FORMATS)
frame.what_to_notice(report.stream_notice(summary, label) + extra)
frame.paper_vs_sim(report.stream_rows(setup, summary, label, sizes_from),
                   note=report.stream_note(setup, summary))
