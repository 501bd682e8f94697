"""The CacheGen page's Codec view: a KV (synthetic or the record-world model's) through the real
codec at every level, its ablation and the paper's numbers beside it (SIGCOMM'24 §5.1–5.2)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kvviz.cachegen import codec_report as report
from kvviz.cachegen import compare, model_kv
from kvviz.cachegen.kv import SyntheticKV
from kvviz.common import glossary
from ui.cachegen import cached
from ui.kit import frame
from ui.kit.errors import user_errors
from ui.kit.tables import download_csv, label
from ui.kit.work import confirm_cost

STEM = "cachegen"
SYNTHETIC, MODEL = "Synthetic", "Record-world model"


def slider(label: str, lo, hi, default, key: str, step=None, **kw):
    """A slider in the URL (``cachegen_<key>``)."""
    return st.slider(label, lo, hi, default, step, key=f"{STEM}_{key}", bind="query-params", **kw)


def controls() -> tuple[SyntheticKV, int, int, int, float]:
    """The sidebar: the KV source and its shape, then the encoder."""
    sources = [SYNTHETIC, MODEL] if model_kv.available() else [SYNTHETIC]
    source = st.segmented_control(
        "KV source", sources, default=SYNTHETIC, required=True, key=f"{STEM}_kvsource", bind="query-params"
    )
    seed = st.number_input(
        "Seed",
        0,
        10**6,
        0,
        key=f"{STEM}_kvseed",
        bind="query-params",
        help="Draws the synthetic KV, or picks the record-world documents.",
    )
    if source == MODEL:
        return (
            SyntheticKV(seed=seed),
            slider("Documents (24 tokens each)", 20, 400, 100, "docs", 20),
            *encoder_controls(),
        )
    if len(sources) == 1:
        st.caption("The record-world model appears here once its trained weights are installed.")
    st.header("Synthetic KV")
    spec = SyntheticKV(
        layers=slider("Layers", 1, 32, 8, "layers"),
        tokens=st.select_slider(
            "Tokens", [256, 512, 1024, 2048, 4096], 1024, key=f"{STEM}_tokens", bind="query-params"
        ),
        channels=st.select_slider(
            "Channels per layer (K or V)", [16, 32, 64, 128, 256], 64, key=f"{STEM}_channels", bind="query-params"
        ),
        rho=slider(
            "Token-to-token correlation ρ",
            0.0,
            0.99,
            0.9,
            "rho",
            0.01,
            help="Each token's KV is an AR(1) step from the previous token's. " + glossary.define("AR(1)"),
        ),
        offset=slider("Channel offset spread", 0.0, 5.0, 1.0, "offset", 0.1),
        outliers=slider("Outlier channels per layer", 0, 8, 2, "outliers"),
        outlier_scale=slider("Outlier magnitude (×)", 1.0, 30.0, 8.0, "outscale", 0.5),
        seed=seed,
    )
    return (spec, 0, *encoder_controls())


def encoder_controls() -> tuple[int, int, float]:
    st.header("Encoder")
    group = slider("Anchor group size G (tokens)", 2, 64, 10, "group")
    level = st.select_slider(
        "Level (1–3 = the artifact's tables)",
        [0, 1, 2, 3, 4],
        2,
        key=f"{STEM}_level",
        bind="query-params",
        help="The level of the ablation table; the figures show every level.",
    )
    sens = slider(
        "Assumed sensitivity, first ÷ last layer",
        1.0,
        20.0,
        4.0,
        "sens",
        0.5,
        help="Weights each layer's error; shallow layers matter more (§5.1).",
    )
    return group, level, sens


COLUMNS = (
    "variant",
    "level",
    "bits_per_value",
    "accuracy",
    "kl",
    "rel_error",
    "weighted_error",
    "ideal_bits_per_value",
    "header_bits_per_value",
)
"""The ablation's columns on the page, most telling first: the first ``SHOWN`` it has (its MSE, its
round-trip check and, beside the model's answers, its ideal and header bits are in the CSV)."""
SHOWN = 7
PRESENTER_COLUMNS = ("variant", "bits_per_value", "accuracy", "kl", "rel_error", "weighted_error")
"""What a projector's column holds: the size and the quality of each variant."""


def shown_columns(table: pd.DataFrame) -> list[str]:
    """The ablation's columns the page shows, in order."""
    if frame.presenter():
        return [c for c in PRESENTER_COLUMNS if c in table]
    return [c for c in COLUMNS if c in table][:SHOWN]


def _left_out(table: pd.DataFrame, shown: list[str]) -> list[str]:
    """The ablation's columns the page leaves out (in the CSV), as their headers read."""
    names = {"roundtrip": "the round-trip check (exact: decoding gives back every value)"}
    headers = {c: h.short for c, h in cached.HEADERS.items()} | names
    return [headers.get(c) or label(c) for c in table if c not in shown]


def view() -> tuple[list[str], list[dict], str]:
    """Draw the Codec view; its "What to notice" points, paper rows and the note under them."""
    with st.sidebar:
        spec, documents, group, level, sens = controls()
    with user_errors():
        spec.validate()
        confirm_cost(compare.study_cost(model_kv.kv_values(documents) if documents else spec.values), f"{STEM}_codec")
        table, points, loc = cached.codec_tables(spec, documents, level, group, sens)
        quality, pareto = cached.codec_figures(spec, documents, level, group, sens, frame.presenter())
    if quality is not None:
        st.caption(
            f"The model answers {table.accuracy.iloc[-1]:.1%} of {documents * 12:,} questions right over "
            f"its fp16 KV; Accuracy and KL (nats from the fp16 answers) are the same over each decoded KV."
        )
        cached.show(quality, f"{STEM}_quality")
    cached.show(pareto, f"{STEM}_pareto")
    st.subheader(f"Ablation at level {level}")
    levels = table.level.map(lambda v: "–" if pd.isna(v) else f"{int(v)}")  # a baseline has no level
    st.dataframe(
        table.assign(level=levels),
        hide_index=True,
        width="stretch",
        column_config=cached.FORMATS,
        column_order=(shown := shown_columns(table)),
    )
    *others, last = _left_out(table, shown)
    st.caption(f"The CSV also has {', '.join(others)} and {last}." if others else f"The CSV also has {last}.")
    settings = {
        "KV source": f"record-world model, {documents} documents" if documents else "synthetic",
        **(
            {}
            if documents
            else {
                "layers": spec.layers,
                "tokens": spec.tokens,
                "channels": spec.channels,
                "rho": spec.rho,
                "offset spread": spec.offset,
                "outliers": spec.outliers,
                "outlier magnitude": spec.outlier_scale,
            }
        ),
        "seed": spec.seed,
        "anchor group G": group,
        "level": level,
        "sensitivity first/last": sens,
    }
    download_csv(table, STEM, "codec ablation", settings)
    frame.terms("rANS", "AR(1)")
    frame.explain(report.CODEC_EXPLAIN)
    return (
        report.codec_notice(table, points, None if documents else spec.rho),
        report.paper_rows(table, loc),
        report.CODEC_NOTE,
    )
