"""The Trace page's figures: binned, lines only, a few hundred points, and still the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.traces.figures import (
    POPULARITY_POINTS,
    band_outline,
    fig_arrivals,
    fig_popularity,
    fig_reuse_distances,
    histogram_outline,
    length_band,
)
from kvviz.traces.workload import WorkloadConfig, generate


def test_length_band_is_the_percentiles_of_each_bin_and_nan_where_none_arrived():
    t = np.array([0.0, 1.0, 2.0, 25.0, 30.0])
    lengths = np.array([10, 20, 30, 100, 300])
    band = length_band(t, lengths, np.array([0.0, 10.0, 20.0, 30.0]))
    assert band[0] == pytest.approx([12.0, 20.0, 28.0])  # numpy's linear percentiles of 10, 20, 30
    assert np.isnan(band[1]).all()  # nobody arrived in [10, 20)
    assert band[2] == pytest.approx([120.0, 200.0, 280.0])  # 25 s and 30 s: the last bin is closed


def test_the_band_is_one_closed_outline_per_run_of_bins_and_none_across_empty_bins():
    mid = np.array([5.0, 15.0, 25.0, 35.0, 45.0])
    low = np.array([1.0, 2.0, np.nan, np.nan, 4.0])
    high = np.array([10.0, 20.0, np.nan, np.nan, 40.0])
    x, y = band_outline(mid, low, high, window=10.0)
    assert x == [5.0, 15.0, 15.0, 5.0, 5.0, None, 42.5, 47.5, 47.5, 42.5, 42.5]
    assert y == [1.0, 2.0, 20.0, 10.0, 1.0, None, 4.0, 4.0, 40.0, 40.0, 4.0]
    assert band_outline(mid, np.full(5, np.nan), np.full(5, np.nan), 10.0) == ([], [])


def test_histogram_outline_is_one_step_line_over_the_bins():
    out = histogram_outline(np.array([0.0, 1.0, 3.0]), np.array([2.0, 5.0]))
    assert out["x"].tolist() == [0.0, 1.0, 3.0] and out["y"].tolist() == [2.0, 5.0, 5.0]
    assert out["line_shape"] == "hv" and out["mode"] == "lines"


@pytest.fixture(scope="module")
def trace():
    return generate(WorkloadConfig())


def test_trace_figures_draw_lines_from_a_few_hundred_points(trace):
    from kvviz.traces.reuse import stack_distances
    from kvviz.traces.stats import block_counts

    figs = [
        fig_arrivals(trace),
        fig_popularity(block_counts(trace.blocks)),
        fig_reuse_distances(stack_distances(trace.blocks)),
    ]
    for fig in figs:
        for tr in fig.data:
            assert tr.type == "scatter" and tr.mode == "lines", (fig.layout.title.text, tr.type, tr.mode)
            assert len(tr.x) <= 2 * POPULARITY_POINTS
    assert trace.n_requests > 1000  # so a marker per request would be > 1,000


def test_arrival_bins_hold_every_request_and_the_median_line_reads_the_lengths(trace):
    fig = fig_arrivals(trace)
    rate, median = fig.data[0], fig.data[2]
    width = np.diff(rate.x)[0]
    assert round(float(np.sum(np.asarray(rate.y)[:-1]) * width)) == trace.n_requests
    lengths = trace.requests["input_length"].to_numpy()
    assert np.nanmin(median.y) >= lengths.min() and np.nanmax(median.y) <= lengths.max()
    assert np.asarray(median.customdata)[:, 2].sum() == trace.n_requests


def test_popularity_keeps_the_top_and_the_last_rank(trace):
    from kvviz.traces.stats import block_counts

    counts = block_counts(trace.blocks)
    line = fig_popularity(counts).data[0]
    assert line.x[0] == 1 and line.y[0] == counts.max()
    assert line.x[-1] == len(counts) and line.y[-1] == counts.min()
    assert len(line.x) <= POPULARITY_POINTS
