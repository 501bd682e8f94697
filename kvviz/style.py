"""One look for every figure: fonts, colours, line styles, log ticks, and a presenter mode.

Figures are built by plain functions that return plotly figures; ``style_figure`` is applied
once, by the page, so the same figure can be drawn for a laptop or for the back row.

Colours follow Okabe & Ito's colour-blind-safe set ("Color Universal Design", 2008), with their
yellow darkened to read on white. Each colour is paired with one dash style and one marker
symbol (``series_style``), and ``style_figure`` gives every line drawn in palette colour ``i``
the dash and marker of ``i``: two policies stay apart in greyscale print, for a colour-blind
student, and on a washed-out projector.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import plotly.graph_objects as go

PALETTE: tuple[str, ...] = (
    "#0072b2",  # blue
    "#e69f00",  # orange
    "#009e73",  # bluish green
    "#d55e00",  # vermillion
    "#cc79a7",  # reddish purple
    "#56b4e9",  # sky blue
    "#a08c00",  # Okabe-Ito yellow, darkened for a white background
    "#6e6e6e",  # grey
    "#332288",  # indigo (Tol), a ninth for the rare figure that needs one
)
DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "5px,3px,1px,3px",
                           "10px,4px", "2px,6px")
SYMBOLS: tuple[str, ...] = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "star",
                            "pentagon", "cross")
INK = "#262730"
GRID = "#e6e8ee"
FONT = "Source Sans Pro, Helvetica, Arial, sans-serif"
BASE_PX, PRESENTER_PX = 14, 22  # figure text at a laptop and on a projector at 1920 × 1080
PRESENTER_GROWTH = 1.25         # presenter figures are this much taller


@dataclass(frozen=True)
class SeriesStyle:
    """What tells one series from another: a colour, a dash style and a marker symbol."""

    color: str
    dash: str
    symbol: str

    def line(self, **extra) -> dict:
        """``line=`` for a plotly scatter."""
        return dict(color=self.color, dash=self.dash, **extra)

    def marker(self, **extra) -> dict:
        """``marker=`` for a plotly scatter."""
        return dict(color=self.color, symbol=self.symbol, **extra)


def color(i: int) -> str:
    """The i-th colour of the shared palette (cycling)."""
    return PALETTE[i % len(PALETTE)]


def series_style(i: int) -> SeriesStyle:
    """The i-th series' colour, dash and marker (cycling together)."""
    return SeriesStyle(color(i), DASHES[i % len(DASHES)], SYMBOLS[i % len(SYMBOLS)])


def series_styles(names: Iterable[str]) -> dict[str, SeriesStyle]:
    """One style per name, in order: the same list of policies always gets the same styles."""
    return {name: series_style(i) for i, name in enumerate(names)}


_INDEX = {c: i for i, c in enumerate(PALETTE)}


def _palette_index(value: object) -> int | None:
    return _INDEX.get(value.lower()) if isinstance(value, str) else None


# ---------------------------------------------------------------- log axes with magnitudes

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def magnitude_label(value: float) -> str:
    """A tick label that carries its magnitude: 0.05, 1, 20, 500, 2k, 50k, 1M, 2×10⁻⁴."""
    if value >= 1e3:
        for scale, suffix in _SI:
            if value >= scale:
                return f"{value / scale:g}{suffix}"
    if value >= 1e-3:
        return f"{value:,.12g}"
    exponent = math.floor(math.log10(value))
    mantissa = round(value / 10 ** exponent, 6)
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if mantissa == 1 else f"{mantissa:g}×{power}"


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values for a log axis over [low, high]: 1-2-5 for up to ~3 decades, then decades,
    then every k-th decade, so about 4-10 labels show. Ticks a little past the data are kept
    (plotly pads its range and draws only the visible ones). Empty when fewer than two would show:
    so narrow a range reads best with plotly's own linear-looking ticks (11, 12, 13), full values too."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    span = math.log10(high / low)
    if span <= 0.7:
        mantissas: tuple[float, ...] = (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)
    elif span <= 3.3:
        mantissas = (1, 2, 5)
    else:
        mantissas = (1,)
    step = max(1, math.ceil(span / 9))
    ticks = [m * 10.0 ** e for e in range(first - first % step, last + 1, step) for m in mantissas]
    return ticks if sum(low <= t <= high for t in ticks) >= 2 else []


def _positive(values: object) -> Iterator[float]:
    if values is None or isinstance(values, str):
        return
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f > 0:
            yield f


