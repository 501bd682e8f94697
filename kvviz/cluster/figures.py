"""The cluster's figures: how fast each router answers at each number of instances, and what that costs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kvviz.cluster.simulate import REFERENCE
from kvviz.common.style import color
from kvviz.ledger.figures import INK_GRAY

PATTERNS = ("", "/", ".", "x", "\\", "+")


def fig_routers(table: pd.DataFrame, target_s: float) -> go.Figure:
    """TTFT p90 per router (bars side by side) at each instance count with the cluster's cost per hour
    under it, and the p90 target: a bar under the line meets it, and the cheaper counts are on the left."""
    fig = go.Figure()
    rows = table[table["router"] != REFERENCE].sort_values("instances", kind="stable")
    ticks = {n: f"{n} instances<br>${cost:,.2f}/h" for n, cost in zip(rows["instances"], rows["dollars_per_hour"])}
    for i, (router, runs) in enumerate(rows.groupby("router", sort=False)):
        fig.add_bar(
            x=[ticks[n] for n in runs["instances"]],
            y=runs["ttft_p90_s"],
            name=router,
            marker=dict(color=color(i), pattern_shape=PATTERNS[i % len(PATTERNS)]),
            text=[f"{s:.3g}" for s in runs["ttft_p90_s"]],
            textposition="outside",
            customdata=runs[["hit_ratio"]].to_numpy(),
            hovertemplate=router + ", %{x}: p90 %{y:.3g} s, hits %{customdata[0]:.1%}<extra></extra>",
        )
    fig.add_hline(
        y=target_s,
        line=dict(color=INK_GRAY, dash="dash"),
        annotation_text=f"p90 target {target_s:g} s",
        annotation_position="top right",
    )
    top = max([target_s, *rows["ttft_p90_s"].tolist()])
    fig.update_xaxes(title_text="instances, and the cluster's cost per hour")
    fig.update_yaxes(title_text="TTFT p90 (s)", range=[0, 1.2 * top])
    fig.update_layout(
        title="TTFT p90 by router and instances: under the target line, the leftmost meets it cheapest",
        barmode="group",
        height=440,
    )
    return fig
