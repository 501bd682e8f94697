"""The CacheBlend page's cached work: the trained model, its evaluations and styled figures.

Every function takes the view's inputs as a few numbers and strings, never the arrays, so a warm
rerun hashes almost nothing; figures are built and styled once per input and presenter mode.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kvviz.cacheblend import blend
from kvviz.cacheblend import figures as figs
from kvviz.cacheblend import report as R
from kvviz.cacheblend.model import load_model
from kvviz.cacheblend.record_world import N_RECORDS, sample_documents
from ui.kit.redraw import styled

N_DOCS, EVAL_SEED = 200, 2026
FIGURES = {"max_entries": 32, "ttl": "1h", "show_spinner": False}


@st.cache_resource(max_entries=1, ttl="1h", show_spinner="Loading the model…")
def model():
    """The trained record-world model, loaded once per server."""
    return load_model()


@st.cache_data(max_entries=32, ttl="1h", show_spinner=False)
def document(seed: int, chunk_len: int, ratio: float, variant: str) -> blend.DocumentView:
    """Document ``seed`` blended at recompute ratio ``ratio``, layer by layer."""
    return blend.inspect_document(model(), sample_documents(1, seed), chunk_len, ratio, variant, seed)


@st.cache_data(max_entries=16, ttl="1h", show_spinner=False)
def sweep(chunk_len: int, variant: str, ratios: tuple[float, ...]) -> pd.DataFrame:
    """Answer accuracy at each ratio over ``N_DOCS`` fresh documents."""
    m = model()
    return blend.evaluate(
        m, blend.setup(m, sample_documents(N_DOCS, EVAL_SEED), chunk_len), ratios, variant=variant, seed=EVAL_SEED
    )


@st.cache_data(max_entries=2, ttl="1h", show_spinner=False)
def lecture() -> dict[str, float]:
    """The lecture's setting reproduced (chunk length 5, r = 20%), for the paper table."""
    return blend.lecture_numbers(model(), sample_documents(N_DOCS, EVAL_SEED))


@st.cache_resource(**FIGURES)
def document_figures(seed: int, chunk_len: int, ratio: float, variant: str, presenter: bool) -> tuple[go.Figure, ...]:
    """The token strip and the deviation heatmap, styled once per input (cached functions take
    the inputs, never the arrays, so a warm rerun hashes four numbers)."""
    doc = document(seed, chunk_len, ratio, variant)
    return (
        styled(
            figs.token_strip(doc.texts, doc.is_value, doc.cut_value, chunk_len, doc.computed, doc.scores, doc.answers),
            presenter,
        ),
        styled(figs.deviation_heatmap(doc.texts, doc.dev_reuse, doc.dev_blend, chunk_len), presenter),
    )


@st.cache_resource(**FIGURES)
def accuracy_figure(chunk_len: int, variant: str, ratios: tuple[float, ...], presenter: bool) -> go.Figure:
    """Accuracy against the recompute ratio, styled."""
    return styled(figs.accuracy_vs_ratio(sweep(chunk_len, variant, ratios), 1 / N_RECORDS), presenter)


@st.cache_resource(**FIGURES)
def controller_figure(preset: str, context: int, presenter: bool) -> go.Figure:
    """The loading controller's per-device load and recompute times, styled."""
    runs = R.controller_runs(preset, context)
    return styled(
        figs.controller_figure(
            blend.SERVING_MODELS[preset].name,
            1e3 * next(iter(runs.values())).prefill,
            {d: 1e3 * r.load for d, r in runs.items()},
            {d: r.ratio for d, r in runs.items()},
            blend.R_MIN,
        ),
        presenter,
    )


@st.cache_resource(**FIGURES)
def loss_figure(presenter: bool) -> go.Figure:
    """The model's training loss, styled."""
    return styled(figs.loss_curve(model().loss), presenter)
