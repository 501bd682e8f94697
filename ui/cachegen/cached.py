"""The CacheGen page's cached work: results and styled figures, keyed on small inputs.

Every function here takes the view's inputs as a few numbers and strings
(``kvviz.cachegen.inputs.StreamInputs``, a ``SyntheticKV``), never the bandwidth arrays or the
runs, so a warm rerun hashes almost nothing. Figures are built *and styled* once per input and
presenter mode and kept in ``st.cache_resource``: plotly validates every property it is given,
and building and styling the six-row timeline took most of a warm rerun (0.5–1 s on this
machine). A cached figure is shared and only read: ``st.plotly_chart`` copies it (``to_dict``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kvviz.cachegen import compare, levels, model_kv
from kvviz.cachegen import figures as figs
from kvviz.cachegen import streaming as S
from kvviz.cachegen.inputs import BandwidthSpec, StreamInputs
from kvviz.cachegen.kv import SyntheticKV, locality, profile_context, synthetic_kv
from ui.kit import tables
from ui.kit.redraw import styled

FIGURES = {"max_entries": 48, "ttl": "1h", "show_spinner": False}
_FORMAT_OF = (
    dict.fromkeys(("bits_per_value", "ideal_bits_per_value", "header_bits_per_value"), "%.2f")
    | dict.fromkeys(("start_s", "end_s", "MB", "gbps_seen", "estimate_gbps", "quality"), "%.3f")
    | dict.fromkeys(("rel_error", "weighted_error", "mse", "kl", "log p(right answer)"), "%.3g")
    | {"accuracy": "percent"}
)
SUMMARY_COLUMNS = ("violation_rate", "mean_quality", "mean_ttft_s", "p95_ttft_s")
HEADERS = {
    "bits_per_value": tables.Header("Bits/value", "Bits per value as sent: the coded values, header and anchors."),
    "ideal_bits_per_value": tables.Header(
        "Ideal bits", "Bits per value an ideal entropy coder would send (−Σ log2 p), with the same header."
    ),
    "header_bits_per_value": tables.Header("Header bits", "Bits per value spent on tables, scales and anchors."),
    "rel_error": tables.Header("Rel. error", "Squared error of the decoded KV over the KV's own power."),
    "weighted_error": tables.Header(
        "Weighted error", "The relative error of each layer, weighted by its sensitivity (shallow layers count more)."
    ),
    "mse": tables.Header("MSE", "Mean squared error per value."),
    "kl": tables.Header("KL", "Mean KL divergence of the model's answers from its answers over fp16 KV (nats)."),
}
"""Short headers where a long one would not let a table fit a projector; each says what it means in its help."""
FORMATS = tables.readable([*_FORMAT_OF, *SUMMARY_COLUMNS], _FORMAT_OF, HEADERS)
"""Every CacheGen table's columns as the page shows them: in words, numbers formatted."""


def show(fig: go.Figure, key: str) -> None:
    """Draw a figure that is already styled (from the functions below), full width."""
    st.plotly_chart(fig, width="stretch", theme=None, key=key)


@st.cache_data(max_entries=8, ttl="1h", show_spinner="Encoding levels 1–3 and judging them on the record-world model…")
def measured_levels(study: levels.LevelStudy) -> levels.Measured:
    return levels.measure(study)


def setup_of(inputs: StreamInputs) -> S.StreamSetup:
    return inputs.setup(measured_levels(inputs.study))


@st.cache_data(max_entries=16, ttl="1h", show_spinner=False)
def bandwidth(spec: BandwidthSpec, chunks: int) -> S.Bandwidth:
    return spec.make(chunks)


def bandwidth_of(inputs: StreamInputs) -> S.Bandwidth:
    return bandwidth(inputs.bandwidth, inputs.n_chunks)


@st.cache_data(max_entries=32, ttl="1h", show_spinner="Streaming the context under every policy…")
def runs_of(inputs: StreamInputs, policies: tuple[str, ...], first: bool) -> list[S.Run]:
    """Every policy over the first trace (``first``, the timeline) or over all K."""
    bw = bandwidth_of(inputs)
    return S.run_all(setup_of(inputs), bw.first() if first else bw, policies)


@st.cache_data(max_entries=128, ttl="1h", show_spinner=False)
def sweep_point(inputs: StreamInputs, horizon: float) -> pd.DataFrame:
    """Every policy at ``inputs.slo`` over every trace (the oracle solved up to ``horizon``)."""
    return S.slo_sweep(setup_of(inputs), bandwidth_of(inputs), np.array([inputs.slo]), horizon=horizon)


@st.cache_data(max_entries=64, ttl="1h", show_spinner=False)
def persistence_point(inputs: StreamInputs, persistence: float) -> pd.DataFrame:
    """Every policy over K fresh AR(1) traces of one persistence (the sidebar's K and seed)."""
    spec = inputs.bandwidth
    return S.persistence_sweep(setup_of(inputs), spec.traces, spec.seed, (persistence,))


def slo_sweep(inputs: StreamInputs, slos: tuple[float, ...]) -> pd.DataFrame:
    return pd.concat([sweep_point(inputs.at_slo(s), max(slos)) for s in slos], ignore_index=True)


def persistence_sweep(inputs: StreamInputs) -> pd.DataFrame:
    return pd.concat([persistence_point(inputs, phi) for phi in S.PERSISTENCE_GRID], ignore_index=True)


@st.cache_resource(**FIGURES)
def timeline_figure(inputs: StreamInputs, policies: tuple[str, ...], presenter: bool) -> go.Figure:
    bw = bandwidth_of(inputs).first()
    return styled(figs.fig_timeline(setup_of(inputs), runs_of(inputs, policies, True), bw), presenter)


@st.cache_resource(**FIGURES)
def violation_figure(inputs: StreamInputs, against: str, slos: tuple[float, ...], presenter: bool) -> go.Figure:
    """Violation rate and quality against the SLO, the traces' mean bandwidth or their persistence."""
    if against == "SLO":
        fig = figs.fig_violation(slo_sweep(inputs, slos), inputs.slo)
    elif against == "Mean bandwidth":
        runs = runs_of(inputs, S.policy_names(setup_of(inputs)), False)
        fig = figs.fig_violation(S.by_mean_bandwidth(runs, bandwidth_of(inputs)), x="mean_gbps")
    else:
        fig = figs.fig_violation(persistence_sweep(inputs), x="persistence")
    return styled(fig, presenter)


@st.cache_data(max_entries=8, ttl="1h", show_spinner="Encoding every variant at every level…")
def codec_tables(spec: SyntheticKV, documents: int, level: int, group: int, sensitivity: float):
    """The ablation, the Pareto points and the locality ratios; ``documents`` > 0: the model's KV."""
    kv, profile, judge = (
        model_kv.judged_kv(documents, spec.seed)
        if documents
        else (synthetic_kv(spec), synthetic_kv(profile_context(spec)), None)
    )
    return (*compare.study(kv, profile, level, group, sensitivity, None, judge), locality(kv, group))


@st.cache_resource(**FIGURES)
def codec_figures(
    spec: SyntheticKV, documents: int, level: int, group: int, sensitivity: float, presenter: bool
) -> tuple[go.Figure | None, go.Figure]:
    """The model's answers against bits (None for a synthetic KV) and the bits-error Pareto chart."""
    _, points, _ = codec_tables(spec, documents, level, group, sensitivity)
    quality = styled(figs.fig_quality(points), presenter) if "accuracy" in points.columns else None
    return quality, styled(figs.fig_pareto(points), presenter)
