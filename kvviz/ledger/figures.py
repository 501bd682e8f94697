"""Figures of the KV ledger page: size, break-even bandwidth, tiers and economics; the labelled reference
lines they draw (Strata's figures draw them too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.hardware import GB, LinkSpec
from kvviz.common.numbers import readable
from kvviz.common.style import color

ATTENTION_COLOR = {"MHA": color(3), "GQA": color(0), "MLA": color(2)}
INK_GRAY = "#555a66"


def reference_hline(
    fig: go.Figure,
    y: float,
    xs: Sequence[float],
    label: str,
    line_color: str,
    dash: str = "dot",
    label_at_end: bool = False,
    log_y: bool = True,
) -> None:
    """A labelled horizontal reference line, drawn as a trace (shapes misplace on log axes).

    The label sits on its own line at one end, on a white box: a curve passing there goes behind
    it instead of striking it through, and the line it names is never in doubt. Neighbouring lines
    put their labels at opposite ends (``label_at_end``) so close lines' labels do not collide.
    """
    fig.add_scatter(
        x=[xs[0], xs[-1]],
        y=[y, y],
        mode="lines",
        line=dict(color=line_color, dash=dash, width=1.5),
        showlegend=False,
        hoverinfo="skip",
    )
    fig.add_annotation(
        text=label,
        xref="x domain",
        x=0.99 if label_at_end else 0.01,
        yref="y",
        y=float(np.log10(y)) if log_y else y,
        xanchor="right" if label_at_end else "left",
        yanchor="middle",
        showarrow=False,
        font=dict(color=line_color),
        bgcolor="rgba(255,255,255,0.9)",
        borderpad=2,
    )


def reference_vline(
    fig: go.Figure, x: float, ys: Sequence[float], label: str, line_color: str, dash: str = "dot", level: int = 0
) -> None:
    """A labelled vertical reference line on a log x axis; its label hangs from the top of the plot
    on a white box, one ``level`` (a label's height) lower per level, so close lines' labels stack."""
    fig.add_scatter(
        x=[x, x],
        y=[ys[0], ys[-1]],
        mode="lines",
        line=dict(color=line_color, dash=dash, width=1.5),
        showlegend=False,
        hoverinfo="skip",
    )
    fig.add_annotation(
        text=label,
        xref="x",
        x=float(np.log10(x)),
        yref="y domain",
        y=1 - 0.09 * level,
        yanchor="top",
        showarrow=False,
        font=dict(color=line_color),
        bgcolor="rgba(255,255,255,0.9)",
        borderpad=2,
    )


def fig_size(curve: pd.DataFrame, context: int, capacity_gib: float) -> go.Figure:
    """GiB of KV against context length per model (colour: attention type), against a memory capacity."""
    fig = go.Figure()
    xs = [curve["context"].min(), curve["context"].max()]
    for i, (name, part) in enumerate(curve.groupby("model", sort=False)):
        att = part["attention"].iloc[0]
        fig.add_scatter(
            x=part["context"],
            y=part["GiB"],
            mode="lines",
            name=f"{name} ({att})",
            line=dict(color=color(i), dash={"MHA": "dash", "MLA": "dot"}.get(att)),
            hovertemplate=name + ": %{x:,} tokens → %{y:.2f} GiB<extra></extra>",
        )
    reference_hline(fig, capacity_gib, xs, f"{readable(capacity_gib)} GiB of memory", INK_GRAY, "dash")
    reference_vline(fig, context, [curve["GiB"].min(), curve["GiB"].max()], f"{context:,} tokens", INK_GRAY)
    fig.update_xaxes(type="log", title_text="context length (tokens)")
    fig.update_yaxes(type="log", title_text="GiB of KV for one context", dtick=1)
    fig.update_layout(title="KV grows with every token: where a line crosses memory, one context fills it", height=480)
    return fig


def _link_lines(fig: go.Figure, links: Mapping[str, LinkSpec], xs: Sequence[float]) -> None:
    for i, ln in enumerate(links.values()):
        reference_hline(
            fig,
            ln.effective_bytes_s / GB,
            xs,
            f"{ln.name} {readable(ln.effective_bytes_s / GB)} GB/s",
            INK_GRAY,
            label_at_end=bool(i % 2),
        )


def fig_breakeven(be: pd.DataFrame, links: Mapping[str, LinkSpec]) -> go.Figure:
    """Break-even bandwidth per GPU vs context length, per model, with the links' effective bandwidth."""
    fig = go.Figure()
    for i, (name, part) in enumerate(be.groupby("model", sort=False)):
        fig.add_scatter(
            x=part["context"],
            y=part["break-even GB/s per GPU"],
            mode="lines",
            name=name,
            line=dict(color=color(i), dash="dash" if part["attention"].iloc[0] == "MHA" else None),
            hovertemplate=name + ": %{x:,} tokens → %{y:.2f} GB/s<extra></extra>",
        )
    _link_lines(fig, links, [be["context"].min(), be["context"].max()])
    fig.update_xaxes(type="log", title_text="context length (tokens)")
    fig.update_yaxes(type="log", title_text="break-even bandwidth per GPU (GB/s)", dtick=1)
    fig.update_layout(title="Load if your link is above the curve, recompute if below", height=500)
    return fig


def fig_load_vs_recompute(lr: pd.DataFrame, context: int, model: str) -> go.Figure:
    """Load time over each link beside the recompute time, for one context."""
    colors = [color(2) if v == "load" else color(3) for v in lr["verdict"]]
    fig = go.Figure(
        go.Bar(
            x=lr["link"],
            y=lr["load ms"],
            marker_color=colors,
            name="load",
            text=[f"{readable(s)}× faster" if s >= 1 else f"{readable(1 / s)}× slower" for s in lr["load speed-up"]],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{x}: %{y:.1f} ms<extra></extra>",
        )
    )
    reference_hline(
        fig,
        float(lr["recompute ms"].iloc[0]),
        [lr["link"].iloc[0], lr["link"].iloc[-1]],
        f"recompute {lr['recompute ms'].iloc[0]:.0f} ms",
        INK_GRAY,
        "dash",
    )
    fig.update_yaxes(type="log", title_text="time to load the KV (ms)", dtick=1)
    fig.update_layout(
        title=f"{model}, {context:,} tokens: loading the KV over each link vs recomputing it (green: loading wins)",
        height=460,
        showlegend=False,
    )
    return fig


def fig_multi_turn(mt: pd.DataFrame) -> go.Figure:
    """TTFT of every turn of a chat, per place the history lives."""
    fig = go.Figure()
    for i, (tier, part) in enumerate(mt.groupby("tier", sort=False)):
        line = dict(color="black", dash="dash") if tier == "no cache" else dict(color=color(i + 1))
        fig.add_scatter(
            x=part["turn"],
            y=part["TTFT s"] * 1e3,
            mode="lines+markers",
            name=tier,
            line=line,
            customdata=part["history tokens"],
            hovertemplate=tier + ": turn %{x} (%{customdata:,} tokens of history) %{y:.1f} ms<extra></extra>",
        )
    fig.update_yaxes(type="log", title_text="TTFT (ms)", dtick=1)
    fig.update_xaxes(title_text="turn", dtick=2)
    fig.update_layout(title="Time to first token, turn by turn", height=480)
    return fig


def fig_economics(econ: pd.DataFrame) -> go.Figure:
    """Break-even hits per hour against context length: fewer means cheaper to keep."""
    fig = go.Figure()
    for i, (name, part) in enumerate(econ.groupby("model", sort=False)):
        fig.add_scatter(
            x=part["context"],
            y=part["break-even hits/h"],
            mode="lines",
            name=name,
            line=dict(color=color(i)),
            customdata=np.c_[part["storage $/h"] * 1e3, part["GPU $ saved per hit"] * 1e3],
            hovertemplate=name + ": %{x:,} tokens: %{y:.3f} hits/h<br>keep %{customdata[0]:.3f} m$/h, "
            "a hit saves %{customdata[1]:.3f} m$<extra></extra>",
        )
    xs = [econ["context"].min(), econ["context"].max()]
    reference_hline(fig, 1 / 168, xs, "once a week", INK_GRAY)
    reference_hline(fig, 1 / 24, xs, "once a day", INK_GRAY)
    reference_hline(fig, 1, xs, "once an hour", INK_GRAY)
    fig.update_xaxes(type="log", title_text="context length (tokens)")
    fig.update_yaxes(type="log", title_text="hits per hour to pay for keeping it", dtick=1)
    fig.update_layout(title="How often a stored context must be reused to pay its storage", height=480)
    return fig


def fig_tiers(summary: pd.DataFrame) -> go.Figure:
    """Where prompt tokens came from (left, stacked) and the TTFT that followed (right), per tier setup."""
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.55, 0.45],
        horizontal_spacing=0.04,
        subplot_titles=("where prompt tokens came from (%)", "TTFT (s): bar = mean, ◆ = p90"),
    )
    y = list(summary["setup"])
    base = np.zeros(len(summary))
    for col, c in zip(
        ("GPU hit %", "CPU hit %", "SSD hit %", "recomputed %"), (color(0), color(2), color(5), "#c9ccd3"), strict=True
    ):
        fig.add_bar(
            y=y,
            x=summary[col],
            base=base,
            orientation="h",
            name=col.replace(" %", ""),
            row=1,
            col=1,
            marker_color=c,
            hovertemplate="%{y}: %{x:.1f}%<extra>" + col + "</extra>",
        )
        base = base + summary[col].to_numpy()
    fig.add_bar(
        y=y,
        x=summary["mean TTFT s"],
        orientation="h",
        name="mean TTFT",
        marker_color=color(1),
        text=[f"{v:.2f} s" for v in summary["mean TTFT s"]],
        textposition="outside",
        cliponaxis=False,
        row=1,
        col=2,
        hovertemplate="%{y}: mean %{x:.3f} s<extra></extra>",
    )
    fig.add_scatter(
        y=y,
        x=summary["p90 TTFT s"],
        mode="markers",
        name="p90 TTFT",
        row=1,
        col=2,
        marker=dict(symbol="diamond", size=12, color=color(4)),
        hovertemplate="%{y}: p90 %{x:.3f} s<extra></extra>",
    )
    fig.update_layout(
        barmode="overlay",
        title="Tiered KV cache: hits and time to first token",
        height=440,
        legend=dict(orientation="h", y=-0.18),
    )
    fig.update_xaxes(range=[0, 100], row=1, col=1)
    fig.update_xaxes(type="log", row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    return fig


def fig_tiers_time(over_time: pd.DataFrame) -> go.Figure:
    """Mean TTFT in windows of arrival time, per setup: a queue that builds up climbs."""
    fig = go.Figure()
    for i, (name, part) in enumerate(over_time.groupby("setup", sort=False)):
        fig.add_scatter(
            x=part["t"],
            y=part["TTFT s"],
            mode="lines+markers",
            name=name,
            line=dict(color=color(i)),
            hovertemplate=name + ": arrivals near %{x:.0f} s wait %{y:.2f} s<extra></extra>",
        )
    fig.update_xaxes(title_text="arrival time (s)")
    fig.update_yaxes(type="log", dtick=1, title_text="mean TTFT (s)")
    fig.update_layout(
        title="TTFT over the run: the queue builds as histories grow", height=400, legend=dict(orientation="h", y=-0.25)
    )
    return fig
