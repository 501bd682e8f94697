"""ui.kit.redraw: a styled figure's spec lets plotly.js tell that a deep copy of it changed nothing."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from kvviz.common.style import style_figure
from ui.kit.redraw import REDRAW_FREE_REVISION, redraw_free, styled


def spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def example() -> go.Figure:
    fig = make_subplots(rows=1, cols=2)
    fig.add_scatter(
        x=np.arange(4.0),
        y=np.array([1.0, np.nan, 3.0, 4.0]),
        customdata=np.c_[np.arange(4), np.arange(4)],
        marker=dict(symbol=np.array(["circle"] * 4)),
        mode="lines+markers",
        row=1,
        col=1,
    )
    fig.add_heatmap(z=np.eye(2), row=1, col=2)
    fig.add_hline(y=2, row=1, col=1)
    fig.add_annotation(text="note", x=1, y=1)
    return fig


def styled_spec() -> dict:
    return spec(styled(example()))


def test_styled_is_the_style_with_its_own_template_written_in():
    # styled skips setting the template that redraw_free would write in and drop: the same figure
    for presenter in (False, True):
        assert spec(styled(example(), presenter)) == spec(redraw_free(style_figure(example(), presenter)))


def test_no_template_a_revision_and_plain_arrays():
    out = styled_spec()
    assert "template" not in out["layout"] and out["layout"]["datarevision"] == REDRAW_FREE_REVISION
    scatter, heat = out["data"]
    assert scatter["x"] == [0.0, 1.0, 2.0, 3.0] and scatter["y"][1] is None  # NaN is a gap, as before
    assert scatter["customdata"] == [[0, 0], [1, 1], [2, 2], [3, 3]] and heat["z"] == [[1.0, 0.0], [0.0, 1.0]]
    assert scatter["marker"]["symbol"] == ["circle"] * 4
    assert "bdata" not in json.dumps(out)


def test_the_template_look_is_written_into_the_figure():
    white = pio.templates["plotly_white"].to_plotly_json()
    out = styled_spec()
    assert out["layout"]["plot_bgcolor"] == white["layout"]["plot_bgcolor"]
    for axis in ("xaxis", "xaxis2", "yaxis", "yaxis2"):
        assert out["layout"][axis]["linecolor"] == white["layout"]["xaxis"]["linecolor"]
        assert out["layout"][axis]["showline"] is False  # a template's line colour leaves the line off
        assert out["layout"][axis]["gridcolor"] != white["layout"]["xaxis"]["gridcolor"]  # the kvviz style wins
    assert out["layout"]["annotations"][0]["arrowcolor"] == white["layout"]["annotationdefaults"]["arrowcolor"]
    assert out["layout"]["shapes"][0]["line"]["color"] == white["layout"]["shapedefaults"]["line"]["color"]
    assert out["data"][1]["colorbar"]["outlinewidth"] == white["data"]["heatmap"][0]["colorbar"]["outlinewidth"]
    assert "polar" not in out["layout"] and "scene" not in out["layout"]  # no subplot kinds the figure lacks


def test_numbers_given_as_text_stay_numbers():
    # A list of numbers for a string property is turned into strings ("1.0"); a typed array is not.
    fig = go.Figure(
        go.Scatter(
            x=np.arange(3),
            y=np.arange(3.0),
            text=np.array([1.0, 2.5, 3.0]),
            hovertext=np.array([4, 5, 6]),
            mode="markers+text",
            texttemplate="%{text:.0f}",
        )
    )
    out = spec(styled(fig))["data"][0]
    assert out["x"] == [0, 1, 2]  # other arrays are plain lists
    assert "bdata" in out["text"] and "bdata" in out["hovertext"]  # typed: numbers in plotly.js
