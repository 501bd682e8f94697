"""kvviz.common.style: series told apart by more than colour, log ticks that carry their magnitude,
projector-size text, and CacheBlend's accuracy figure at chunk lengths that cut no record."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plotly.subplots import make_subplots

from kvviz.cacheblend import figures as blend_figs
from kvviz.common.numbers import readable
from kvviz.common.style import (
    BASE_PX,
    DASHES,
    LINE_EM,
    MULTILINE_RISE,
    PALETTE,
    PRESENTER_PX,
    SYMBOLS,
    TITLE_PAD_PX,
    color,
    log_ticks,
    magnitude_label,
    series_style,
    series_styles,
    stack_rows,
    style_figure,
    wrap_line,
)


def parse_label(label: str) -> float:
    """The number a tick label names (the inverse of magnitude_label)."""
    for suffix, scale in (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        if label.endswith(suffix):
            return float(label[:-1]) * scale
    if "10" in label and any(c in label for c in "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"):
        mantissa, _, power = label.rpartition("10")
        exponent = int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
        return (float(mantissa.rstrip("×")) if mantissa else 1.0) * 10.0**exponent
    return float(label.replace(",", ""))


def test_eight_series_differ_in_colour_dash_and_marker():
    styles = [series_style(i) for i in range(8)]
    for attr in ("color", "dash", "symbol"):
        assert len({getattr(s, attr) for s in styles}) == 8
    assert series_style(len(PALETTE)).color == PALETTE[0]
    assert series_styles(["lru", "lfu"])["lfu"] == series_style(1)
    assert series_style(2).line(width=3) == {"color": color(2), "dash": DASHES[2], "width": 3}


@pytest.mark.parametrize(
    "value,label",
    [
        (1, "1"),
        (2, "2"),
        (50, "50"),
        (500, "500"),
        (1000, "1k"),
        (20_000, "20k"),
        (5e6, "5M"),
        (1e9, "1G"),
        (0.5, "0.5"),
        (0.02, "0.02"),
        (0.001, "0.001"),
        (1e-4, "10⁻⁴"),
        (2e-5, "2×10⁻⁵"),
    ],
)
def test_magnitude_labels(value, label):
    assert magnitude_label(value) == label


def test_log_ticks_are_125_within_three_decades_and_decades_beyond():
    assert log_ticks(1, 1000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
    assert log_ticks(1, 1e6) == [10.0**e for e in range(7)]
    assert log_ticks(1, 1e30)[:3] == [1, 1e4, 1e8]


@given(st.floats(-8, 10), st.floats(0.05, 25))
def test_log_tick_labels_are_distinct_and_name_their_value(exponent, decades):
    low, high = 10.0**exponent, 10.0 ** (exponent + decades)
    ticks = log_ticks(low, high)
    labels = [magnitude_label(t) for t in ticks]
    assert not ticks or sum(low <= t <= high for t in ticks) >= 2  # empty: plotly's linear-looking ticks
    assert decades < 0.7 or ticks
    assert len(set(labels)) == len(labels)
    for tick, label in zip(ticks, labels, strict=True):
        assert math.isclose(parse_label(label), tick, rel_tol=1e-6)


def log_figure() -> go.Figure:
    fig = make_subplots(rows=1, cols=2)
    fig.add_scatter(x=[10, 100, 5000], y=[1, 2, 3], line_color=color(0), row=1, col=1)
    fig.add_scatter(x=[1, 2, 3], y=[0.002, 0.3, 7], line_color=color(3), mode="lines+markers", row=1, col=2)
    fig.add_bar(x=["a", "b"], y=[3, 4], base=[1, 1], marker_color=color(1), row=1, col=2)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    return fig


def test_every_log_axis_gets_labels_with_magnitudes():
    fig = style_figure(log_figure())
    x, y2 = fig.layout.xaxis, fig.layout.yaxis2
    assert list(x.ticktext) == ["10", "20", "50", "100", "200", "500", "1k", "2k", "5k", "10k", "20k", "50k"]
    assert [parse_label(t) for t in y2.ticktext] == pytest.approx(list(y2.tickvals))
    assert list(y2.ticktext) == ["0.001", "0.01", "0.1", "1", "10"]  # 3.5 decades: decades only
    assert fig.layout.yaxis.tickvals is None  # linear axes keep plotly's ticks


def test_a_figure_that_sets_its_own_ticks_keeps_them():
    fig = go.Figure(go.Scatter(x=[1, 1e4], y=[1, 2]))
    fig.update_xaxes(type="log", tickvals=[1, 100, 10_000], ticktext=["one", "hundred", "10k"])
    assert list(style_figure(fig).layout.xaxis.ticktext) == ["one", "hundred", "10k"]


def test_palette_colour_brings_its_dash_and_marker():
    fig = style_figure(log_figure())
    first, second = fig.data[0], fig.data[1]
    assert first.line.dash == DASHES[0] and second.line.dash == DASHES[3] and second.marker.symbol == SYMBOLS[3]
    fig = go.Figure(go.Scatter(x=[1, 2], y=[1, 2], line=dict(color=color(1), dash="dot")))
    assert style_figure(fig).data[0].line.dash == "dot"  # an explicit dash wins


def test_presenter_text_is_projector_size_everywhere():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))  # subplot titles: 16 px annotations
    fig.add_scatter(x=[1, 2], y=[1, 2], mode="markers+text", text=["a", "b"], textfont=dict(size=12), row=1, col=1)
    fig.add_annotation(text="note", x=1, y=1, font=dict(size=11))
    fig.update_layout(title="A title", height=400)
    style_figure(fig, presenter=True)
    assert fig.layout.height == 500
    floor = PRESENTER_PX - 2
    assert fig.layout.font.size == PRESENTER_PX and fig.layout.title.font.size > PRESENTER_PX
    assert fig.layout.legend.font.size >= floor and fig.layout.hoverlabel.font.size >= floor
    assert fig.layout.xaxis.tickfont.size >= floor and fig.layout.yaxis2.title.font.size >= floor
    assert all(a.font.size >= floor for a in fig.layout.annotations)
    assert fig.data[0].textfont.size >= floor
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin


def blend_table(chunk_len: int) -> pd.DataFrame:
    """What blend.evaluate returns: at an even chunk length no record is cut, so acc_cut is NaN."""
    cut = np.nan if chunk_len % 2 == 0 else 0.4
    rows = [
        ("full_prefill", 1.0, 1.0 if chunk_len % 2 else cut),
        ("full_reuse", 0.0, cut),
        ("prefix", 0.8, cut),
        ("cacheblend", 0.0, cut),
        ("cacheblend", 0.2, cut),
        ("random", 0.0, cut),
        ("random", 0.2, cut),
    ]
    return pd.DataFrame(
        [
            {"method": m, "ratio": r, "acc_cut": c, "acc_uncut": 1.0, "acc_all": 1.0 if np.isnan(c) else c}
            for m, r, c in rows
        ]
    )


@pytest.mark.parametrize("chunk_len", [2, 4, 6])
def test_cacheblend_accuracy_at_even_chunk_lengths_says_why_the_cut_panel_is_empty(chunk_len):
    fig = blend_figs.accuracy_vs_ratio(blend_table(chunk_len), 1 / 12)
    for shape in fig.layout.shapes:  # the old figure drew guides at y = NaN ("None", a stray line)
        assert all(v is not None and math.isfinite(v) for v in (shape.y0, shape.y1)), shape
    notes = [a for a in fig.layout.annotations if "No record is cut" in (a.text or "")]
    assert len(notes) == 1 and notes[0].xref == "x domain"
    assert sum(s.yref == "y2" and s.y0 == 1.0 for s in fig.layout.shapes) == 2  # full prefill/reuse guides


def test_cacheblend_accuracy_at_odd_chunk_lengths_has_no_note():
    fig = blend_figs.accuracy_vs_ratio(blend_table(5), 1 / 12)
    assert not [a for a in fig.layout.annotations if "No record is cut" in (a.text or "")]


def test_margins_are_sized_for_the_labels_so_automargin_has_nothing_to_grow():
    from kvviz.common.style import CHAR_EM, fitted_margins

    plain = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    titled = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    titled.update_yaxes(title_text="hit ratio")
    labels = go.Figure(go.Heatmap(x=[1, 2], y=["a rather long capacity label", "b"], z=[[1, 2], [3, 4]]))
    m = {
        name: style_figure(fig).layout.margin
        for name, fig in (("plain", plain), ("titled", titled), ("labels", labels))
    }
    assert m["titled"].l > m["plain"].l >= 20  # room for the title beside the ticks
    assert m["labels"].l >= len("a rather long capacity label") * CHAR_EM * 13  # category labels are measured
    assert m["labels"].r > m["plain"].r  # the colour bar's room
    legend = go.Figure([go.Scatter(x=[1, 2], y=[1, 2], name="Belady (optimal)"), go.Scatter(x=[1], y=[1], name="LRU")])
    assert style_figure(legend).layout.margin.r >= len("Belady (optimal)") * CHAR_EM * 13
    below = go.Figure(legend).update_layout(legend=dict(orientation="h", y=-0.2, yanchor="top"), height=500)
    assert style_figure(below).layout.margin.b > m["plain"].b and style_figure(below).layout.margin.r < 100
    big = style_figure(go.Figure(titled), presenter=True).layout.margin
    assert big.l > m["titled"].l and big.b > m["titled"].b  # projector-size labels need more room
    assert fitted_margins(go.Figure(go.Icicle(labels=["a"], parents=[""])), 14) == {"l": 20, "r": 20, "b": 20}


def test_margins_follow_plotly_defaults_for_legends_below_and_turned_category_labels():
    from kvviz.common.style import fitted_margins

    two = [go.Scatter(x=[1, 2], y=[1, 2], name="prefix cache"), go.Scatter(x=[1], y=[1], name="block cache")]
    below = go.Figure(two).update_layout(
        legend=dict(orientation="h", y=-0.2), height=500
    )  # plotly anchors it by its top
    anchored = go.Figure(two).update_layout(legend=dict(orientation="h", y=-0.2, yanchor="top"), height=500)
    assert fitted_margins(below, 13)["b"] == fitted_margins(anchored, 13)["b"] > 100
    grouped = go.Figure(anchored).add_scatter(x=[1], y=[1], name="difference, LRU", legendgroup="diff")
    grouped.add_scatter(x=[1], y=[1], name="difference, FIFO", legendgroup="diff")  # a group stacks its entries
    assert fitted_margins(grouped, 13)["b"] > fitted_margins(anchored, 13)["b"] + 20
    names = ["Random", "Load-balancing", "Cache-aware", "KVCache-centric"]
    side = (
        make_subplots(rows=1, cols=2)
        .add_bar(x=names, y=[1, 2, 3, 4], row=1, col=1)
        .add_bar(x=names, y=[1, 2, 3, 4], row=1, col=2)
    )
    wide = go.Figure(go.Bar(x=names, y=[1, 2, 3, 4]))
    short = make_subplots(rows=1, cols=2).add_bar(x=list("abcd"), y=[1, 2, 3, 4], row=1, col=1)
    assert fitted_margins(side, 13)["b"] >= len("KVCache-centric") * 0.62 * 13 / 2 + 13  # turned 30°: half its length
    assert fitted_margins(wide, 13)["b"] == fitted_margins(short, 13)["b"] < 40  # one line of labels
    crowded = go.Figure(go.Bar(x=[f"token {i:02d}" for i in range(40)], y=[1] * 40))  # no room to turn 30°
    assert fitted_margins(crowded, 13)["b"] >= len("token 00") * 0.62 * 13  # upright: their whole length


def test_a_category_label_broken_with_br_is_as_wide_as_its_longest_line_and_as_tall_as_its_lines():
    from kvviz.common.style import fitted_margins

    broken = go.Figure(go.Bar(x=["Early<br>rejection", "Oracle<br>(true lengths)"], y=[1, 2]))
    one = go.Figure(go.Bar(x=["Early", "Oracle"], y=[1, 2]))
    # level, not turned (the whole text with its tag read as one line looked too long to stay level); ticks 14 px
    assert fitted_margins(broken, 13)["b"] == fitted_margins(one, 13)["b"] + round(1.3 * 14)
    assert fitted_margins(broken, 13)["r"] == round(len("(true lengths)") * 0.62 * 14 / 2 + 10)


@settings(max_examples=50)
@given(st.lists(st.tuples(st.floats(0, 900), st.floats(1, 300)), max_size=12), st.floats(0, 20))
def test_labels_stacked_in_rows_never_overlap_in_a_row(starts_widths, gap):
    spans = [(left, left + width) for left, width in starts_widths]
    rows = stack_rows(spans, gap)
    for i, j in itertools.combinations(range(len(spans)), 2):
        if rows[i] == rows[j]:
            (a0, a1), (b0, b1) = sorted([spans[i], spans[j]])
            assert a1 + gap <= b0
    assert all(r == 0 or any(rows[k] == r - 1 for k in range(len(spans))) for r in rows)  # no empty row


def test_stack_rows_puts_a_label_in_the_lowest_row_it_fits():
    assert stack_rows([(0, 100), (50, 150), (120, 200), (160, 300)], gap=5) == [0, 1, 0, 1]


def test_run_labels_above_a_log_axis_go_in_rows_and_stay_inside_the_plot():
    fig = go.Figure(go.Scatter(x=[10, 100, 1000, 10_000], y=[0.1, 0.2, 0.3, 0.4]))
    fig.update_xaxes(type="log")
    fig.update_layout(title="Hit ratio")
    for x in (1.0, 1.2, 1.4, 4.0):  # three labels close together, one at the right edge
        fig.add_annotation(x=x, y=1, xref="x", yref="paper", yanchor="bottom", showarrow=False, text="<b>LFU</b> leads")
    style_figure(fig)
    shifts = [a.yshift or 0 for a in fig.layout.annotations]
    assert shifts == [0, BASE_PX * LINE_EM, 2 * BASE_PX * LINE_EM, 0]
    assert fig.layout.annotations[3].x < 4.0  # moved left, inside the plot
    assert fig.layout.title.yref == "container" and fig.layout.title.yanchor == "top"
    assert fig.layout.margin.t == round(((BASE_PX + 4) + 3 * BASE_PX) * LINE_EM + TITLE_PAD_PX + 8)


def test_a_long_title_is_wrapped_at_spaces_to_fit_the_narrowest_figure():
    assert wrap_line("aaa bbb ccc<br><sup>dd ee</sup>", 7) == "aaa bbb<br>ccc<br><sup>dd ee</sup>"
    assert wrap_line("<b>aa</b> <sup>bb cc dd</sup>", 5) == "<b>aa</b> <sup>bb</sup><br><sup>cc dd</sup>"
    title = "The trace's prefix tree: the 200 most shared of 4,120 prefixes (width = reusable tokens; click to zoom)"
    fig = style_figure(go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout=dict(title=title)))
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and " ".join(lines) == title
    pad = TITLE_PAD_PX + (BASE_PX + 4) * LINE_EM * MULTILINE_RISE  # the second line's rise made up
    assert fig.layout.title.pad.t == round(pad)
    assert fig.layout.margin.t == round(pad + 2 * (BASE_PX + 4) * LINE_EM + 8)
    short = style_figure(go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout=dict(title="Hit ratio")))
    assert short.layout.title.text == "Hit ratio" and short.layout.margin.t == BASE_PX * 3 + 10


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2490.3, "2,490"),
        (1.05e3, "1,050"),
        (327_680, "327,680"),
        (131.072, "131"),
        (0.728, "0.728"),
        (0.5, "0.5"),
        (9.996, "10"),
        (0.00012345, "0.000123"),
        (1_234_567.8, "1,230,000"),
        (-3.14159, "-3.14"),
        (0, "0"),
    ],
)
def test_readable_numbers_never_use_scientific_notation(value, text):
    assert readable(value) == text