def _axis_values(fig: go.Figure, letter: str, name: str) -> list[float]:
    """Every positive finite coordinate plotted against axis ``name`` ("x", "x2", ...)."""
    short = name.replace("axis", "")
    out: list[float] = []
    for trace in fig.data:
        if (getattr(trace, f"{letter}axis", None) or letter) != short:
            continue
        values = list(_positive(getattr(trace, letter, None)))
        base = list(_positive(getattr(trace, "base", None))) if trace.type == "bar" else []
        if base and len(base) == len(values):
            values = [b + v for b, v in zip(base, values, strict=True)] + base
        out += values
    for shape in fig.layout.shapes:
        if getattr(shape, f"{letter}ref", None) == short:
            out += _positive([getattr(shape, f"{letter}0", None), getattr(shape, f"{letter}1", None)])
    return out


def _label_log_axis(fig: go.Figure, axis, letter: str) -> None:
    """A log axis plotly would label with bare digits between decades ("5, 2, 10, 5, 2") gets
    explicit ticks whose every label carries its magnitude. Axes with their own tickvals, or a
    dtick other than plotly's defaults, are left as their figure set them."""
    if axis.type != "log" or axis.tickvals is not None or axis.dtick not in (None, "D1", "D2", 1):
        return
    if axis.range is not None and None not in axis.range:
        low, high = (10.0 ** r for r in sorted(axis.range))
    else:
        values = _axis_values(fig, letter, axis.plotly_name)
        if not values:
            return
        low, high = min(values), max(values)
        if low == high:
            low, high = low / 2, high * 2
    ticks = log_ticks(low, high)
    if not ticks:
        axis.dtick = None
        return
    axis.update(tickmode="array", tickvals=ticks, ticktext=[magnitude_label(t) for t in ticks], dtick=None)


# ---------------------------------------------------------------- the style itself

def _series_looks(trace, presenter: bool) -> None:
    """Line width and marker size for the screen; dash and symbol from the trace's palette colour."""
    mode = trace.mode or "lines"
    index = _palette_index(trace.line.color) if "lines" in mode else None
    if index is None and "markers" in mode:
        index = _palette_index(trace.marker.color)
    if "lines" in mode:
        if trace.line.width is None:
            trace.line.width = 4 if presenter else 2.5
        if trace.line.dash is None and index is not None:
            trace.line.dash = DASHES[index % len(DASHES)]
    if "markers" in mode:
        if trace.marker.size is None:
            trace.marker.size = 11 if presenter else 7
        if trace.marker.symbol is None and index is not None:
            trace.marker.symbol = SYMBOLS[index % len(SYMBOLS)]


def _text_at_least(font, size: int) -> None:
    """Raise an explicitly set small font (annotation, text label) to ``size``; unset ones inherit."""
    if font.size is not None and font.size < size:
        font.size = size


def style_figure(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """Apply the kvviz look in place and return the figure.

    Presenter mode sets every text in the figure — title, axis titles, ticks, legend, hover,
    annotations (subplot titles too), text labels, colour bars — to at least 20 px, thickens
    lines and markers and makes a figure of set height 25% taller, so it reads on a projector. Axes grow their margins to fit their
    labels (``automargin``), so no tick label or title is clipped.
    """
    base = PRESENTER_PX if presenter else BASE_PX
    if presenter and fig.layout.height:   # room for the bigger labels (a long axis title on a short row)
        fig.layout.height = round(fig.layout.height * PRESENTER_GROWTH)
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=base, color=INK),
        title_font=dict(size=base + 4),
        legend=dict(font=dict(size=base - 1), bgcolor="rgba(255,255,255,0.7)"),
        hoverlabel=dict(font_size=base - 1),
        colorway=list(PALETTE),
        margin=dict(l=20, r=20, t=(base * 3 + 10) if fig.layout.title.text else 30, b=20),
    )
    axis_look = dict(gridcolor=GRID, zerolinecolor=GRID, automargin=True, title_font=dict(size=base + 1),
                     tickfont=dict(size=base - 1), title_standoff=base // 2)
    fig.update_xaxes(**axis_look)
    fig.update_yaxes(**axis_look)
    fig.for_each_xaxis(lambda axis: _label_log_axis(fig, axis, "x"))
    fig.for_each_yaxis(lambda axis: _label_log_axis(fig, axis, "y"))
    smallest = base - 2
    if presenter:
        for annotation in fig.layout.annotations:
            _text_at_least(annotation.font, smallest)
    for trace in fig.data:
        if trace.type in ("scatter", "scattergl"):
            _series_looks(trace, presenter)
        if presenter and hasattr(trace, "textfont"):
            _text_at_least(trace.textfont, smallest)
    return fig
