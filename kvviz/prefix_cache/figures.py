"""Figures of the Prefix-cache replay page: prefix against block cache, the worked example, requests, windows.

Capacity axes read in GiB of the chosen model's KV when a block size in bytes is given (blocks
otherwise), on a log scale. Prefix-cache lines are solid, block-cache lines dashed (prefix mode)
and dotted (every hit), in each policy's colour.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.style import INK, PALETTE, color
from kvviz.eviction.figures import short_blocks
from kvviz.prefix_cache.example import Example
from kvviz.prefix_cache.prefix_tree import PrefixTree
from kvviz.prefix_cache.replay import ENGINE_LABELS, label
from kvviz.prefix_cache.views import GIB, Reach

POLICY_COLOR = {
    "lru": color(0),
    "lfu": color(2),
    "fifo": color(7),
    "mru": color(1),
    "filo": color(4),
    "slru": color(5),
    "vllm": color(3),
}
MISS_COLOR = "#d9dde5"
HIT_COLOR = PALETTE[2]
SHARE_SYMBOL = {0.8: "circle", 0.9: "square", 0.95: "diamond"}
SHARE_TEXT = {0.8: "top left", 0.9: "bottom right", 0.95: "top left"}
CURVES = ("prefix", "block (prefix mode)", "block (every hit)")
LABEL_HEADROOM = 1.15  # the upper panels' y range over their highest line: room for a label above a point
RIGHT_SHARE = 0.75  # a marker this far along its panel's (log) capacity range gets its label on the left


def _inward(position: str, capacity: float, capacities) -> str:
    """``position`` for a marker's label, turned to the left when the marker is near its panel's right
    edge, where a label on the right would be cut by the panel."""
    low, high = np.log10(np.min(capacities)), np.log10(np.max(capacities))
    near_right = high > low and (np.log10(capacity) - low) / (high - low) > RIGHT_SHARE
    return position.replace("right", "left") if near_right else position


def gib_label(gib: float) -> str:
    """1.5 GiB, 320 MiB, 2.4 TiB: memory labels that stay short."""
    if gib >= 1024:
        return f"{gib / 1024:.3g} TiB"
    if gib >= 1:
        return f"{gib:.3g} GiB"
    return f"{gib * 1024:.3g} MiB"


def _x(capacity: pd.Series | np.ndarray, bytes_per_block: float | None) -> np.ndarray:
    caps = np.asarray(capacity, dtype=float)
    return caps * bytes_per_block / GIB if bytes_per_block else caps


def _x_title(bytes_per_block: float | None, model: str | None) -> str:
    return f"cache capacity (GiB of {model} KV, log scale)" if bytes_per_block else "cache capacity (blocks, log scale)"


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def fig_prefix_vs_block(
    comp: pd.DataFrame,
    *,
    bytes_per_block: float | None = None,
    model: str | None = None,
    found: Sequence[Reach] = (),
    ceiling: float | None = None,
) -> go.Figure:
    """Small multiples, one column per policy: hit ratio of the prefix cache and of the block cache,
    with markers where the prefix curve reaches 80/90/95% of the infinite-cache ceiling; below them
    one panel with every policy's difference in percentage points.

    One difference panel for all policies, not one per column, and one marker trace per column:
    each subplot costs the browser about as much as a small figure to draw, on every rerun that
    changes the curves (README, warm reruns)."""
    finite = comp[np.isfinite(comp["capacity"])]
    policies = list(dict.fromkeys(finite["policy"]))
    cols = max(len(policies), 1)
    fig = make_subplots(
        rows=2,
        cols=cols,
        shared_yaxes="rows",
        row_heights=[0.68, 0.32],
        vertical_spacing=0.1,
        horizontal_spacing=0.04,
        specs=[[{}] * cols, [{"colspan": cols}] + [None] * (cols - 1)],
        subplot_titles=[p.upper() for p in policies],
    )
    for col, policy in enumerate(policies, start=1):
        rows = finite[finite["policy"] == policy].sort_values("capacity")
        x = _x(rows["capacity"], bytes_per_block)
        hover = [
            f"{gib_label(v)} · {short_blocks(int(c))} blocks" if bytes_per_block else f"{int(c):,} blocks"
            for v, c in zip(x, rows["capacity"])
        ]
        first = col == 1
        for column, name, dash, width in (
            ("prefix", "prefix cache (SGLang radix)", "solid", 3),
            ("block (prefix mode)", "block cache, prefix mode", "dash", 2),
            ("block (every hit)", "block cache, every hit", "dot", 1.5),
        ):
            fig.add_scatter(
                x=x,
                y=rows[column],
                mode="lines",
                name=name,
                legendgroup=name,
                showlegend=first,
                line=dict(color=POLICY_COLOR[policy] if column == "prefix" else INK, dash=dash, width=width),
                text=hover,
                hovertemplate=f"{policy.upper()} {name}<br>%{{text}}: %{{y:.3f}}<extra></extra>",
                row=1,
                col=col,
            )
        fig.add_scatter(
            x=x,
            y=100 * rows["difference"],
            mode="lines+markers",
            name=f"{policy.upper()}: prefix − block (prefix mode), points",
            legendgroup="diff",
            fill="tozeroy",
            line=dict(color=POLICY_COLOR[policy], width=2, dash="solid"),
            fillcolor=_rgba(POLICY_COLOR[policy], 0.15),
            text=hover,
            hovertemplate=f"{policy.upper()} %{{text}}: %{{y:+.2f}} points<extra>prefix − block</extra>",
            row=2,
            col=1,
        )
        marks = [r for r in found if r.policy == policy and r.capacity is not None]
        if marks:
            fig.add_scatter(
                x=_x(np.array([r.capacity for r in marks]), bytes_per_block),
                y=[r.hit_ratio for r in marks],
                mode="markers+text",
                showlegend=False,
                customdata=[f"{r.share:.0%}" for r in marks],
                marker=dict(
                    symbol=[SHARE_SYMBOL.get(r.share, "circle") for r in marks],
                    size=11,
                    color="white",
                    line=dict(width=2, color=POLICY_COLOR[policy]),
                ),
                text=[f"{r.share:.0%}" for r in marks],
                textposition=[
                    _inward(SHARE_TEXT.get(r.share, "top left"), r.capacity, rows["capacity"]) for r in marks
                ],
                hovertemplate="%{customdata} of the ceiling<br>%{x:.3g}: %{y:.3f}<extra></extra>",
                row=1,
                col=col,
            )
        if ceiling is not None:
            fig.add_hline(y=ceiling, line_dash="dot", line_color="#6c8893", row=1, col=col)
    fig.update_xaxes(type="log")
    fig.update_xaxes(title_text=_x_title(bytes_per_block, model), row=2, col=1)
    top = max([float(finite[c].max()) for c in CURVES if len(finite)] + [ceiling or 0.0, 0.05])
    # headroom above the highest curve and the ceiling: the 95% marker's label sits above its point
    fig.update_yaxes(title_text="hit ratio", tickformat=".2f", row=1, col=1, range=[0, top * LABEL_HEADROOM])
    fig.update_yaxes(title_text="difference<br>(points)", row=2, col=1, zeroline=True, zerolinecolor=INK)
    fig.update_layout(
        title="Prefix cache against block cache, same policy and capacity",
        height=680,
        legend=dict(orientation="h", yanchor="top", y=-0.16, xanchor="left", x=0),
    )
    return fig


def fig_prefix_curves(
    curve: pd.DataFrame, *, bytes_per_block: float | None = None, model: str | None = None
) -> go.Figure:
    """Every chosen radix policy's prefix hit ratio against capacity (SGLang's six keys), and vLLM's
    block pool when the curve holds it."""
    fig = go.Figure()
    finite = curve[np.isfinite(curve["capacity"])]
    for policy, rows in finite.groupby("policy", sort=False):
        rows = rows.sort_values("capacity")
        fig.add_scatter(
            x=_x(rows["capacity"], bytes_per_block),
            y=rows["hit_ratio"],
            mode="lines+markers",
            name=label(policy),
            line=dict(color=POLICY_COLOR[str(policy)], width=3.5 if policy in ENGINE_LABELS else 2),
            hovertemplate=f"{label(policy)}<br>%{{x:.3g}}: %{{y:.3f}}<extra></extra>",
        )
    fig.update_xaxes(type="log", title_text=_x_title(bytes_per_block, model))
    fig.update_yaxes(title_text="prefix hit ratio", tickformat=".2f", rangemode="tozero")
    engines = [label(p) for p in finite["policy"].unique() if p in ENGINE_LABELS]
    title = (
        f"{' and '.join(engines)} beside SGLang's radix keys" if engines else "Prefix cache: every radix eviction key"
    )
    fig.update_layout(title=title, height=420)
    return fig


def _tree_positions(parents: Sequence[int]) -> list[tuple[float, float]]:
    """x = depth, y = leaf order (a parent at the middle of its children)."""
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(parents):
        children.setdefault(parent, []).append(node)
    pos: dict[int, tuple[float, float]] = {}
    row = [0]

    def place(node: int, depth: int) -> float:
        kids = children.get(node, [])
        if not kids:
            y = float(row[0])
            row[0] += 1
        else:
            y = float(np.mean([place(k, depth + 1) for k in kids]))
        pos[node] = (float(depth), y)
        return y

    for top in children.get(-1, []):
        place(top, 0)
    return [pos[n] for n in range(len(parents))]


def fig_example(example: Example, step: int) -> go.Figure:
    """The worked example after ``step`` requests: the two caches side by side over the script's tree,
    cached blocks filled, the current request's blocks outlined (green where it hit)."""
    now = example.steps[step]
    done = example.steps[1 : step + 1]
    left, right = example.sides
    titles = (
        f"<b>{left}</b><br>{sum(s.block_hits for s in done)} prefix hits so far",
        f"<b>{right}</b><br>{sum(s.prefix_hits for s in done)} prefix hits so far",
    )
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.08)
    fig.update_annotations(yshift=8, font_size=17)
    pos = _tree_positions(example.parents)
    for col, (cached, hits) in enumerate(
        ((now.block_cached, now.block_hits), (now.prefix_cached, now.prefix_hits)), start=1
    ):
        for node, parent in enumerate(example.parents):
            if parent >= 0:
                fig.add_scatter(
                    x=[pos[parent][0], pos[node][0]],
                    y=[pos[parent][1], pos[node][1]],
                    mode="lines",
                    line=dict(color="#b7bcc8", width=2),
                    hoverinfo="skip",
                    showlegend=False,
                    row=1,
                    col=col,
                )
        request = set(now.keys)
        hit = set(now.keys[:hits])
        fills = [PALETTE[0] if label in cached else MISS_COLOR for label in example.labels]
        outline = [
            HIT_COLOR if label in hit else (PALETTE[3] if label in request else "white") for label in example.labels
        ]
        ink = ["white" if label in cached else INK for label in example.labels]
        fig.add_scatter(
            x=[p[0] for p in pos],
            y=[p[1] for p in pos],
            mode="markers+text",
            text=list(example.labels),
            textfont=dict(color=ink, size=18),
            showlegend=False,
            marker=dict(size=44, color=fills, line=dict(width=5, color=outline)),
            hovertemplate="%{text}<extra></extra>",
            row=1,
            col=col,
        )
    fig.update_xaxes(visible=False, range=[-0.5, max(p[0] for p in pos) + 0.5])
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_layout(height=280)  # presenter mode's taller figure still fits a projector's first screen
    return fig


