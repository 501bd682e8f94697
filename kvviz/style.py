"""One look for every figure: fonts, colours, sizes, and a presenter mode for projectors.

Figures are built by plain functions that return plotly figures; ``style_figure`` is applied
once, by the page, so the same figure can be drawn for a laptop or for the back row.
"""

from __future__ import annotations

import plotly.graph_objects as go

PALETTE: tuple[str, ...] = (
    "#1f5fbf", "#e8743b", "#19a979", "#ed4a7b", "#945ecf", "#13a4b4", "#525df4", "#bf399e", "#6c8893",
)
INK = "#262730"
GRID = "#e6e8ee"
FONT = "Source Sans Pro, Helvetica, Arial, sans-serif"


def color(i: int) -> str:
    """The i-th colour of the shared palette (cycling)."""
    return PALETTE[i % len(PALETTE)]


def _tidy_log_ticks(axis) -> None:
    """A log axis left to plotly labels every digit between decades; keep 1, 2 and 5."""
    if axis.type == "log" and axis.dtick is None and axis.tickvals is None:
        axis.dtick = "D2"


def style_figure(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """Apply the kvviz look in place and return the figure.

    Presenter mode enlarges fonts, lines and markers so a figure reads on a projector.
    """
    base = 20 if presenter else 14
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=base, color=INK),
        title_font=dict(size=base + 4),
        legend=dict(font=dict(size=base - 1), bgcolor="rgba(255,255,255,0.7)"),
        hoverlabel=dict(font_size=base - 1),
        colorway=list(PALETTE),
        margin=dict(l=60, r=20, t=60 if fig.layout.title.text else 30, b=50),
    )
    fig.update_xaxes(gridcolor=GRID, zerolinecolor=GRID, title_font=dict(size=base + 1), tickfont=dict(size=base - 1))
    fig.update_yaxes(gridcolor=GRID, zerolinecolor=GRID, title_font=dict(size=base + 1), tickfont=dict(size=base - 1))
    fig.for_each_xaxis(_tidy_log_ticks)
    fig.for_each_yaxis(_tidy_log_ticks)
    width = 4 if presenter else 2.5
    for trace in fig.data:
        if trace.type in ("scatter", "scattergl"):
            mode = trace.mode or "lines"
            if "lines" in mode and (trace.line.width is None):
                trace.line.width = width
            if "markers" in mode and trace.marker.size is None:
                trace.marker.size = 10 if presenter else 7
    return fig
