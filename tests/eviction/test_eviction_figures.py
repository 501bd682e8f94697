"""Figure builders of the Eviction page, checked without a browser."""

from __future__ import annotations

from kvviz.common.style import INK
from kvviz.eviction.figures import curve_table, fig_hit_curve, fig_over_time, policy_color
from kvviz.eviction.grid import INFINITE
from kvviz.eviction.replay import hit_curve, simulate
from kvviz.traces.workload import WorkloadConfig, generate

TRACE = generate(WorkloadConfig(requests=200, seed=9))
CURVE = hit_curve(TRACE, ["lru", "s3fifo", "belady"], [100, 1000, 30_000, INFINITE])


def test_hit_curve_lines_bound_ceiling_and_paper_points():
    fig = fig_hit_curve(CURVE, paper=True, block_tokens=512)
    names = [t.name for t in fig.data]
    assert names[:3] == ["LRU", "S3-FIFO", "Belady (OPT)"]  # Belady last: it is drawn as the bound
    assert fig.data[2].line.dash == "dash" and fig.data[2].line.color == INK
    assert fig.layout.xaxis.type == "log" and "512 tokens" in fig.layout.xaxis.title.text
    assert len(fig.data[0].x) == 3  # the infinite capacity is the ceiling line
    assert any("infinite cache" in a.text for a in fig.layout.annotations)
    paper = [t for t in fig.data if t.name.startswith("Mooncake")]
    assert len(paper) == 3 and all(max(t.x) <= 30_000 for t in paper)  # only inside the curve's range
    assert fig.layout.yaxis.range[1] >= 0.48  # the paper's 0.48 at 30K stays visible


def test_prefix_axis_and_no_paper():
    fig = fig_hit_curve(CURVE, prefix=True)
    assert fig.layout.yaxis.title.text == "prefix hit ratio"
    assert not [t for t in fig.data if t.name.startswith("Mooncake")]


def test_over_time_one_line_per_policy_in_the_policy_colours():
    windows = {p: simulate(TRACE, p, 300).over_time() for p in ("lru", "belady")}
    fig = fig_over_time(windows, 300)
    assert [t.name for t in fig.data] == ["LRU", "Belady (OPT)"]
    assert fig.data[0].line.color == policy_color("lru") != policy_color("s3fifo")
    assert "300 blocks" in fig.layout.title.text


def test_curve_table_is_wide_with_infinity_last():
    table = curve_table(CURVE)
    assert list(table.columns) == ["capacity (blocks)", "LRU", "S3-FIFO", "Belady (OPT)"]
    assert table["capacity (blocks)"].tolist() == ["100", "1,000", "30,000", "∞"]


def test_paper_points_outside_the_range_are_left_out():
    curve = hit_curve(TRACE, ["lru"], [10, 20, INFINITE])
    fig = fig_hit_curve(curve, paper=True)
    assert not [t for t in fig.data if t.name.startswith("Mooncake")]


def test_capacity_ticks_are_a_short_one_two_five_ladder():
    fig = fig_hit_curve(CURVE)
    assert list(fig.layout.xaxis.tickvals) == [100, 200, 500, 1000, 2000, 5000, 10_000, 20_000]
    assert list(fig.layout.xaxis.ticktext)[3:] == ["1k", "2k", "5k", "10k", "20k"]


def test_a_sampled_curve_says_so_and_opens_the_points_it_cannot_represent():
    from kvviz.eviction.figures import sample_note
    from kvviz.eviction.shards import sampled_curve

    result = sampled_curve(TRACE, ["lru", "fifo"], [100, 20_000, INFINITE], 0.1)
    note = sample_note(result.rate, result.lru_error)
    assert note.startswith("SHARDS sample of 10.00% of the blocks") and f"{result.lru_error:.3f}" in note
    fig = fig_hit_curve(result.curve, sample=note)
    assert note in fig.layout.title.text
    fifo = next(t for t in fig.data if t.name == "FIFO")
    assert list(fifo.marker.symbol) == ["circle-open", "circle"]  # 100 x 10% = 10 sampled blocks: too few
    assert "circle-open" not in list(next(t for t in fig.data if t.name == "LRU").marker.symbol)  # exact


def test_rolling_sums_hits_and_accesses_over_the_last_windows():
    import pandas as pd

    from kvviz.eviction.figures import rolling

    windows = pd.DataFrame({"time_s": [0.0, 10.0, 20.0], "accesses": [10, 30, 0], "hit_ratio": [0.0, 1.0, None]})
    out = rolling(windows, 2)
    assert out["accesses"].tolist() == [10, 40, 30]
    assert out["hit_ratio"].tolist() == [0.0, 0.75, 1.0]  # 30 hits of 40, then of 30 (an empty window)
    assert rolling(windows, 1)["hit_ratio"].iloc[1] == 1.0


def test_the_leader_is_ringed_and_named_per_run():
    from kvviz.eviction.notes import lead_runs

    runs = lead_runs(CURVE, ["lru", "s3fifo"])
    fig = fig_hit_curve(CURVE, runs=runs)
    rings = [t for t in fig.data if t.name == "best online policy"]
    assert len(rings) == sum(r.policy != "tie" for r in runs) and rings[0].showlegend
    assert sum(" leads" in a.text for a in fig.layout.annotations) == len(rings)
