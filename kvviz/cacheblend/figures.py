"""Figures of the CacheBlend page: the token strip, the deviation heatmap, accuracy against the
recompute ratio, the loading controller and the training loss. Plain functions: results in,
plotly figures out; the page styles them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.numbers import readable
from kvviz.common.style import GRID, INK, color

KEY, VALUE, CUT, IDLE, RECOMPUTED, RIGHT, WRONG = range(7)
_STRIP_COLORS = ("#cde6f7", "#fbe3b3", color(4), "#f3f5f9", color(0), color(2), color(3))  # Okabe-Ito based
METHOD_NAMES = {
    "full_prefill": "Full prefill",
    "full_reuse": "Full reuse",
    "prefix": "Prefix cache",
    "cacheblend": "CacheBlend",
    "random": "Random selection",
}
METHOD_COLORS = {
    "full_prefill": color(2),
    "full_reuse": color(3),
    "prefix": color(8),
    "cacheblend": color(0),
    "random": color(4),
}  # random in purple: orange beside full reuse's vermillion read as one


def _discrete_scale(colors: tuple[str, ...]) -> list[list]:
    n = len(colors)
    scale = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def token_strip(
    texts: list[str],
    is_value: np.ndarray,
    cut_value: np.ndarray,
    chunk_len: int,
    computed: np.ndarray,
    scores: np.ndarray,
    answers: dict[str, np.ndarray],
) -> go.Figure:
    """One document as a strip of tokens, the tokens each layer recomputes, and each method's answers.

    ``computed``/``scores`` are [layers, N]; ``answers`` maps a row label to what the model
    answered for the record whose value sits at each position (None at keys).
    """
    n, n_layers = len(texts), computed.shape[0]
    rows = ["document"] + [f"layer {i} recomputes" for i in range(n_layers)] + [f"answer: {k}" for k in answers]
    z = np.full((len(rows), n), np.nan)
    text = np.full((len(rows), n), "", dtype=object)
    hover = np.full((len(rows), n), "", dtype=object)
    z[0] = np.where(cut_value, CUT, np.where(is_value, VALUE, KEY))
    text[0] = texts
    for j in range(n):
        kind = "value, cut from its key" if cut_value[j] else ("value" if is_value[j] else "key")
        hover[0, j] = f"position {j}, chunk {j // chunk_len}: {texts[j]} ({kind})"
    for layer in range(n_layers):
        z[1 + layer] = np.where(computed[layer], RECOMPUTED, IDLE)
        for j in range(n):
            s = scores[layer, j]
            dev = "" if np.isnan(s) else f"; ranked by deviation {readable(s)}"
            hover[1 + layer, j] = (
                f"{texts[j]}: {'recomputed' if computed[layer, j] else 'reused'} at layer {layer}{dev}"
            )
    for r, (label, said) in enumerate(answers.items(), start=1 + n_layers):
        for j, value in enumerate(said):
            if value is None:
                continue
            right = value == texts[j]
            z[r, j], text[r, j] = (RIGHT, "✓") if right else (WRONG, "✗")
            hover[r, j] = f"{label}: ? {texts[j - 1]} → {value} ({'right' if right else f'wrong, it is {texts[j]}'})"
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(n)),
            y=rows,
            text=text,
            texttemplate="%{text}",
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            zmin=-0.5,
            zmax=len(_STRIP_COLORS) - 0.5,
            colorscale=_discrete_scale(_STRIP_COLORS),
            showscale=False,
            xgap=2,
            ygap=3,
        )
    )
    for start in range(chunk_len, n, chunk_len):
        fig.add_vline(x=start - 0.5, line=dict(color=INK, width=2, dash="dot"))
    for j in np.flatnonzero(cut_value):
        fig.add_annotation(  # over the value cut from its key, in the token axis's own coordinates
            x=j,
            xref="x",
            y=1.0,
            yref="paper",
            yanchor="bottom",
            text="✂ cut",
            showarrow=False,
            font=dict(color=_STRIP_COLORS[CUT]),
        )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(title="token position (dotted lines: chunk boundaries)", showgrid=False, dtick=1)
    fig.update_layout(height=120 + 34 * len(rows), margin=dict(t=40))
    return fig


def deviation_heatmap(texts: list[str], reuse: np.ndarray, blended: np.ndarray, chunk_len: int) -> go.Figure:
    """Per-token KV deviation ||ΔK||²+||ΔV||² from full prefill by layer, full reuse above and
    CacheBlend below. Each layer is scaled by its largest full-reuse deviation (deeper layers
    deviate by orders of magnitude more), so the colour shows which tokens carry a layer's
    deviation; hovering gives the raw value."""
    # layer 0 (exact cache) holds only float rounding: do not blow that up to full colour
    scale = np.maximum(reuse.max(axis=1, keepdims=True), max(float(reuse.max()), 1e-12) * 1e-3)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=("Full reuse (plain concatenation)", "After CacheBlend"),
    )
    labels = [f"{j}:{t}" for j, t in enumerate(texts)]
    rounding = max(float(reuse.max()), 1e-12) * 1e-6  # below this a deviation is float rounding
    for row, dev in ((1, reuse), (2, blended)):
        fig.add_trace(
            go.Heatmap(
                z=np.clip(dev / scale, 0, 1),
                x=labels,
                y=[f"layer {i}" for i in range(dev.shape[0])],
                customdata=[[readable(x) if x >= rounding else "0 (float rounding)" for x in line] for line in dev],
                zmin=0,
                zmax=1,
                colorscale="Blues",
                hovertemplate="%{x} %{y}: deviation %{customdata}<extra></extra>",
                colorbar=dict(title="share of the<br>layer's max", len=0.9, tickformat=".0%"),
                showscale=row == 1,
                xgap=1,
                ygap=1,
            ),
            row=row,
            col=1,
        )
        fig.update_yaxes(autorange="reversed", row=row, col=1)
    for start in range(chunk_len, len(texts), chunk_len):
        fig.add_vline(x=start - 0.5, line=dict(color=INK, width=1.5, dash="dot"))
    fig.update_layout(height=420)
    return fig


def accuracy_vs_ratio(table: pd.DataFrame, chance: float) -> go.Figure:
    """Answer accuracy on cut records and on all records against the recompute ratio.

    CacheBlend and random are lines over the ratios; full prefill, full reuse and the prefix
    cache are single points at the share of tokens they recompute, with dashed guides.
    """
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=("Cut records (value starts a chunk)", "All records"),
    )
    for col, column in ((1, "acc_cut"), (2, "acc_all")):
        if table[column].isna().all():  # even chunk lengths cut no record: nothing to plot, say so
            fig.add_annotation(
                text="No record is cut at this chunk length:<br>every key shares a chunk with its value",
                showarrow=False,
                x=0.5,
                y=0.5,
                xref=f"x{col if col > 1 else ''} domain",
                yref=f"y{col if col > 1 else ''} domain",
            )
        for method, group in table.groupby("method", sort=False):
            group = group.sort_values("ratio")
            swept = method in ("cacheblend", "random")
            fig.add_trace(
                go.Scatter(
                    x=group["ratio"],
                    y=group[column],
                    name=METHOD_NAMES.get(method, method),
                    legendgroup=method,
                    showlegend=col == 1,
                    mode="lines+markers" if swept else "markers",
                    marker=dict(
                        color=METHOD_COLORS.get(method),
                        size=9 if swept else 13,
                        symbol="circle" if swept else "diamond",
                    ),
                    line=dict(color=METHOD_COLORS.get(method)),
                    hovertemplate=f"{METHOD_NAMES.get(method, method)}: recompute %{{x:.0%}}"
                    f" → %{{y:.1%}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
            if method in ("full_prefill", "full_reuse") and group[column].notna().any():
                fig.add_hline(
                    y=float(group[column].iloc[0]),
                    line=dict(color=METHOD_COLORS[method], dash="dash", width=1.5),
                    row=1,
                    col=col,
                )
        fig.add_hline(
            y=chance,
            line=dict(color=color(7), dash="dot", width=1.5),
            row=1,
            col=col,
            annotation_text="chance 1/12",
            annotation_position="bottom right",
        )
        fig.update_xaxes(title="tokens recomputed", tickformat=".0%", range=[-0.03, 1.03], row=1, col=col)
    fig.update_yaxes(title="answer accuracy", tickformat=".0%", range=[0, 1.05], row=1, col=1)
    fig.update_layout(height=430, legend=dict(orientation="h", y=-0.22))
    return fig


def controller_figure(
    name: str, prefill_ms: float, loads_ms: dict[str, float], picks: dict[str, float], r_min: float
) -> go.Figure:
    """Per-layer time against the recompute ratio: recompute r·T_prefill rises, each device's
    load time is flat; the controller picks where they cross, never below the quality floor."""
    r = np.linspace(0, 1, 101)
    fig = go.Figure()
    fig.add_vrect(
        x0=0,
        x1=r_min,
        fillcolor=GRID,
        opacity=0.6,
        line_width=0,
        annotation_text=f"below the {r_min:.0%} quality floor",
        annotation_position="top left",
    )
    fig.add_trace(
        go.Scatter(
            x=r,
            y=r * prefill_ms,
            name="recompute r × prefill",
            line=dict(color=INK, width=3),
            hovertemplate="recompute %{x:.0%}: %{y:.1f} ms per layer<extra></extra>",
        )
    )
    for i, (device, load) in enumerate(loads_ms.items()):
        c = color(i + 1)
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[load, load],
                name=f"load: {device}",
                mode="lines",
                line=dict(color=c, dash="dash"),
                hovertemplate=f"{device}: %{{y:.1f}} ms per layer<extra></extra>",
            )
        )
        pick = picks[device]
        fig.add_trace(
            go.Scatter(
                x=[pick],
                y=[max(load, pick * prefill_ms)],
                mode="markers",
                showlegend=False,
                marker=dict(color=c, size=14, line=dict(color="white", width=2)),
                hovertemplate=f"{device}: picks r = %{{x:.0%}}<extra></extra>",
            )
        )
    top = max(prefill_ms, *loads_ms.values()) * 1.1
    fig.update_xaxes(title="recompute ratio r", tickformat=".0%", range=[-0.02, 1.03])  # a pick at 100% stays whole
    fig.update_yaxes(title="time per layer (ms)", range=[0, top])
    fig.update_layout(title=name, height=420, legend=dict(orientation="h", y=-0.22))
    return fig


def loss_curve(loss: np.ndarray, formed_below: float = 0.2) -> go.Figure:
    """The training loss per step and its centred 100-step mean, with the step where the mean
    first falls below ``formed_below`` nats marked: the induction head has formed. Steps count
    from 1 on a log axis, so the plateau and the drop stay visible beside a long tail of training."""
    if len(loss) == 0:
        fig = go.Figure()
        fig.add_annotation(
            text="these weights carry no loss curve", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
        )
        return fig
    steps = np.arange(1, len(loss) + 1)
    window = min(100, len(loss))
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    centre = steps[: len(smooth)] + window // 2
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=steps, y=loss, name="loss per step", mode="lines", line=dict(color=color(0), width=0.6), opacity=0.35
        )
    )
    fig.add_trace(
        go.Scatter(x=centre, y=smooth, name=f"mean of {window} steps", mode="lines", line=dict(color=color(0)))
    )
    below = np.flatnonzero(smooth < formed_below)
    if below.size:
        step = int(centre[below[0]])
        top = float(np.max(smooth))
        fig.add_trace(
            go.Scatter(
                x=[step, step],
                y=[0, top],
                mode="lines",
                line=dict(color=color(1), dash="dash"),
                hoverinfo="skip",
                showlegend=False,
            )
        )
        fig.add_annotation(
            x=np.log10(step),  # an annotation on a log axis is placed by the exponent
            y=top,
            text=f"induction head formed (~step {step})",
            xanchor="left",
            showarrow=False,
            font=dict(color=color(1)),
        )
    fig.update_xaxes(title="training step (log scale)", type="log")
    fig.update_yaxes(title="loss (nats)", rangemode="tozero")
    fig.update_layout(height=340, legend=dict(orientation="h", y=-0.3))
    return fig
