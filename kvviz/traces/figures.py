"""Figures of the Trace page: arrivals and lengths over time, block popularity, reuse distances.

Each is drawn from at most a few hundred points (bins, log-spaced ranks), lines and bars only:
the browser redraws them on every change of the trace, and thousands of SVG markers or a WebGL
context per redraw cost it seconds.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.style import color
from kvviz.traces.model import Trace
from kvviz.traces.reuse import lru_curve

POPULARITY_POINTS = 300  # log-spaced ranks drawn as one line: the curve's shape, cheap to redraw
BAND = (10, 50, 90)  # percentiles of the prompt lengths drawn per time bin


def _window_s(span_s: float) -> float:
    """A readable histogram window: about 60 bars over the trace, rounded to 1/2/5 x 10^k s."""
    raw = max(span_s / 60, 1e-3)
    exp = 10 ** np.floor(np.log10(raw))
    return float(min((m * exp for m in (1, 2, 5, 10) if m * exp >= raw), default=10 * exp))


def length_band(t: np.ndarray, lengths: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The 10th, 50th and 90th percentile of the lengths arriving in each bin ``[edges[i], edges[i+1])``
    (the last bin closed), one row per bin; NaN where no request arrived."""
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(edges) - 2)
    out = np.full((len(edges) - 1, len(BAND)), np.nan)
    order = np.argsort(which, kind="stable")
    bins, starts = np.unique(which[order], return_index=True)
    for b, part in zip(bins, np.split(lengths[order], starts[1:]), strict=True):
        out[b] = np.percentile(part, BAND)
    return out


def band_outline(mid: np.ndarray, low: np.ndarray, high: np.ndarray, window: float) -> tuple[list, list]:
    """``x`` and ``y`` of a ``fill="toself"`` scatter drawing the band from ``low`` to ``high``: one
    closed outline per run of bins where requests arrived, ``None`` between runs, so no band is drawn
    across empty bins (plotly's fill to the next trace would join the runs with a wedge). A run of
    one bin is drawn half a bin wide, so it shows."""
    xs: list = []
    ys: list = []
    full = ~np.isnan(low)
    starts = np.flatnonzero(full & ~np.concatenate(([False], full[:-1])))
    ends = np.flatnonzero(full & ~np.concatenate((full[1:], [False])))
    for a, b in zip(starts, ends, strict=True):
        x = mid[a : b + 1] if b > a else np.array([mid[a] - window / 4, mid[a] + window / 4])
        lo, hi = (low[a : b + 1], high[a : b + 1]) if b > a else (np.repeat(low[a], 2), np.repeat(high[a], 2))
        xs += [*x, *x[::-1], x[0], None]
        ys += [*lo, *hi[::-1], lo[0], None]
    return xs[:-1], ys[:-1]


def histogram_outline(edges: np.ndarray, heights: np.ndarray) -> dict:
    """``x``, ``y`` and ``line_shape`` of a scatter that draws a histogram as one filled step line:
    bar ``i`` spans ``[edges[i], edges[i+1])`` at ``heights[i]``. One SVG path instead of a
    rectangle per bar, so the browser redraws it cheaply."""
    return dict(x=edges, y=np.append(heights, heights[-1:]), line_shape="hv", mode="lines")


def fig_arrivals(trace: Trace) -> go.Figure:
    """Requests per second over time (top) and the prompt lengths arriving in each bin (bottom):
    their median as a line in the band from the 10th to the 90th percentile. Binned, not one
    marker per request: the same distribution over time, and a few hundred points to redraw."""
    t = trace.requests["timestamp"].to_numpy() / 1000.0
    t = t - t.min() if len(t) else t
    window = _window_s(float(t.max()) if len(t) else 1.0)
    edges = np.arange(0, (t.max() if len(t) else 0) + window, window)
    edges = edges if len(edges) > 1 else np.array([0.0, window])
    counts, _ = np.histogram(t, bins=edges)
    mid = edges[:-1] + window / 2
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.4, 0.6])
    fig.add_scatter(
        **histogram_outline(edges, counts / window),
        fill="tozeroy",
        line=dict(color=color(0), width=1.5),
        name="arrivals",
        hovertemplate="from t=%{x:.0f} s: %{y:.2f} req/s<extra></extra>",
        row=1,
        col=1,
    )
    band = length_band(t, trace.requests["input_length"].to_numpy(), edges) if len(t) else np.full((1, 3), np.nan)
    band_x, band_y = band_outline(mid, band[:, 0], band[:, 2], window)
    fig.add_scatter(
        x=band_x,
        y=band_y,
        mode="lines",
        line=dict(width=0, color=color(1)),
        fill="toself",
        fillcolor="rgba(230,159,0,0.25)",
        hoverinfo="skip",
        showlegend=False,
        row=2,
        col=1,
    )
    fig.add_scatter(
        x=mid,
        y=band[:, 1],
        mode="lines",
        line=dict(color=color(1), dash="solid"),
        name="median input length",
        customdata=np.column_stack([band[:, 0], band[:, 2], counts]),
        hovertemplate="t=%{x:.0f} s: median %{y:,.0f} tokens, 10–90%: %{customdata[0]:,.0f}–"
        "%{customdata[1]:,.0f} (%{customdata[2]} requests)<extra></extra>",
        row=2,
        col=1,
    )
    fig.update_yaxes(title_text=f"requests/s ({window:g} s bins)", row=1, col=1)
    fig.update_yaxes(title_text="input tokens (median, 10–90%)", type="log", row=2, col=1)
    fig.update_xaxes(title_text="time since first arrival (s)", row=2, col=1)
    fig.update_layout(showlegend=False, height=520, title="Arrivals and prompt lengths")
    return fig


