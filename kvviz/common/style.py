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
import re
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
DASHES: tuple[str, ...] = (
    "solid",
    "dash",
    "dot",
    "dashdot",
    "longdash",
    "longdashdot",
    "5px,3px,1px,3px",
    "10px,4px",
    "2px,6px",
)
SYMBOLS: tuple[str, ...] = (
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "x",
    "triangle-down",
    "star",
    "pentagon",
    "cross",
)
INK = "#262730"
GRID = "#e6e8ee"
FONT = "Source Sans Pro, Helvetica, Arial, sans-serif"
BASE_PX, PRESENTER_PX = 14, 22  # figure text at a laptop and on a projector at 1920 × 1080
PRESENTER_GROWTH = 1.25  # presenter figures are this much taller
TEMPLATE = "plotly_white"  # plotly's template under the kvviz look


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


# ---------------------------------------------------------------- numbers a person reads


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
    mantissa = round(value / 10**exponent, 6)
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
    ticks = [m * 10.0**e for e in range(first - first % step, last + 1, step) for m in mantissas]
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
        low, high = (10.0**r for r in sorted(axis.range))
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


# ---------------------------------------------------------------- margins that fit the labels

# Plotly's ``automargin`` grows a margin that is too small for an axis's labels (or a legend, a
# colour bar) and then lays the whole figure out a second time: ~10% of the browser's time on a
# rerun. Margins estimated here already fit the usual labels, so that pass rarely runs;
# automargin stays on as the safety net for a label longer than the estimate.
CHAR_EM = 0.62  # a digit or letter of the figure font, in font sizes (generous)
NUMBER_CHARS = 5  # plotly's own tick labels on a linear axis: "0.025", "12.5k", "100%"
NARROW_PX = 900  # the narrowest figure the margins are sized for: a laptop's main column beside the sidebar
SIDE_MARGINS_PX = 150  # of that width, what the left and right margins take about
LEGEND_ROW_PX = 750  # width a horizontal legend fills before it wraps, in a figure that narrow
ROTATE_FILL = 0.7  # plotly turns category labels 30° when a label is wider than about their spacing
CARTESIAN = ("scatter", "scattergl", "bar", "heatmap", "histogram", "box", "violin", "contour")


def _texts(values: object) -> list[str]:
    if values is None or isinstance(values, str):
        return []
    return [v for v in values if isinstance(v, str)]


def _tick_labels(fig: go.Figure, axis, letter: str, name: str) -> list[str]:
    """The axis's own tick texts, else the category names its traces put on it (none on a numeric axis)."""
    if axis.ticktext is not None:
        return [str(t) for t in axis.ticktext]
    short = name.replace("axis", "")
    return [
        w
        for tr in fig.data
        if (getattr(tr, f"{letter}axis", None) or letter) == short
        for w in _texts(getattr(tr, letter, None))
    ]


def _tick_chars(fig: go.Figure, axis, letter: str, name: str) -> int:
    """How many characters the longest tick label of this axis will have, about."""
    labels = _tick_labels(fig, axis, letter, name)
    if labels:
        return max(len(line) for label in labels for line in _text_lines(label))  # a <br> label by its longest line
    return 1 if axis.ticktext is not None else NUMBER_CHARS + (axis.tickprefix is not None)


def _title_px(axis) -> float:
    text = axis.title.text
    if not text:
        return 0.0
    size = axis.title.font.size or 14
    return (text.count("<br>") + 1) * size * 1.25 + (axis.title.standoff or 0)


def _axis_margins(fig: go.Figure) -> dict[str, float]:
    """Left, right and bottom room for the tick labels and titles of the axes that carry data."""
    used = {
        (getattr(tr, f"{letter}axis", None) or letter).replace(letter, f"{letter}axis", 1)
        for tr in fig.data
        if tr.type in CARTESIAN
        for letter in "xy"
    }
    room = {"l": 0.0, "r": 0.0, "b": 0.0}
    for name in used:
        axis = fig.layout[name]
        if axis.visible is False or axis.showticklabels is False:
            continue
        tick = axis.tickfont.size or 14
        if name.startswith("y"):
            side = "r" if axis.side == "right" else "l"
            need = _tick_chars(fig, axis, "y", name) * CHAR_EM * tick + 10 + _title_px(axis)
        else:
            side, need = "b", _x_labels_px(fig, axis, name, tick) + _title_px(axis)
            room["r"] = max(room["r"], _tick_chars(fig, axis, "x", name) * CHAR_EM * tick / 2 + 10)
        room[side] = max(room[side], need)
    return room


