"""Figures of the CacheGen page: the streaming timeline, violation rate against the SLO, and the
codec's bits-per-value against error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.cachegen.streaming import Bandwidth, Run, StreamSetup
from kvviz.style import PALETTE, color

TEXT_COLOR = "#8a8f98"
SLO_COLOR = "#d62728"
POLICY_LABELS = {"paper": "paper rule", "artifact": "artifact rule", "quant8": "8-bit quant", "text": "text only",
                 "oracle": "oracle (bound)"}


def config_colors(names: tuple[str, ...]) -> dict[str, str]:
    """Levels in blues and greens, 8-bit quantisation orange, text grey."""
    levels = [n for n in names if n not in ("quant8", "text")]
    ramp = ["#9ecae1", "#4292c6", "#1f5fbf", "#08306b", "#19a979", "#13a4b4"]
    out = {n: ramp[i % len(ramp)] for i, n in enumerate(levels)}
    out.update(quant8=PALETTE[1], text=TEXT_COLOR)
    return out


def policy_label(name: str) -> str:
    return POLICY_LABELS.get(name, name.replace("level", "level "))


def _bandwidth_line(bw: Bandwidth, until: float) -> tuple[np.ndarray, np.ndarray]:
    times = np.append(bw.times[0], max(until, bw.times[0, -1]))
    return times, np.append(bw.gbps[0], bw.gbps[0, -1])


def fig_timeline(setup: StreamSetup, runs: list[Run], bw: Bandwidth, trace: int = 0) -> go.Figure:
    """One row per policy: each chunk is a bar over [start, end], as tall as the bandwidth its
    transfer saw and coloured by the configuration chosen; the SLO line and each TTFT marked.
    For a timed trace the bandwidth itself is drawn behind the bars."""
    colors = config_colors(setup.config_names)
    names = np.array(setup.config_names)
    until = max(setup.slo_s, max(float(r.ttft[trace]) for r in runs)) * 1.06
    top = max(float(bw.gbps[trace].max()), max(float(r.seen_gbps[trace].max()) for r in runs)) * 1.3
    fig = make_subplots(rows=len(runs), cols=1, shared_xaxes=True, vertical_spacing=0.03)
    shown: set[str] = set()
    for row, run in enumerate(runs, start=1):
        if bw.kind == "timed":
            t, g = _bandwidth_line(bw, until)
            fig.add_trace(go.Scatter(x=t, y=g, mode="lines", line=dict(shape="hv", color="#555", width=1.5),
                                     name="bandwidth", legendgroup="bw", showlegend=row == 1,
                                     hovertemplate="%{y:.2f} Gb/s from %{x:.2f} s<extra></extra>"), row=row, col=1)
        start, end = run.start[trace], run.end[trace]
        for name in setup.config_names:
            pick = names[run.config[trace]] == name
            if not pick.any():
                continue
            chunks = np.flatnonzero(pick)
            fig.add_trace(go.Bar(
                x=(start[pick] + end[pick]) / 2, width=end[pick] - start[pick], y=run.seen_gbps[trace, pick],
                marker=dict(color=colors[name], line=dict(color="white", width=1),
                            pattern_shape="/" if name == "text" else ""),
                name=name, legendgroup=name, showlegend=name not in shown,
                legendrank=setup.config_names.index(name),
                customdata=np.stack([chunks, start[pick], end[pick], run.bits[trace, pick] / 8e6], axis=1),
                hovertemplate=(f"{policy_label(run.policy)} · chunk %{{customdata[0]}} · {name}<br>"
                               "%{customdata[1]:.3f}–%{customdata[2]:.3f} s · %{customdata[3]:.1f} MB"
                               "<br>bandwidth seen %{y:.2f} Gb/s<extra></extra>")), row=row, col=1)
            shown.add(name)
        ttft, ok = float(run.ttft[trace]), bool(run.met[trace])
        fig.add_trace(go.Scatter(
            x=[ttft], y=[top * 0.62], mode="markers+text", text=[f"TTFT {ttft:.2f} s {'✓' if ok else '✗'}"],
            textposition="middle left" if ttft > until * 0.6 else "middle right",
            textfont=dict(color="#19a979" if ok else SLO_COLOR),
            marker=dict(symbol="diamond", size=12, color="#19a979" if ok else SLO_COLOR),
            showlegend=False, hovertemplate=f"TTFT {ttft:.3f} s<extra></extra>"), row=row, col=1)
        fig.add_vline(x=setup.slo_s, line=dict(color=SLO_COLOR, dash="dash", width=2), row=row, col=1)
        fig.update_yaxes(range=[0, top], nticks=3, row=row, col=1)
        axis = "" if row == 1 else str(row)
        fig.add_annotation(x=0.005, y=0.97, xref=f"x{axis} domain", yref=f"y{axis} domain", text=f"<b>{policy_label(run.policy)}</b>",
                           showarrow=False, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.8)")
    fig.add_annotation(x=setup.slo_s, y=1.0, xref="x", yref="paper", text=f"SLO {setup.slo_s:g} s",
                       showarrow=False, xanchor="left", yanchor="bottom", font=dict(color=SLO_COLOR))
    fig.update_layout(barmode="overlay", bargap=0, height=130 * len(runs) + 120,
                      legend=dict(orientation="h", y=-0.08, x=0),
                      yaxis_title="Gb/s")
    fig.update_xaxes(title_text="time since the request (s)", range=[0, until], row=len(runs), col=1)
    return fig


def fig_chunk_bandwidth(bw: Bandwidth, setup: StreamSetup, trace: int = 0) -> go.Figure:
    """For a per-chunk trace: the bandwidth each chunk index will see."""
    g = bw.gbps[trace, :setup.n_chunks]
    fig = go.Figure(go.Bar(x=np.arange(setup.n_chunks), y=g, marker_color=color(0),
                           hovertemplate="chunk %{x}: %{y:.2f} Gb/s<extra></extra>"))
    fig.update_layout(height=220, xaxis_title="chunk", yaxis_title="Gb/s", xaxis=dict(dtick=1),
                      title=f"Bandwidth per chunk ({bw.name})")
    return fig


FIXED_POLICY_COLORS = {"paper": "#1f5fbf", "artifact": "#e8743b", "quant8": "#bf399e", "text": TEXT_COLOR,
                       "oracle": "#262730"}
LEVEL_POLICY_COLORS = ("#19a979", "#13a4b4", "#945ecf", "#6c8893", "#ed4a7b")


def policy_colors(policies) -> dict[str, str]:
    """Rules in blue and orange, the oracle black, text grey, fixed levels in greens and violets."""
    levels = iter(LEVEL_POLICY_COLORS * 4)
    return {p: FIXED_POLICY_COLORS.get(p) or next(levels) for p in policies}


def fig_violation(sweep: pd.DataFrame, slo_now: float | None = None, x: str = "slo_s") -> go.Figure:
    """SLO-violation rate and mean quality against the SLO (``x="slo_s"``, log axis), the traces'
    mean bandwidth (``x="mean_gbps"``) or their persistence (``x="persistence"``), one line per policy."""
    policies = list(dict.fromkeys(sweep["policy"]))
    colors = policy_colors(policies)
    x_label = {"slo_s": "SLO (s)", "mean_gbps": "mean bandwidth the chunks see (Gb/s)",
               "persistence": "persistence (lag-1 correlation)"}[x]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("SLO-violation rate", "mean quality proxy"))
    for p in policies:
        d = sweep[sweep.policy == p]
        dash = "dot" if p == "oracle" else None
        for col, ycol in ((1, "violation_rate"), (2, "mean_quality")):
            fig.add_trace(go.Scatter(
                x=d[x], y=d[ycol], mode="lines+markers", name=policy_label(p), legendgroup=p,
                showlegend=col == 1, line=dict(color=colors[p], dash=dash),
                hovertemplate=f"{policy_label(p)}<br>{x_label} %{{x:.2f}}: %{{y:.3f}}<extra></extra>"), row=1, col=col)
    if slo_now is not None and x == "slo_s":
        for col in (1, 2):
            fig.add_vline(x=slo_now, line=dict(color=SLO_COLOR, dash="dash", width=1.5), row=1, col=col)
    fig.update_yaxes(tickformat=".0%", range=[-0.02, 1.02], row=1, col=1)
    fig.update_xaxes(title_text=x_label, type="log" if x == "slo_s" else "linear")
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.22, x=0))
    return fig


VARIANT_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x")


def fig_pareto(points: pd.DataFrame, error: str = "weighted_error") -> go.Figure:
    """Bits per value against error (log) per encoder variant across levels, with the baselines."""
    fig = go.Figure()
    curves = points[points.level.notna()]
    for i, (name, d) in enumerate(curves.groupby("variant", sort=False)):
        fig.add_trace(go.Scatter(
            x=d.bits_per_value, y=d[error], mode="lines+markers+text" if i == 0 else "lines+markers", name=name,
            text=[f"L{int(v)}" for v in d.level], textposition="bottom left", textfont=dict(size=12),
            marker=dict(symbol=VARIANT_SYMBOLS[i % len(VARIANT_SYMBOLS)], color=color(i)),
            line=dict(color=color(i)),
            hovertemplate=f"{name}<br>level %{{text}}: %{{x:.2f}} bits/value, error %{{y:.2e}}<extra></extra>"))
    base = points[points.level.isna()]
    lossy = base[~base.variant.str.startswith("zlib")]
    fig.add_trace(go.Scatter(x=lossy.bits_per_value, y=lossy[error], mode="markers+text", name="fixed-width quantization",
                             text=lossy.variant, textposition="middle right",
                             marker=dict(symbol="star", size=14, color="#262730"),
                             hovertemplate="%{text}: %{x:.2f} bits/value, error %{y:.2e}<extra></extra>"))
    for _, z in base[base.variant.str.startswith("zlib")].iterrows():
        fig.add_vline(x=z.bits_per_value, line=dict(color=TEXT_COLOR, dash="dot"),
                      annotation_text=f"zlib on fp16: {z.bits_per_value:.1f} bits, lossless",
                      annotation_position="top left")
    fig.update_layout(height=520, xaxis_title="bits per KV value (everything sent)",
                      yaxis_title="relative squared error" + (" (layer-weighted)" if error == "weighted_error" else ""),
                      legend=dict(orientation="h", y=-0.18, x=0))
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_xaxes(rangemode="tozero")
    return fig


def fig_quality(points: pd.DataFrame) -> go.Figure:
    """Bits per value against the model's loss per encoder variant across levels, with fixed-width
    quantization: mean KL of the answer distribution from full precision (log) and the accuracy."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("KL of the answers from full precision (nats)", "accuracy"))
    curves = points[points.level.notna()]
    for i, (name, d) in enumerate(curves.groupby("variant", sort=False)):
        for col, ycol in ((1, "kl"), (2, "accuracy")):
            fig.add_trace(go.Scatter(
                x=d.bits_per_value, y=d[ycol], mode="lines+markers", name=name, legendgroup=name,
                showlegend=col == 1, marker=dict(symbol=VARIANT_SYMBOLS[i % len(VARIANT_SYMBOLS)], color=color(i)),
                line=dict(color=color(i)), customdata=d.level,
                hovertemplate=f"{name}<br>level %{{customdata}}: %{{x:.2f}} bits/value, {ycol} %{{y:.3g}}<extra></extra>"),
                row=1, col=col)
    base = points[points.level.isna() & ~points.variant.str.startswith("zlib")]
    for col, ycol in ((1, "kl"), (2, "accuracy")):
        fig.add_trace(go.Scatter(x=base.bits_per_value, y=base[ycol], mode="markers", name="fixed-width quantization",
                                 legendgroup="fixed", showlegend=col == 1, text=base.variant,
                                 marker=dict(symbol="star", size=14, color="#262730"),
                                 hovertemplate="%{text}: %{x:.2f} bits/value, %{y:.3g}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=1)
    fig.update_yaxes(tickformat=".1%", row=1, col=2)
    fig.update_xaxes(title_text="bits per KV value (everything sent)")
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.22, x=0))
    return fig
