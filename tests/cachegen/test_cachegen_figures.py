"""The CacheGen page's figure builders, without a browser."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.cachegen import figures as figs
from kvviz.cachegen import streaming as S
from kvviz.common.style import INK, PALETTE
from tests.cachegen.cachegen_setup import real_setup


def test_timeline_has_a_row_per_policy_with_bars_coloured_by_configuration():
    setup = real_setup()
    bw = S.step_trace()
    runs = S.run_all(setup, bw, ("paper", "quant8", "oracle"))
    fig = figs.fig_timeline(setup, runs, bw)
    labels = [a.text.split(" · ")[0] for a in fig.layout.annotations]
    assert {"<b>paper rule</b>", "<b>8-bit quant</b>", "<b>oracle (bound)</b>"} <= set(labels)
    titles = [a.text for a in fig.layout.annotations if " · " in a.text]
    assert [("✓ met" in t, f"TTFT {float(r.ttft[0]):.2f} s" in t) for t, r in zip(titles, runs)] == [
        (bool(r.met[0]), True) for r in runs
    ]  # the TTFT in words, beside no line
    bars = [t for t in fig.data if t.type == "bar"]
    colors = figs.config_colors(setup.config_names)
    assert all(b.marker.color == colors[b.name] for b in bars)
    assert sum(len(b.x) for b in bars) == 3 * setup.n_chunks  # every chunk of every row
    slo_lines = [s for s in fig.layout.shapes if s.x0 == setup.slo_s]
    assert len(slo_lines) == 3
    ttft = [t for t in fig.data if t.type == "scatter" and t.name.startswith("TTFT")]
    assert [round(t.x[0], 6) for t in ttft] == [round(float(r.ttft[0]), 6) for r in runs]


def test_violation_figure_one_line_per_policy_on_a_log_slo_axis():
    setup = real_setup()
    sweep = S.slo_sweep(setup, S.iid_traces(50, setup.n_chunks), np.array([0.5, 1.0, 2.0]))
    fig = figs.fig_violation(sweep, 1.0)
    names = {t.name for t in fig.data if t.showlegend}
    assert len(names) == len(S.policy_names(setup))
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.shapes[0].x0 == 1.0  # the SLO, in data units
    used = {t.line.color for t in fig.data}
    assert used <= set(PALETTE) | {INK} and len(used) == len(names)  # Okabe–Ito, one colour per policy


def test_pareto_has_each_variant_and_the_baselines():
    rows = [
        {"variant": v, "level": lv, "bits_per_value": 1.0 + lv, "weighted_error": 10.0**-lv}
        for v in ("CacheGen (paper)", "CacheGen (artifact)")
        for lv in (1, 2, 3)
    ]
    rows += [
        {"variant": "8-bit quantization", "level": None, "bits_per_value": 8.25, "weighted_error": 1e-4},
        {"variant": "zlib on fp16", "level": None, "bits_per_value": 14.8, "weighted_error": 1e-8},
    ]
    fig = figs.fig_pareto(pd.DataFrame(rows))
    assert [t.name for t in fig.data] == ["CacheGen (paper)", "CacheGen (artifact)", "fixed-width quantization"]
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.shapes[0].x0 == 14.8


def test_quality_figure_has_kl_on_a_log_axis_and_accuracy_beside_it():
    rows = [
        {"variant": v, "level": lv, "bits_per_value": 1.0 + lv, "kl": 10.0**-lv, "accuracy": 1 - 0.01 / (lv + 1)}
        for v in ("CacheGen (paper)", "quantization only (no AC)")
        for lv in (0, 1, 2)
    ]
    rows += [{"variant": "8-bit quantization", "level": None, "bits_per_value": 8.25, "kl": 1e-9, "accuracy": 1.0}]
    fig = figs.fig_quality(pd.DataFrame(rows))
    assert [t.name for t in fig.data if t.showlegend] == [
        "CacheGen (paper)",
        "quantization only (no AC)",
        "fixed-width quantization",
    ]
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type != "log"
    assert list(fig.data[0].y) == [1.0, 0.1, 0.01]


def _sweep(quality_b: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "policy": ["paper", "paper", "quant8", "quant8"],
            "slo_s": [0.5, 1.0, 0.5, 1.0],
            "violation_rate": [0.4, 0.1, 0.6, 0.2],
            "mean_quality": [1.0, 1.0, quality_b, 1.0],
        }
    )


def test_a_quality_that_tells_no_policy_apart_is_not_drawn_and_the_title_says_why():
    fig = figs.fig_violation(_sweep(1.0), 1.0)
    assert {t.yaxis for t in fig.data} == {"y"}  # one panel: the violations
    assert "Quality is 100% for every policy" in fig.layout.title.text


def test_a_quality_that_differs_gets_its_panel():
    fig = figs.fig_violation(_sweep(0.9), 1.0)
    assert {t.yaxis for t in fig.data} == {"y", "y2"}
    assert [a.text for a in fig.layout.annotations] == ["SLO-violation rate", "mean quality proxy"]
    assert fig.layout.title.text is None