def _x_labels_px(fig: go.Figure, axis, name: str, tick: float) -> float:
    """Height of an x axis's tick labels below the plot: one line, or category labels turned when
    the narrowest figure would not fit them side by side. plotly.js turns them 30° when the tick
    spacing is at least √3 × 1.25 font sizes, else 90° (its ``autotickangles`` [0, 30, 90])."""
    labels = _tick_labels(fig, axis, "x", name)
    lines = max((len(_text_lines(label)) for label in labels), default=1)  # a label broken with <br>
    level = tick * (1.75 + LINE_EM * (lines - 1)) + 7
    if not labels or axis.tickangle not in (None, "auto"):
        return level
    low, high = axis.domain or (0, 1)
    spacing = (high - low) * (NARROW_PX - SIDE_MARGINS_PX) / len(set(labels))
    widest = _tick_chars(fig, axis, "x", name) * CHAR_EM * tick
    if widest <= ROTATE_FILL * spacing:
        return level
    return widest / 2 + tick * 0.87 + 16 if spacing >= math.sqrt(3) * 1.25 * tick else widest + 16


def _legend_entries(fig: go.Figure) -> list[tuple[str, str]]:
    """The legend's entries as (group, name), or none when the figure shows no legend. An entry
    outside any ``legendgroup`` is a group of its own."""
    entries = [
        (tr.legendgroup or f"#{i}", tr.name)
        for i, tr in enumerate(fig.data)
        if getattr(tr, "showlegend", None) is not False and getattr(tr, "name", None)
    ]
    shown = fig.layout.showlegend if fig.layout.showlegend is not None else len(entries) > 1
    return entries if shown else []


def _legend_rows(widths: dict[str, list[float]]) -> tuple[int, int]:
    """Lines of entries and rows of groups of a horizontal legend. Plotly stacks a group's entries
    one under another and sets groups side by side, wrapping them at the figure's width."""
    lines, group_rows, used, tallest = 0, 1, 0.0, 0
    for entries in widths.values():
        width = max(entries)
        if used and used + width > LEGEND_ROW_PX:
            lines, group_rows, used, tallest = lines + tallest, group_rows + 1, 0.0, 0
        used, tallest = used + width, max(tallest, len(entries))
    return lines + tallest, group_rows


def _legend_room(fig: go.Figure) -> dict[str, float]:
    """Room for a legend outside the plot: on the right (plotly's default place, 2% of the width
    away), or in rows below a horizontal one placed under the axis (``y`` < 0)."""
    legend, entries = fig.layout.legend, _legend_entries(fig)
    size = legend.font.size or 14
    widths: dict[str, list[float]] = {}
    for group, name in entries:
        widths.setdefault(group, []).append(len(name) * CHAR_EM * size + 46)
    if not entries:
        return {}
    if legend.orientation != "h":
        return {} if legend.x is not None and legend.x < 1 else {"r": max(map(max, widths.values())) + 80}
    if legend.y is None or legend.y >= 0:
        return {}
    lines, group_rows = _legend_rows(widths)
    height = lines * (size * 1.45 + 6) + 10 * group_rows
    anchor = legend.yanchor or "top"  # plotly's own default for a horizontal legend, whatever its y
    if anchor == "auto":
        anchor = "bottom" if legend.y <= 1 / 3 else "top"
    below = {"top": height, "middle": height / 2}.get(anchor, 0)
    top = fig.layout.margin.t or 0
    drop = -legend.y
    return {"b": (drop * ((fig.layout.height or 450) - top) + below) / (1 + drop) + 12}


def _colorbar_right(fig: go.Figure, base: int) -> float:
    """Room for a colour bar (a heatmap's, an icicle's marker scale) on the right."""
    bars = [
        tr
        for tr in fig.data
        if (tr.type == "heatmap" and tr.showscale is not False)
        or (getattr(getattr(tr, "marker", None), "showscale", None) is True)
    ]
    return (base * 8 + 40) if bars else 0.0


def fitted_margins(fig: go.Figure, base: int) -> dict[str, int]:
    """Margins (px) that hold the figure's axis labels, legend and colour bar as styled."""
    room, legend = _axis_margins(fig), _legend_room(fig)
    right = max(room["r"], legend.get("r", 0.0), _colorbar_right(fig, base))
    bottom = max(room["b"], legend.get("b", 0.0))
    return {"l": round(max(20, room["l"])), "r": round(max(20, right)), "b": round(max(20, bottom))}


# ---------------------------------------------------------------- labels above the plot

LINE_EM = 1.3  # a line of figure text, in font sizes
TITLE_PAD_PX = 10  # from the figure's top edge to its title
MULTILINE_RISE = 0.75  # of a line, how far plotly.js raises a title per line past its first (measured 0.7)
TITLE_SHARE = 0.85  # of the figure's width, what a title may fill (plotly starts it 5% in)
HTML_TAG = re.compile(r"<[^>]+>")
LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _text_lines(text: str) -> list[str]:
    """An annotation's lines as drawn: split at ``<br>``, tags removed."""
    return [HTML_TAG.sub("", line) for line in LINE_BREAK.split(text)]


