"""Figures of the RadixAttention scheduling page: hits and recomputed tokens per order, and the rounds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.style import PALETTE
from kvviz.radix.schedule_policy import Schedule

HIT = PALETTE[2]
RECOMPUTE = PALETTE[3]
MAX_ROUND_TICKS = 20


def fig_orders(table: pd.DataFrame, block_tokens: int) -> go.Figure:
    """Per order: tokens served from the cache and tokens recomputed (stacked), rounds in the hover."""
    fig = go.Figure()
    for column, name, colour in (("hits", "served from the cache", HIT), ("recomputed", "recomputed", RECOMPUTE)):
        fig.add_bar(
            x=table["order"],
            y=table[column] * block_tokens,
            name=name,
            marker_color=colour,
            customdata=np.c_[table["rounds"], table["hit_ratio"]],
            hovertemplate=f"%{{x}}: %{{y:,}} tokens {name}<br>%{{customdata[0]}} rounds, "
            "hit ratio %{customdata[1]:.1%}<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title="What each order does to the same queue",
        height=420,
        legend=dict(orientation="h", yanchor="top", y=-0.12, x=0),
    )
    fig.update_yaxes(title_text="prompt tokens")
    return fig


def fig_rounds(schedules: Sequence[Schedule]) -> go.Figure:
    """One row per order: every request as a square in the round it ran, coloured by its hit share."""
    fig = make_subplots(
        rows=len(schedules),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=[s.order.label for s in schedules],
    )
    widest = max([int(s.admissions.groupby("round").size().max()) for s in schedules if len(s.admissions)] or [1])
    for row, s in enumerate(schedules, start=1):
        a = s.admissions.copy()
        a["slot"] = a.groupby("round").cumcount()
        share = a["hits"] / a["blocks"]
        fig.add_scatter(
            x=a["round"],
            y=a["slot"],
            mode="markers+text",
            text=(a["request"] + 1).astype(str),
            textfont=dict(color="white", size=11),
            showlegend=False,
            marker=dict(
                symbol="square",
                size=22,
                color=share,
                colorscale=[[0, RECOMPUTE], [1, HIT]],
                cmin=0,
                cmax=1,
                showscale=row == 1,
                colorbar=dict(title="hit share", tickformat=".0%", len=0.6),
            ),
            customdata=np.c_[a["hits"], a["blocks"]],
            hovertemplate="request %{text}, round %{x}<br>%{customdata[0]} of %{customdata[1]} "
            "blocks cached<extra></extra>",
            row=row,
            col=1,
        )
        fig.update_yaxes(title_text="in batch", range=[widest - 0.5, -0.5], row=row, col=1, dtick=1)
    rounds = max([s.rounds for s in schedules] or [1])
    # A tick (and a grid line down every row) per round only while they are few: 40 rounds of a trace
    # window made it the page's costliest redraw; plotly's own ticks there are whole rounds too.
    fig.update_xaxes(
        title_text="scheduling round", dtick=1 if rounds <= MAX_ROUND_TICKS else None, row=len(schedules), col=1
    )
    fig.update_layout(
        title="Which request ran in which round (number = arrival order)",
        height=(60 + 28 * widest) * len(schedules) + 160,
    )
    return fig
