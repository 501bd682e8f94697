"""The Tiers page's figures: TTFT against its baselines, and the cost–TTFT front of the mixes tried."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvviz.common.style import color
from kvviz.ledger.figures import INK_GRAY, reference_hline, reference_vline


def fig_ttft_cdf(quantiles: Mapping[str, np.ndarray], levels: np.ndarray, target_s: float) -> go.Figure:
    """Share of requests whose first token came within x seconds, per setup, with the p90 target."""
    fig = go.Figure()
    for i, (label, seconds) in enumerate(quantiles.items()):
        fig.add_scatter(
            x=seconds,
            y=levels,
            mode="lines",
            name=label,
            line=dict(color=color(i), dash=(None, "dash", "dot")[i % 3]),
            hovertemplate=label + ": %{y:.0%} within %{x:.3g} s<extra></extra>",
        )
    reference_vline(fig, target_s, [0, 1], f"p90 target {target_s:g} s", INK_GRAY)
    fig.update_xaxes(type="log", title_text="time to first token (s)")
    fig.update_yaxes(title_text="share of requests", tickformat=".0%", range=[0, 1.02])
    fig.update_layout(title="Time to first token: every request of the trace, queueing included", height=440)
    return fig


def fig_pareto(mixes: pd.DataFrame, target_s: float) -> go.Figure:
    """Every mix tried by cost per hour and TTFT p90; the front (no mix both cheaper and faster) joined."""
    fig = go.Figure()
    front = mixes[mixes["front"]].sort_values("cost_per_hour")
    fig.add_scatter(
        x=mixes["cost_per_hour"],
        y=mixes["ttft_p90_s"],
        mode="markers",
        name="mixes tried",
        marker=dict(color=color(5), size=7, opacity=0.6),
        text=mixes["mix"],
        hovertemplate="%{text}<br>$%{x:,.2f}/h, p90 %{y:.3g} s<extra></extra>",
    )
    fig.add_scatter(
        x=front["cost_per_hour"],
        y=front["ttft_p90_s"],
        mode="lines+markers",
        name="cost–TTFT front",
        line=dict(color=color(0), shape="hv"),
        text=front["mix"],
        hovertemplate="%{text}<br>$%{x:,.2f}/h, p90 %{y:.3g} s<extra></extra>",
    )
    xs = [float(mixes["cost_per_hour"].min()), float(mixes["cost_per_hour"].max())]
    reference_hline(fig, target_s, xs, f"p90 target {target_s:g} s", INK_GRAY, "dash", label_at_end=True)
    fig.update_xaxes(title_text="cost ($ per hour)")
    fig.update_yaxes(type="log", title_text="TTFT p90 (s)")
    fig.update_layout(title="What each mix costs and how fast it answers: buy on the front", height=440)
    return fig