@dataclass
class _Label:
    """An annotation above the plot as drawn at the narrowest figure: its left and right edge (px
    from the plot's left edge) and how far one unit of its x coordinate moves it (px)."""

    annotation: object
    left: float
    right: float
    px_per_unit: float


def _above(annotation) -> bool:
    """Whether an annotation sits on the plot's top edge, written upwards (a subplot title, a run's label)."""
    return (
        annotation.yref == "paper"
        and annotation.y is not None
        and annotation.y >= 1
        and annotation.yanchor == "bottom"
        and not annotation.showarrow
        and bool(annotation.text)
    )


def _x_frame(fig: go.Figure, xref: str) -> tuple[float, float, float, float] | None:
    """``(low, high, domain start, domain width)`` of the axis an annotation's x is written in
    (log10 of the values on a log axis, as plotly writes an annotation's x there)."""
    if xref == "paper":
        return 0.0, 1.0, 0.0, 1.0
    axis = fig.layout[xref.replace("x", "xaxis", 1)]
    if axis.range is not None and None not in axis.range:
        low, high = sorted(axis.range)
    else:
        values = _axis_values(fig, "x", axis.plotly_name) if axis.type == "log" else []
        if axis.type != "log" or not values:
            return None
        low, high = math.log10(min(values)), math.log10(max(values))
    start, end = axis.domain or (0, 1)
    return (low, high, start, end - start) if high > low else None


def _label_box(fig: go.Figure, annotation, base: int, plot_px: float) -> _Label | None:
    frame = _x_frame(fig, annotation.xref or "paper")
    if frame is None or annotation.x is None:
        return None
    low, high, start, width = frame
    px_per_unit = width * plot_px / (high - low)
    at = (start + width * (annotation.x - low) / (high - low)) * plot_px
    text_px = max(map(len, _text_lines(annotation.text))) * CHAR_EM * (annotation.font.size or base)
    anchor = annotation.xanchor or "auto"
    if anchor == "auto":
        share = at / plot_px
        anchor = (
            "center" if annotation.xref != "paper" or 1 / 3 < share < 2 / 3 else "left" if share <= 1 / 3 else "right"
        )
    left = at - {"left": 0.0, "center": text_px / 2, "right": text_px}[anchor]
    return _Label(annotation, left, left + text_px, px_per_unit)


def stack_rows(spans: list[tuple[float, float]], gap: float) -> list[int]:
    """A row for each ``(left, right)`` span, the lowest in which it is at least ``gap`` clear of
    every span already there (spans taken from left to right): no two in a row overlap."""
    rows: list[int] = [0] * len(spans)
    ends: list[float] = []
    for i in sorted(range(len(spans)), key=lambda i: spans[i][0]):
        left, right = spans[i]
        row = next((r for r, end in enumerate(ends) if end + gap <= left), len(ends))
        if row == len(ends):
            ends.append(right)
        ends[row] = right
        rows[i] = row
    return rows


def _font_px(annotation, base: int) -> float:
    """An annotation's font size as drawn: its own, else the figure's; presenter mode raises it to ``base - 2``."""
    return max(annotation.font.size or base, base - 2)


def _stack_above(fig: go.Figure, base: int, plot_px: float) -> float:
    """Set the labels above the plot in rows so that none overlaps another at the narrowest figure,
    each kept inside the plot's width (a row as tall as their largest font and most lines); returns the height
    (px) they take above the plot, their own shifts included (0 when there are none)."""
    labels = [b for a in fig.layout.annotations if _above(a) and (b := _label_box(fig, a, base, plot_px))]
    for label in labels:  # inside the plot's width: a label past its edge is cut or meets the legend
        shift = max(0.0, -label.left) - max(0.0, label.right - plot_px)
        if shift:
            label.annotation.x += shift / label.px_per_unit
            label.left, label.right = label.left + shift, label.right + shift
    rows = stack_rows([(b.left, b.right) for b in labels], gap=base / 2)
    lines = max((len(_text_lines(b.annotation.text)) for b in labels), default=1)
    line = max((_font_px(b.annotation, base) for b in labels), default=base) * LINE_EM * lines  # a row's height
    for label, row in zip(labels, rows, strict=True):
        if row:
            label.annotation.yshift = (label.annotation.yshift or 0) + row * line
    return max(((b.annotation.yshift or 0) + line for b in labels), default=0.0)


def _open_tags(line: str) -> list[str]:
    """The inline tags (``sup``, ``b``…) opened in ``line`` and not closed in it, in order."""
    tags: list[str] = []
    for closing, name in re.findall(r"<(/?)(\w+)[^>]*>", line):
        if name == "br":
            continue
        if closing:
            tags = tags[: len(tags) - 1 - tags[::-1].index(name)] if name in tags else tags
        else:
            tags.append(name)
    return tags


