"""The cluster page's figure builders, without a browser."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kvviz.mooncake.conductor import PAPER_FIG8_TTFT_S, ConductorConfig, compare
from kvviz.mooncake.figures import (
    ECDF_POINTS,
    MAX_DRAWN,
    drawn_loads,
    fig_admission,
    fig_fig8,
    fig_policy_multiples,
    fig_schedule_bars,
    fig_timeline,
    fig_totals,
    fig_ttft_ecdf,
    smoothed,
)
from kvviz.mooncake.overload import POLICIES, ClusterConfig, poisson_arrivals, simulate, summary_table
from kvviz.traces.workload import WorkloadConfig, generate


@pytest.fixture(scope="module")
def runs():
    config = ClusterConfig()
    arrivals = poisson_arrivals(config, 2.0, 300, 0)
    return {p: [simulate(arrivals, config, p)] for p in POLICIES}


def test_smoothing_is_a_trailing_mean():
    loads = pd.DataFrame({"time_s": np.arange(5.0), "prefill_load": [0, 1, 2, 3, 4.0], "decode_load": 1.0})
    out = smoothed(loads, seconds=2)
    assert out["prefill_load"].tolist() == [0, 0.5, 1.5, 2.5, 3.5]


def test_drawn_loads_keep_one_smoothed_sample_per_window():
    loads = pd.DataFrame({"time_s": np.arange(1200.0), "prefill_load": np.arange(1200.0) % 7, "decode_load": 1.0})
    drawn = drawn_loads(loads)
    assert drawn["time_s"].tolist() == list(np.arange(0.0, 1200.0, 10.0))
    assert drawn["prefill_load"].tolist() == smoothed(loads)["prefill_load"].iloc[::10].tolist()


def test_a_long_span_is_drawn_in_at_most_max_drawn_points_each_the_mean_of_its_window():
    n = 100_000  # a month replayed: 13-s samples
    loads = pd.DataFrame({"time_s": np.arange(n) * 13.0, "prefill_load": np.arange(n) % 7.0, "decode_load": 1.0})
    drawn = drawn_loads(loads)
    every = round(13.0 * (n - 1) / MAX_DRAWN / 13.0)  # samples per window: the span over MAX_DRAWN
    assert len(drawn) <= MAX_DRAWN and every > 1
    assert drawn["time_s"].tolist() == loads["time_s"].iloc[::every].tolist()
    last = drawn.index[-1]  # a trailing mean over the window before it, not over 10 s
    assert drawn["prefill_load"].iloc[-1] == pytest.approx(
        loads["prefill_load"].iloc[last - every + 1 : last + 1].mean()
    )
    assert drawn["prefill_load"].iloc[-1] != pytest.approx(loads["prefill_load"].iloc[last])


def test_overload_figures(runs):
    fig = fig_timeline(runs["early"][0])
    assert [t.name for t in fig.data] == [
        "Prefill load",
        "Decode load",
        "Admitted",
        "Rejected on arrival",
        "Rejected after prefill (wasted)",
    ]
    admitted = fig.data[2].y[:-1]  # the last window's value repeats at its end
    assert sum(admitted) == runs["early"][0].totals["arrived"] - runs["early"][0].totals["rejected_early"]
    assert fig.data[2].y[-1] == admitted[-1] and len(fig.data[2].x) == len(runs["early"][0].timeline) + 1
    assert len(fig_policy_multiples({p: r[0] for p, r in runs.items()}).data) == 2 * len(POLICIES)
    table = summary_table(runs)
    totals = fig_totals(table)
    assert list(totals.data[0].y) == table["completed"].tolist()


def test_scheduling_figures_put_the_paper_beside_the_run():
    results = compare(generate(WorkloadConfig(requests=300, seed=1)), ConductorConfig(instances=4))
    fig = fig_fig8(results)
    assert list(fig.data[0].y) == list(PAPER_FIG8_TTFT_S.values())
    assert list(fig.data[1].y) == [results[k].mean_ttft_s for k in PAPER_FIG8_TTFT_S]
    assert len(fig_ttft_ecdf(results).data) == 4
    bars = fig_schedule_bars(results)
    assert list(bars.data[0].y) == [r.hit_ratio for r in results.values()]


def test_ttft_distribution_is_thinned_to_quantiles_that_keep_both_ends():
    results = compare(generate(WorkloadConfig(requests=3000, seed=1)), ConductorConfig(instances=4))
    for curve, r in zip(fig_ttft_ecdf(results).data, results.values()):
        assert len(curve.x) <= ECDF_POINTS < len(r.ttft_s)
        assert curve.x[0] == r.ttft_s.min() and curve.x[-1] == r.ttft_s.max() and curve.y[-1] == 1.0
        assert np.all(np.diff(curve.x) >= 0) and np.all(np.diff(curve.y) > 0)
        # each point is the exact share of requests at or below its TTFT (ties counted up to the last)
        share = np.searchsorted(np.sort(r.ttft_s), curve.x, side="right") / len(r.ttft_s)
        assert np.all(curve.y <= share + 1e-12)


def test_the_admission_figure_accounts_for_every_request_by_outcome():
    trace = generate(WorkloadConfig(requests=300, seed=1))
    results = compare(trace, ConductorConfig(instances=2, speedup=10.0, reject=True))
    fig = fig_admission(results)
    served, late, ttft, tbt, labels = fig.data
    assert [b.name for b in (served, late, ttft, tbt)] == [
        "Served within both SLOs",
        "Served, an SLO missed",
        "Rejected: TTFT over its SLO",
        "Rejected: TBT over its SLO",
    ]
    totals = np.sum([b.y for b in (served, late, ttft, tbt)], axis=0)
    assert totals.tolist() == [300] * 4
    assert list(ttft.y) == [r.rejected(1) for r in results.values()] and sum(ttft.y) > 0
    assert list(late.y) == [0] * 4  # an admitted request meets the TTFT it was admitted on
    assert list(labels.text) == [f"goodput {r.goodput_rps:.2f} req/s" for r in results.values()]
    ecdf = fig_ttft_ecdf(results)
    assert ecdf.layout.title.text == "Time to first token of the admitted requests"
    assert [len(c.y) and c.y[-1] for c in ecdf.data] == [1.0] * 4
    assert [len(c.x) for c in ecdf.data] == [int(r.accepted.sum()) for r in results.values()]
