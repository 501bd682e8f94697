"""Figures of a tiered replay and of a size search: plain functions returning plotly figures."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from kvviz.common.style import color
from kvviz.tiers.plan import Plan
from kvviz.tiers.replay import TierResult

TIER_LABELS = {"gpu": "GPU HBM", "dram": "host DRAM", "ssd": "SSD", "remote": "remote pool"}
TTFT_CURVES = (("ttft_s", "tiered cache"), ("ttft_gpu_only_s", "GPU memory only"), ("ttft_no_cache_s", "no cache"))


def hits_by_tier(result: TierResult) -> go.Figure:
    """Block accesses by where they were found: each tier, or nowhere (a miss)."""
    hits = {k: v for k, v in result.hit_blocks.items() if k in ("gpu", "dram", result.config.storage)}
    names = [TIER_LABELS[k] for k in hits] + ["miss"]
    values = list(hits.values()) + [result.accesses - sum(hits.values())]
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=[color(i) for i in range(len(names))]))
    fig.update_layout(title="Where each block access was found", yaxis_title="block accesses", xaxis_title="tier")
    return fig


def ttft_cdf(result: TierResult) -> go.Figure:
    """TTFT's distribution with the tiers, with GPU memory alone and with no cache."""
    fig = go.Figure()
    for i, (column, name) in enumerate(TTFT_CURVES):
        values = np.sort(result.requests[column].to_numpy())
        share = np.arange(1, len(values) + 1) / max(len(values), 1)
        fig.add_scatter(x=values, y=share, mode="lines", name=name, line=dict(color=color(i)))
    fig.update_layout(
        title="Time to first token, every request", xaxis_title="TTFT (s)", yaxis_title="share of requests ≤ TTFT"
    )
    fig.update_xaxes(type="log")
    return fig


def pareto(result: Plan) -> go.Figure:
    """Every size tried, cost against TTFT p90, with the Pareto front, the target and the cheapest that meets it."""
    grid, front = result.grid, result.front
    fig = go.Figure()
    fig.add_scatter(
        x=grid["cost_per_hour"],
        y=grid["ttft_p90_s"],
        mode="markers",
        name="sizes tried",
        marker=dict(color=color(7), size=7),
        customdata=grid[["dram_gib", "storage_gib"]].to_numpy(),
        hovertemplate="DRAM %{customdata[0]:,.1f} GiB, storage %{customdata[1]:,.1f} GiB<br>"
        "$%{x:,.2f}/h, p90 %{y:.3f} s<extra></extra>",
    )
    fig.add_scatter(
        x=front["cost_per_hour"],
        y=front["ttft_p90_s"],
        mode="lines+markers",
        name="Pareto front",
        line=dict(color=color(0), shape="hv"),
    )
    fig.add_hline(y=result.target_p90_s, line_dash="dot", annotation_text="TTFT p90 target")
    best = result.best
    if best is not None:
        fig.add_scatter(
            x=[best["cost_per_hour"]],
            y=[best["ttft_p90_s"]],
            mode="markers",
            name="cheapest meeting the target",
            marker=dict(color=color(3), size=14, symbol="star"),
        )
    fig.update_layout(
        title="Cost against TTFT p90 for the sizes tried", xaxis_title="$ per hour", yaxis_title="TTFT p90 (s)"
    )
    return fig
