"""The CacheBlend page's figure builders, without a browser."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.cacheblend import blend
from kvviz.cacheblend import figures as figs
from kvviz.cacheblend.model import Config, Model, init_params
from kvviz.cacheblend.record_world import sample_documents

MODEL = Model(Config(), init_params(Config(), 1))


def test_token_strip_rows_cuts_and_boundaries():
    view = blend.inspect_document(MODEL, sample_documents(1, 3), 5, 0.2)
    fig = figs.token_strip(view.texts, view.is_value, view.cut_value, 5, view.computed, view.scores, view.answers)
    heat = fig.data[0]
    assert list(heat.y) == ["document"] + [f"layer {i} recomputes" for i in range(4)] + [
        "answer: full reuse",
        "answer: CacheBlend",
        "answer: random",
    ]
    assert heat.z[0][5] == figs.CUT and heat.z[0][15] == figs.CUT and heat.z[0][0] == figs.KEY
    assert len(fig.layout.shapes) == 4  # boundaries at 5, 10, 15, 20
    cuts = [a for a in fig.layout.annotations if "cut" in a.text]
    assert [(a.x, a.xref) for a in cuts] == [(5, "x"), (15, "x")]  # over the values cut from their keys
    assert np.isnan(heat.z[5][0]) and heat.text[5][1] in ("✓", "✗")  # answers only at values
    assert heat.hovertext[5][1].startswith(f"full reuse: ? {view.texts[0]} → ")


def test_deviation_heatmap_shares_one_scale():
    view = blend.inspect_document(MODEL, sample_documents(1, 3), 5, 0.2)
    fig = figs.deviation_heatmap(view.texts, view.dev_reuse, view.dev_blend, 5)
    assert len(fig.data) == 2 and fig.data[0].zmax == fig.data[1].zmax == 1
    assert np.nanmax(np.asarray(fig.data[0].z, dtype=float)) == 1.0
    shown = [text for line in fig.data[0].customdata for text in line]  # the hover's deviations, as words
    assert fig.data[0].customdata[0][7] == "0 (float rounding)"  # layer 0's cache is exact
    assert not any("e-" in text or "e+" in text for text in shown)


def test_accuracy_figure_has_lines_for_swept_methods_and_points_for_the_rest():
    table = pd.DataFrame(
        [
            {"method": "full_prefill", "ratio": 1.0, "acc_cut": 1.0, "acc_uncut": 1.0, "acc_all": 1.0},
            {"method": "full_reuse", "ratio": 0.0, "acc_cut": 0.1, "acc_uncut": 1.0, "acc_all": 0.85},
            {"method": "cacheblend", "ratio": 0.1, "acc_cut": 0.6, "acc_uncut": 1.0, "acc_all": 0.9},
            {"method": "cacheblend", "ratio": 0.2, "acc_cut": 0.99, "acc_uncut": 1.0, "acc_all": 1.0},
        ]
    )
    fig = figs.accuracy_vs_ratio(table, 1 / 12)
    modes = {(t.name, t.xaxis): t.mode for t in fig.data}
    assert modes[("CacheBlend", "x")] == "lines+markers" and modes[("Full prefill", "x")] == "markers"
    assert [t.showlegend for t in fig.data if t.name == "CacheBlend"] == [True, False]


def test_controller_and_loss_figures():
    fig = figs.controller_figure("m", 20.0, {"NVMe": 10.0}, {"NVMe": 0.5}, 0.15)
    assert fig.data[-1].x[0] == 0.5 and fig.data[-1].y[0] == 10.0
    fig = figs.loss_curve(np.r_[np.full(300, 2.0), np.full(300, 0.01)].astype(np.float32))
    assert len(fig.data) == 3 and "step 3" in fig.layout.annotations[0].text  # the drop, near step 300
    assert fig.layout.xaxis.type == "log" and fig.data[0].x[0] == 1 and fig.data[2].x[0] == fig.data[2].x[1]
    assert len(figs.loss_curve(np.zeros(0)).data) == 0