def wrap_line(text: str, chars: int) -> str:
    """``text`` broken at spaces (``<br>``) into lines of at most ``chars`` characters where it can;
    a line that already breaks (``<br>``) keeps its breaks, and each of its parts is wrapped alone.
    A tag open where a line breaks (``<sup>``) is closed there and opened again on the next line."""
    lines = []
    for part in text.split("<br>"):
        line = ""
        for word in part.split(" "):
            if line and len(HTML_TAG.sub("", f"{line} {word}")) > chars:
                tags = _open_tags(line)
                lines.append(line + "".join(f"</{t}>" for t in reversed(tags)))
                line = "".join(f"<{t}>" for t in tags) + word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def _wrap_title(fig: go.Figure, base: int) -> bool:
    """Break a title too long for the narrowest figure into lines (plotly never wraps one, it
    runs past the figure's edge); whether it did."""
    title = fig.layout.title.text
    if not title:
        return False
    width = (fig.layout.width or NARROW_PX) * TITLE_SHARE
    wrapped = wrap_line(title, int(width / (CHAR_EM * (base + 4))))
    fig.layout.title.text = wrapped
    return wrapped != title


def _top_margin(fig: go.Figure, base: int) -> int:
    """Room above the plot for the title and the labels above it (``_stack_above``); the
    title is then pinned to the figure's top edge, so the rows below it cannot meet it."""
    width = (fig.layout.width or NARROW_PX) - (fig.layout.margin.l or 0) - (fig.layout.margin.r or 0)
    above = _stack_above(fig, base, max(width, 100.0))
    wrapped = _wrap_title(fig, base)
    title = fig.layout.title.text
    if not title:
        return max(30, round(above + 10))
    if not above and not wrapped:
        return base * 3 + 10
    lines, line = title.count("<br>") + 1, (base + 4) * LINE_EM
    # plotly.js raises a top-anchored title of several lines by part of a line: lowered back by as much
    pad = TITLE_PAD_PX + (lines - 1) * line * MULTILINE_RISE
    fig.layout.title.update(yref="container", y=1, yanchor="top", pad_t=round(pad))
    return round(pad + lines * line + above + 8)


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


def _update(layout: go.Layout, name: str, values: dict) -> None:
    """``layout[name].update(values)``, made on a copy that is then set whole: plotly checks and
    records every property path an update inside a figure sets, several times the work of the copy."""
    part = layout[name]
    part = type(part)(part)
    part.update(values)
    layout[name] = part


def style_figure(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """Apply the kvviz look in place, over plotly's ``TEMPLATE``, and return the figure.

    Presenter mode sets every text in the figure — title, axis titles, ticks, legend, hover,
    annotations (subplot titles too), text labels, colour bars — to at least 20 px, thickens
    lines and markers and makes a figure of set height 25% taller, so it reads on a projector. The
    margins are sized for the labels (``fitted_margins``), and axes still grow them to fit a longer
    label (``automargin``), so no tick label or title is clipped.
    """
    fig.layout.template = TEMPLATE
    return kvviz_look(fig, presenter)


def kvviz_look(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """``style_figure`` without setting the template (in place): for a caller that writes the
    template's values into the figure itself, as the app's figures do, sparing plotly's validated
    copy of the whole template for every figure. Nothing here reads the template."""
    base = PRESENTER_PX if presenter else BASE_PX
    if presenter and fig.layout.height:  # room for the bigger labels (a long axis title on a short row)
        fig.layout.height = round(fig.layout.height * PRESENTER_GROWTH)
    looks = dict(
        font=dict(family=FONT, size=base, color=INK),
        title=dict(font=dict(size=base + 4)),
        legend=dict(font=dict(size=base - 1), bgcolor="rgba(255,255,255,0.7)"),
        hoverlabel=dict(font=dict(size=base - 1)),
        margin=dict(t=(base * 3 + 10) if fig.layout.title.text else 30),
    )
    axis_look = dict(
        gridcolor=GRID,
        zerolinecolor=GRID,
        automargin=True,
        title=dict(font=dict(size=base + 1), standoff=base // 2),
        tickfont=dict(size=base - 1),
    )
    looks |= {axis.plotly_name: axis_look for axis in (*fig.select_xaxes(), *fig.select_yaxes())}
    for name, look in looks.items():
        _update(fig.layout, name, look)
    fig.layout.colorway = list(PALETTE)
    fig.for_each_xaxis(lambda axis: _label_log_axis(fig, axis, "x"))
    fig.for_each_yaxis(lambda axis: _label_log_axis(fig, axis, "y"))
    _update(fig.layout, "margin", fitted_margins(fig, base))
    fig.layout.margin.t = _top_margin(fig, base)
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
