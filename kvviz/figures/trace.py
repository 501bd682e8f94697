"""Figures of the Trace page: arrivals and lengths over time, block popularity, reuse distances."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.reuse import lru_curve
from kvviz.style import color
from kvviz.trace import Trace

MAX_POINTS = 20_000  # per scatter trace; more is slow in a browser and shows nothing new


def _window_s(span_s: float) -> float:
    """A readable histogram window: about 60 bars over the trace, rounded to 1/2/5 x 10^k s."""
    raw = max(span_s / 60, 1e-3)
    exp = 10 ** np.floor(np.log10(raw))
    return float(min((m * exp for m in (1, 2, 5, 10) if m * exp >= raw), default=10 * exp))


def fig_arrivals(trace: Trace) -> go.Figure:
    """Requests per second over time (top) and each request's input length at its arrival (bottom)."""
    t = trace.requests["timestamp"].to_numpy() / 1000.0
    t = t - t.min() if len(t) else t
    window = _window_s(float(t.max()) if len(t) else 1.0)
    edges = np.arange(0, (t.max() if len(t) else 0) + window, window)
    counts, edges = np.histogram(t, bins=edges if len(edges) > 1 else 1)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.4, 0.6])
    fig.add_bar(x=edges[:-1] + window / 2, y=counts / window, width=window, marker_color=color(0),
                name="arrivals", hovertemplate="t=%{x:.0f} s: %{y:.2f} req/s<extra></extra>", row=1, col=1)
    step = max(1, len(t) // MAX_POINTS)
    fig.add_scattergl(x=t[::step], y=trace.requests["input_length"].to_numpy()[::step], mode="markers",
                      marker=dict(size=4, color=color(1), opacity=0.5), name="input length",
                      hovertemplate="t=%{x:.1f} s: %{y:,} tokens<extra></extra>", row=2, col=1)
    fig.update_yaxes(title_text=f"requests/s ({window:g} s bins)", row=1, col=1)
    fig.update_yaxes(title_text="input tokens", type="log", row=2, col=1)
    fig.update_xaxes(title_text="time since first arrival (s)", row=2, col=1)
    fig.update_layout(showlegend=False, height=520, title="Arrivals and prompt lengths")
    return fig


def fig_popularity(counts: np.ndarray) -> go.Figure:
    """Accesses per block against its popularity rank, log-log (a straight line is Zipf-like)."""
    counts = np.sort(np.asarray(counts))[::-1]
    ranks = np.arange(1, len(counts) + 1)
    keep = np.unique(np.geomspace(1, len(counts), num=min(len(counts), 2000)).astype(int)) - 1 \
        if len(counts) else np.zeros(0, dtype=int)
    fig = go.Figure(go.Scatter(x=ranks[keep], y=counts[keep], mode="lines+markers", line_color=color(0),
                               marker=dict(size=4), name="blocks",
                               hovertemplate="rank %{x:,}: %{y:,} accesses<extra></extra>"))
    fig.add_hline(y=1, line_dash="dot", line_color="gray")
    # On a log axis an annotation's y is log10 of the value: 0 puts the label on the line at 1 access.
    fig.add_annotation(x=0.01, xref="paper", y=0, yref="y", text="accessed once (never reused)", showarrow=False,
                       xanchor="left", yanchor="bottom")
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
        fig.add_scatter(x=cap, y=lru_curve(d, cap) / total, mode="lines",
                        line_color=color(1), name="LRU hit ratio",
                        hovertemplate="%{x:,} blocks: %{y:.1%}<extra></extra>", row=1, col=1)
        fig.add_hline(y=len(reused) / total, line_dash="dash", line_color=color(2), row=1, col=1,
                      annotation_text=f"infinite cache {len(reused) / total:.1%}", annotation_position="top left")
        edges = np.unique(np.concatenate([[0], np.geomspace(1, top, num=40).astype(np.int64)]))
        counts, _ = np.histogram(reused, bins=edges)
        centers = np.sqrt(np.maximum(edges[:-1], 0.5) * edges[1:])
        fig.add_bar(x=centers, y=counts / total, width=np.diff(edges), marker_color=color(0),
                    name="share of accesses", customdata=np.stack([edges[:-1], edges[1:] - 1], axis=1),
                    hovertemplate="distance %{customdata[0]:,}–%{customdata[1]:,}: %{y:.2%}<extra></extra>",
                    row=2, col=1)
    fig.update_xaxes(type="log", dtick=1)
    fig.update_xaxes(title_text="cache capacity = stack distance (blocks)", row=2, col=1)
    fig.update_yaxes(title_text="LRU hit ratio", tickformat=".0%", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="accesses", tickformat=".1%", row=2, col=1)
    fig.update_layout(title="Reuse distance: the LRU curve in one pass", height=520, showlegend=False)
    return fig