def fig_popularity(counts: np.ndarray) -> go.Figure:
    """Accesses per block against its popularity rank, log-log (a straight line is Zipf-like),
    drawn through log-spaced ranks: every rank from 1 to the last, at a few hundred points."""
    counts = np.sort(np.asarray(counts))[::-1]
    ranks = np.arange(1, len(counts) + 1)
    keep = (
        np.unique(np.geomspace(1, len(counts), num=min(len(counts), POPULARITY_POINTS)).astype(int)) - 1
        if len(counts)
        else np.zeros(0, dtype=int)
    )
    fig = go.Figure(
        go.Scatter(
            x=ranks[keep],
            y=counts[keep],
            mode="lines",
            line=dict(color=color(0), shape="hv"),
            name="blocks",
            hovertemplate="rank %{x:,}: %{y:,} accesses<extra></extra>",
        )
    )
    fig.add_hline(y=1, line_dash="dot", line_color="gray")
    # On a log axis an annotation's y is log10 of the value: 0 puts the label on the line at 1 access.
    fig.add_annotation(
        x=0.01,
        xref="paper",
        y=0,
        yref="y",
        text="accessed once (never reused)",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
    )
    fig.update_xaxes(type="log", dtick=1, title_text="block rank (most accessed first)")
    fig.update_yaxes(type="log", dtick=1, title_text="accesses")
    fig.update_layout(title="Block popularity", height=420, showlegend=False)
    return fig


def fig_reuse_distances(distances: np.ndarray) -> go.Figure:
    """The LRU hit ratio as a function of capacity (top), read off the stack distances, and their
    histogram in log bins (bottom). First accesses never hit and cap the curve."""
    d = np.asarray(distances)
    reused = np.sort(d[d >= 0])
    total = max(len(d), 1)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4])
    if len(reused):
        top = max(int(reused[-1]) + 2, 2)
        cap = np.unique(np.geomspace(1, top, num=200).astype(np.int64))
        fig.add_scatter(
            x=cap,
            y=lru_curve(d, cap) / total,
            mode="lines",
            line_color=color(1),
            name="LRU hit ratio",
            hovertemplate="%{x:,} blocks: %{y:.1%}<extra></extra>",
            row=1,
            col=1,
        )
        fig.add_hline(
            y=len(reused) / total,
            line_dash="dash",
            line_color=color(2),
            row=1,
            col=1,
            annotation_text=f"infinite cache {len(reused) / total:.1%}",
            annotation_position="top left",
        )
        edges = np.unique(np.concatenate([[0], np.geomspace(1, top, num=40).astype(np.int64)]))
        counts, _ = np.histogram(reused, bins=edges)
        starts = edges.astype(float)
        starts[0] = 0.5  # a log axis has no 0: distance 0 is drawn from 0.5 to 1
        fig.add_scatter(
            **histogram_outline(starts, counts / total),
            fill="tozeroy",
            line=dict(color=color(0), width=1.5),
            name="share of accesses",
            customdata=np.append(edges[1:] - 1, edges[-1:] - 1),
            hovertemplate="distance up to %{customdata:,}: %{y:.2%}<extra></extra>",
            row=2,
            col=1,
        )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_xaxes(title_text="cache capacity = stack distance (blocks)", row=2, col=1)
    fig.update_yaxes(title_text="LRU hit ratio", tickformat=".0%", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="accesses", tickformat=".1%", row=2, col=1)
    fig.update_layout(title="Reuse distance: the LRU curve in one pass", height=520, showlegend=False)
    return fig
