"""Figures the browser draws once: a styled figure made cheap for Streamlit's second draw.

Streamlit mounts a changed figure with ``Plotly.newPlot`` and right after calls ``Plotly.react``
with a deep copy of it. ``redraw_free`` writes the figure so plotly.js can tell that copy changed
nothing; ``styled`` is the kvviz look (``kvviz.common.style.style_figure``) with its template
written in by it, which is how every figure the app caches is made. The core's style knows nothing of the browser.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from kvviz.common.style import TEMPLATE, kvviz_look

REDRAW_FREE_REVISION = 1  # layout.datarevision: see redraw_free
SUBPLOT_KINDS = ("geo", "polar", "scene", "ternary")  # template parts that matter only where such subplots exist


def _under(default: object, own: object) -> object:
    """``own`` with ``default`` filled in wherever ``own`` has no value (dictionaries merged deeply)."""
    if own is None:
        return default
    if isinstance(default, dict) and isinstance(own, dict):
        return {**default, **{k: _under(default.get(k), v) for k, v in own.items()}}
    return own


def _fill(obj, defaults: dict) -> None:
    """Set each of ``defaults``' properties on the plotly object ``obj`` where it has no value of its own."""
    own = obj.to_plotly_json()
    for key, value in defaults.items():
        if key != "type":
            obj[key] = _under(value, own.get(key))


def _fill_axis(axis, defaults: dict) -> None:
    """``_fill`` for an axis. An axis line colour or width set on the axis itself turns its line on
    in plotly.js; set by a template it does not, so the line stays off unless the axis asks for it."""
    implied = axis.showline is None and axis.linecolor is None and axis.linewidth is None
    _fill(axis, defaults)
    if implied and "showline" not in defaults:
        axis.showline = False


def _arrays_as(props: dict, as_what) -> dict:
    """``as_what(array)`` for each numpy array among ``props`` (nested); nothing else."""
    out = {}
    for key, value in props.items():
        if isinstance(value, np.ndarray):
            out[key] = as_what(value)
        elif isinstance(value, dict) and (inner := _arrays_as(value, as_what)):
            out[key] = inner
    return out


def _leaves(props: dict, path: tuple[str, ...] = ()):
    for key, value in props.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key), value


def _keep_numbers_typed(trace, own: dict) -> None:
    """Put back the numpy arrays of numbers that a string property (``text``, ``hovertext``) has
    turned into strings as lists ("1.0", "2.0"): as a typed array plotly.js shows them as numbers
    (1, 2) and a texttemplate can format them. Such a trace keeps its second draw."""
    now = trace.to_plotly_json()
    for path, array in _leaves(_arrays_as(own, lambda a: a)):
        value = now
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        if array.dtype.kind in "iufb" and len(value) and isinstance(value[0], str):
            trace.update({"_".join(path): array})


@functools.cache
def _template_json(name: str) -> str:
    return json.dumps(pio.templates[name].to_plotly_json())


def redraw_free(fig: go.Figure, template: str | None = None) -> go.Figure:
    """Make the browser's second draw of a newly shown figure cost nothing (in place).

    Streamlit mounts a changed figure with ``Plotly.newPlot`` and right after calls ``Plotly.react``
    with a deep copy of it; plotly.js redraws the whole figure again unless it can tell nothing
    changed, which it can only when the layout has a ``datarevision`` (then arrays are not compared
    by identity), no ``template`` (compared by identity) and the arrays are plain JSON lists, not
    plotly.py's base64 typed arrays. Measured in Chromium: the copy redrew ~1,500 DOM nodes of the
    eviction hit curve, now none. So the template's values are written into the figure itself
    (where the figure has none: the same look) and the template is dropped. The revision can stay
    constant: Streamlit keys a figure by its spec, so different data is always a new plot.

    ``template`` names the plotly template written in, in place of the figure's own."""
    template = fig.layout.template.to_plotly_json() if template is None else json.loads(_template_json(template))
    fig.layout.template = None
    layout = template.get("layout", {})
    present = fig.layout.to_plotly_json()
    for key, value in layout.items():
        if key in ("xaxis", "yaxis"):
            (fig.for_each_xaxis if key == "xaxis" else fig.for_each_yaxis)(lambda axis, v=value: _fill_axis(axis, v))
        elif key in ("annotationdefaults", "shapedefaults"):
            for item in fig.layout.annotations if key == "annotationdefaults" else fig.layout.shapes:
                _fill(item, value)
        elif key not in SUBPLOT_KINDS or key in present:
            fig.layout[key] = _under(value, present.get(key))
    seen: dict[str, int] = {}
    for trace in fig.data:
        defaults = template.get("data", {}).get(trace.type)
        if defaults:
            _fill(trace, defaults[seen.get(trace.type, 0) % len(defaults)])
        seen[trace.type] = seen.get(trace.type, 0) + 1
        own = trace.to_plotly_json()
        if lists := _arrays_as(own, np.ndarray.tolist):
            trace.update(_arrays_as(own, lambda _: None))  # plotly keeps an equal value's array: unset it first
            trace.update(lists)
            _keep_numbers_typed(trace, own)
    fig.layout.datarevision = REDRAW_FREE_REVISION
    return fig


def styled(fig: go.Figure, presenter: bool = False) -> go.Figure:
    """``fig`` in the kvviz look for a laptop or (``presenter``) a projector, drawn once in the browser (in place)."""
    return redraw_free(kvviz_look(fig, presenter), TEMPLATE)