def fig_hit_fractions(fractions: np.ndarray, capacity_label: str) -> go.Figure:
    """Distribution of each request's prefix-hit fraction (cached tokens ÷ prompt tokens)."""
    fig = go.Figure(
        go.Histogram(
            x=fractions,
            xbins=dict(start=0, end=1.0001, size=0.05),
            marker_color=PALETTE[0],
            hovertemplate="%{x}: %{y:,} requests<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="cached tokens ÷ prompt tokens", range=[0, 1.0001], tickformat=".0%")
    fig.update_yaxes(title_text="requests")
    fig.update_layout(title=f"Each request's prefix-hit fraction at {capacity_label}", height=380, bargap=0.05)
    return fig


def fig_by_turn(turns: pd.DataFrame) -> go.Figure:
    """Mean prefix-hit fraction by chat turn number (bars), with how many requests each turn has."""
    fig = go.Figure(
        go.Bar(
            x=turns["turn"],
            y=turns["mean hit fraction"],
            marker_color=PALETTE[2],
            customdata=turns["requests"],
            hovertemplate="turn %{x}: %{y:.1%} of the prompt cached<br>%{customdata:,} requests<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="turn number in the chat")
    fig.update_yaxes(title_text="mean cached share of the prompt", tickformat=".0%", range=[0, 1])
    fig.update_layout(title="Prefix-hit fraction by turn", height=360)
    return fig


def fig_heatmap(
    windows: pd.DataFrame, capacity_labels: Sequence[str], title: str, *, difference: bool = False
) -> go.Figure:
    """Hit ratio per time window (x) and capacity (y); with ``difference`` a diverging scale around 0."""
    z = windows.to_numpy().T
    if difference:
        top = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 0.0
        scale = dict(colorscale="RdBu", zmid=0, zmin=-max(top, 1e-9), zmax=max(top, 1e-9))
        bar = "difference"
    else:
        scale = dict(colorscale="Viridis", zmin=0, zmax=1)
        bar = "hit ratio"
    fig = go.Figure(
        go.Heatmap(
            x=windows.index.to_numpy(),
            y=list(capacity_labels),
            z=z,
            colorbar=dict(title=bar),
            hovertemplate="t=%{x:,.0f} s, %{y}: %{z:.3f}<extra></extra>",
            **scale,
        )
    )
    fig.update_xaxes(title_text="time window start (s since the first arrival)")
    fig.update_yaxes(title_text="cache capacity", type="category")
    fig.update_layout(title=title, height=460)
    return fig


def fig_prefix_tree(tree: PrefixTree) -> go.Figure:
    """The trace's hottest prefixes as an icicle: width = reusable tokens, colour = requests sharing the
    segment (log scale), depth = block position; hover gives tokens, requests and first/last use."""
    seg = tree.segments
    ids = ["root"] + [f"s{int(s)}" for s in seg["segment"]]
    parents = [""] + ["root" if p == -1 else f"s{int(p)}" for p in seg["parent"]]
    labels = [f"all requests: {tree.reused_tokens:,} reusable tokens"] + [
        f"blocks {a}–{b}" if a != b else f"block {a}" for a, b in zip(seg["first_block"], seg["last_block"])
    ]
    values = [0] + seg["reused_tokens"].clip(lower=0).tolist()
    color = [0.0] + np.log10(seg["requests"].clip(lower=1)).tolist()
    custom = [[0, 0, 0.0, 0.0, tree.reused_tokens]] + seg[
        ["tokens", "requests", "first_s", "last_s", "reused_tokens"]
    ].to_numpy().tolist()
    top = max(color) if len(color) > 1 else 1.0
    ticks = [v for v in (1, 10, 100, 1_000, 10_000, 100_000) if np.log10(v) <= top + 1e-9]
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            labels=labels,
            parents=parents,
            values=values,
            branchvalues="remainder",
            customdata=custom,
            marker=dict(
                colors=color,
                colorscale="Blues",
                cmin=0,
                cmax=max(top, 1e-9),
                showscale=True,
                colorbar=dict(
                    title="requests", tickvals=[np.log10(v) for v in ticks], ticktext=[f"{v:,}" for v in ticks]
                ),
            ),
            tiling=dict(orientation="v"),
            root=dict(color="#eef0f4"),
            maxdepth=8,
            texttemplate=["%{label}"] + ["%{label}<br>%{customdata[1]:,} requests"] * len(seg),
            hovertemplate="%{label}: %{customdata[0]:,} tokens<br>%{customdata[1]:,} requests share it<br>"
            "%{customdata[4]:,} tokens reusable<br>first use %{customdata[2]:,.0f} s, "
            "last %{customdata[3]:,.0f} s<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"The trace's prefix tree: the {tree.kept_nodes:,} most shared of {tree.total_nodes:,} "
        "prefixes (width = reusable tokens; click a segment to zoom)",
        height=560,
        margin=dict(t=70, l=10, r=10, b=10),
    )
    return fig
