"""The ledger's figures: labels a curve cannot strike through, log axes with magnitudes."""

from __future__ import annotations

from functools import cache

import plotly.graph_objects as go
import pytest

from kvviz.common import hardware as hw
from kvviz.common.style import style_figure
from kvviz.ledger import figures as figs
from kvviz.ledger import ledger

H100 = hw.Compute(hw.GPUS["h100"], hw.DEFAULT_MFU)
CONTEXTS = [256, 1024, 8192, 65536, 1_048_576]


@cache
def _figures() -> dict[str, go.Figure]:
    models = [hw.MODELS[k] for k in ledger.BREAKEVEN_MODELS]
    links = {k: hw.LINKS[k] for k in ledger.DEFAULT_LINKS}
    m = hw.MODELS["llama-3-8b"]
    econ = ledger.economics_curve(models, hw.Compute(hw.GPUS["h100"], 0.735, 8), CONTEXTS, ledger.Prices())
    return {
        "size": figs.fig_size(ledger.size_curve(models, CONTEXTS), 8000, 40),
        "breakeven": figs.fig_breakeven(ledger.breakeven_table(models, H100, CONTEXTS), links),
        "load": figs.fig_load_vs_recompute(ledger.load_or_recompute(m, H100, 8000, links), 8000, m.name),
        "economics": figs.fig_economics(econ),
    }


def assert_labels_on_boxes(figure: go.Figure) -> None:
    """Every reference line is labelled on a white box (a curve goes behind it), no trace carries text a
    curve could cross, and the log axes' tick labels are magnitudes, each once."""
    fig = style_figure(go.Figure(figure), presenter=True)
    labels = [a for a in fig.layout.annotations]
    assert labels, "every reference line is labelled"
    assert all(a.bgcolor and a.bgcolor.startswith("rgba(255,255,255") for a in labels)  # a curve goes behind
    assert not any("text" in (getattr(t, "mode", None) or "") for t in fig.data)  # no trace text a curve crosses
    log_axes = [ax for ax in (fig.layout.xaxis, fig.layout.yaxis) if ax.type == "log"]
    for ax in log_axes:
        if ax.tickvals is not None:  # set by kvviz.common.style: 1-2-5 or decades
            assert all(any(c.isdigit() for c in t) for t in ax.ticktext)
            assert len(set(ax.ticktext)) == len(ax.ticktext)


@pytest.mark.parametrize("name", ["size", "breakeven", "load", "economics"])
def test_reference_labels_sit_on_a_box_and_log_axes_carry_magnitudes(name):
    assert_labels_on_boxes(_figures()[name])


def test_close_link_labels_go_to_opposite_ends():
    fig = _figures()["breakeven"]
    sides = [a.xanchor for a in fig.layout.annotations]
    assert sides == ["left", "right", "left", "right", "left"]  # pcie5 51 and rdma 40 GB/s apart
