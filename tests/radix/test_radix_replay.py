"""A script replayed step by step: presets to idle, per-step snapshots and their windows, raw operations,
the hit-count rule, and the figures of every step."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.common.style import style_figure
from kvviz.radix import figures
from kvviz.radix.events import EVICTING, EventKind
from kvviz.radix.figures import fig_radix_totals, layout_tree, tree_figure
from kvviz.radix.hiradix_cache import WRITE_POLICIES
from kvviz.radix.presets import PRESETS
from kvviz.radix.radix_cache import POLICIES
from kvviz.radix.replay import (
    SNAPSHOT_WINDOW,
    ReplayConfig,
    eviction_steps,
    hit_counts_decide,
    repeat_prompt_hit,
    replay,
    snapshot_window,
    totals_frame,
)
from kvviz.radix.script import parse_text


@pytest.mark.parametrize("key", list(PRESETS))
def test_every_preset_replays_to_idle_with_snapshots(key):
    preset = PRESETS[key]
    rep = replay(preset.script(), ReplayConfig(**{**asdict(ReplayConfig()), **preset.suggested}))
    assert rep.error is None
    assert rep.n_steps >= len(preset.script().ops) + 1 and len(rep.dumps) == rep.n_steps
    assert rep.tree(0)["id"].tolist() == [0]  # step 0: only the root
    last = rep.steps.iloc[-1]
    assert last.reserved == 0 and last.in_flight_nodes == 0  # every request finished
    assert (rep.steps["device_tokens"] <= rep.config.device_capacity).all()
    for k in range(rep.n_steps):
        tree = rep.tree(k)
        assert (tree["step"] == k).all() and tree["id"].is_unique


def check_steps(rep) -> None:
    """Every step's sizes add up within the pools, and every node kept hangs from a node of its step."""
    cfg, steps = rep.config, rep.steps
    assert (steps["device_tokens"] + steps["reserved"] <= cfg.device_capacity).all()
    assert (steps["evictable"] + steps["protected"] == steps["device_tokens"]).all()
    if cfg.cache == "hiradix":
        assert (steps["host_tokens"] <= cfg.host_capacity).all()
    for k in range(rep.n_steps):
        tree = rep.tree(k)
        assert set(tree["parent"]) - {-1} <= set(tree["id"])
        assert len(tree) - 1 == steps["nodes"].iloc[k]


@settings(max_examples=50)
@given(
    st.sampled_from(list(PRESETS)),
    st.sampled_from(["radix", "hiradix"]),
    st.integers(1, 160),
    st.integers(1, 160),
    st.sampled_from(WRITE_POLICIES),
    st.sampled_from(POLICIES),
    st.sampled_from([1, 2, 4]),
    st.booleans(),
    st.booleans(),
)
def test_every_preset_replays_at_any_small_size_without_raising(
    key, cache, device, host, write, policy, page, auto_ack, deferral
):
    """The page's replay of any preset, at any small GPU and CPU size and any setting, ends in a
    replay (at worst one that stops with its reason), never an exception."""
    config = ReplayConfig(cache, device, host, page, policy, write, deferral, 100, auto_ack)
    try:
        rep = replay(PRESETS[key].script(), config)
    except InputError as exc:  # a refused setting, named (a page larger than a pool)
        assert exc.field in ("device_capacity", "host_capacity")
        return
    check_steps(rep)


def test_hicache_tiers_at_a_gpu_larger_than_the_cpu_replays_to_idle():
    """The reviewer's crash: GPU 120, CPU 64 under write-through used to cut CPU copies off the tree."""
    rep = replay(PRESETS["tiers"].script(), ReplayConfig(device_capacity=120, host_capacity=64))
    assert rep.error is None and rep.steps.iloc[-1].reserved == 0
    check_steps(rep)


def test_delay_preset_deferral_saves_the_recomputation():
    script = PRESETS["delay"].script()
    on = replay(script, ReplayConfig(device_capacity=1024, host_capacity=2048, deferral=True))
    off = replay(script, ReplayConfig(device_capacity=1024, host_capacity=2048, deferral=False))
    assert on.steps.iloc[-1].redundant == 0 and on.steps.iloc[-1].deferrals == 3
    assert off.steps.iloc[-1].redundant == 2 * 300 + 200  # two extra copies of doc1, one of doc2
    assert off.steps.iloc[-1].computed - on.steps.iloc[-1].computed == off.steps.iloc[-1].redundant
    assert (on.requests["status"] == "finished").all()


def test_tiers_preset_spills_and_loads_back_and_recomputes_short_tails():
    rep = replay(PRESETS["tiers"].script(), ReplayConfig(device_capacity=80, host_capacity=400))
    last = rep.steps.iloc[-1]
    assert last.loaded_tokens > 0 and last.evicted_device > 0
    assert "H" in set(rep.nodes["state"])
    assert any("recomputed" in line for lines in rep.steps["lines"] for line in lines)


def test_raw_ops_preset_shows_lock_then_ack():
    rep = replay(PRESETS["ops"].script(), ReplayConfig(device_capacity=32, host_capacity=64, auto_ack=False))
    text = " ".join(" ".join(lines) for lines in rep.steps["lines"])
    assert "inserted 4 tokens: 3 already cached" in text
    assert (
        "asked to free 2 tokens, freed 0: every leaf is locked (a running request or a pending copy holds it)" in text
    )  # locked until ack
    assert rep.steps.iloc[-1].evicted_device > 0


def test_unlocking_an_unlocked_node_is_reported_at_its_step():
    rep = replay(parse_text("insert 1 2 3\nunlock 1 2 3\ninsert 4"), ReplayConfig(cache="radix"))
    assert rep.n_steps == 3 and "holds no lock" in rep.error and "step 2" in rep.error


def test_radix_only_ops_are_refused_politely():
    rep = replay(parse_text("insert 1 2\nack"), ReplayConfig(cache="radix"))
    assert "HiRadixCache" in rep.error


def test_replay_without_snapshots_keeps_the_totals():
    rep = replay(PRESETS["chat"].script(), ReplayConfig(cache="radix", device_capacity=96), snapshots=False)
    assert rep.nodes.empty and rep.dumps == () and rep.steps.iloc[-1].requests == 6


def test_a_window_of_snapshots_equals_the_full_replay_there():
    script, config = PRESETS["chat"].script(), ReplayConfig(cache="hiradix", device_capacity=96, host_capacity=200)
    full = replay(script, config)
    part = replay(script, config, snapshots=range(3, 6))
    assert part.n_steps == 6 and len(part.dumps) == 3 and part.first_snapshot == 3
    for k in range(3, 6):
        assert (
            part.tree(k)
            .drop(columns="step")
            .reset_index(drop=True)
            .equals(full.tree(k).drop(columns="step").reset_index(drop=True))
        )
        assert part.dump(k) == full.dump(k) == full.dumps[k]
    assert part.steps.drop(columns="lines").equals(full.steps.iloc[:6].drop(columns="lines"))


def test_bad_config_is_an_input_error():
    for bad in (dict(page_size=0), dict(device_capacity=0), dict(cache="lru"), dict(threshold=-5)):
        with pytest.raises(InputError):
            replay(parse_text("a b"), ReplayConfig(**{**asdict(ReplayConfig()), **bad}))


def test_repeat_prompt_hit_matches_sglang_issue_27206():
    assert (repeat_prompt_hit(256, 128), repeat_prompt_hit(257, 128), repeat_prompt_hit(10, 1)) == (128, 256, 9)


def test_sglang_nine_steps_evicts_under_memory_pressure():
    preset = PRESETS["sglang9"]
    rep = replay(preset.script(), ReplayConfig(**{**asdict(ReplayConfig()), **preset.suggested}))
    assert eviction_steps(rep) and min(eviction_steps(rep)) >= 4
    roomy = replay(preset.script(), ReplayConfig(cache="radix", device_capacity=10_000))
    assert roomy.steps.iloc[-1].evicted_device == 0


def test_figures_draw_every_step():
    preset = PRESETS["delay"]
    rep = replay(preset.script(), ReplayConfig(device_capacity=1024, host_capacity=2048))
    for k in range(rep.n_steps):
        fig = tree_figure(rep.tree(k), clock_range=(0, 10**9))
        assert len(fig.data) >= 3
    names = {t.name for t in tree_figure(rep.tree(2)).data}
    assert "in flight" in names and "locked" in names
    assert fig_radix_totals(totals_frame(rep), 2).layout.shapes


@pytest.mark.parametrize("presenter", [False, True])
def test_the_tree_legend_sits_in_a_band_inside_the_plot_so_it_never_pushes_the_margin(presenter):
    """Above the top row: two lines of its label, then the legend's rows, all inside the plot."""
    rep = replay(PRESETS["sglang9"].script(), ReplayConfig(cache="radix", device_capacity=120))
    label_px = 20 if presenter else 14
    for k in (0, 5):
        fig = tree_figure(rep.tree(k), clock_range=(0, 10**9), presenter=presenter, label_px=label_px)
        legend, (low, high) = fig.layout.legend, fig.layout.yaxis.range
        assert (legend.y, legend.yanchor, legend.entrywidthmode) == (1.0, "top", "fraction")
        entries = [t.name for t in fig.data if t.showlegend is not False and t.name]
        rows = -(-len(entries) // (2 if presenter else 3)) if len(entries) >= 2 else 0
        style = style_figure(go.Figure(fig), presenter)
        plot_px = style.layout.height - style.layout.margin.t - style.layout.margin.b
        above_top_row_px = high / (high - low) * plot_px
        assert above_top_row_px >= 2 * label_px * 1.3 + rows * ((21 if presenter else 13) * 1.45 + 6)


def test_layout_collapses_chains_only_when_large():
    text = "\n".join(f"{i} {i + 1} {i + 2}" for i in range(0, 300, 3))
    rep = replay(parse_text(text), ReplayConfig(cache="radix", device_capacity=10_000))
    tree = rep.tree(rep.n_steps - 1)
    lay = layout_tree(tree, collapse=False)
    assert len(lay.nodes) == len(tree) and len(lay.edges) == len(tree) - 1
    ys = lay.nodes["y"].to_numpy()
    assert len(np.unique(ys[lay.nodes["x"] == 1])) == len(tree) - 1  # every leaf its own row
    folded = layout_tree(tree, collapse=True, keep_leaves=8).nodes
    assert len(folded) == 1 + 8 + 1 and folded["tokens"].iloc[-1] == "+92 more leaves"
    assert folded["length"].sum() == tree["length"].sum()  # folding keeps every token
    assert len(tree_figure(tree).data) >= 3
    chain = replay(
        parse_text("1 2 3 4 5 6\nmatch 1 2 3 4 5\nmatch 1 2 3 4\nmatch 1 2 3\nmatch 1 2"),
        ReplayConfig(cache="radix", device_capacity=100),
    )
    last = chain.tree(chain.n_steps - 1)
    assert len(layout_tree(last, collapse=True).nodes) == 2 and len(layout_tree(last, collapse=False).nodes) == 6


def test_hit_counts_decide_names_the_settings_that_read_them():
    assert hit_counts_decide("radix", "lfu", "write_through") and hit_counts_decide("radix", "slru", "write_back")
    assert hit_counts_decide("hiradix", "lru", "write_through_selective")
    assert hit_counts_decide("hiradix", "lru", "write_through")  # backs up at a count of 1
    assert not hit_counts_decide("radix", "lru", "write_through_selective")  # no CPU tier, no backups
    assert not hit_counts_decide("hiradix", "fifo", "write_back")


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("cache", ["radix", "hiradix"])
def test_where_hit_counts_do_not_decide_legacy_counting_evicts_the_same(cache, preset):
    """The radix page's claim: with these settings the legacy rule changes only the counts shown,
    not what is evicted or backed up."""
    script = parse_text(PRESETS[preset].text)
    quiet = [(p, w) for p in POLICIES for w in WRITE_POLICIES if not hit_counts_decide(cache, p, w)]
    assert quiet
    for policy, write in quiet:
        config = ReplayConfig(
            **{
                **asdict(ReplayConfig()),
                **PRESETS[preset].suggested,
                "cache": cache,
                "eviction_policy": policy,
                "write_policy": write,
            }
        )
        runs = [
            replay(script, ReplayConfig(**{**asdict(config), "hit_count_rule": rule}), snapshots=False)
            for rule in ("upstream", "legacy")
        ]
        evicted = [
            [
                [(e.kind, e.node, e.tokens) for e in row.events if e.kind in EVICTING or e.kind is EventKind.BACKUP]
                for row in run.steps.itertuples()
            ]
            for run in runs
        ]
        assert evicted[0] == evicted[1], (policy, write)


def test_snapshot_window_keeps_a_short_script_whole_and_a_long_one_by_windows():
    assert snapshot_window(4 * SNAPSHOT_WINDOW, 99) == (0, 4 * SNAPSHOT_WINDOW)  # up to four windows: every tree
    assert snapshot_window(4 * SNAPSHOT_WINDOW + 1, 3) == (0, SNAPSHOT_WINDOW)
    assert snapshot_window(1000, 99) == (75, 100) and snapshot_window(1000, 100) == (100, 125)
    for step in range(0, 1000, 37):
        start, stop = snapshot_window(1000, step)
        assert start <= step < stop and stop - start == SNAPSHOT_WINDOW


def test_unacknowledged_copies_stall_the_tiers_preset_as_an_outcome_that_names_its_cause():
    rep = replay(PRESETS["tiers"].script(), ReplayConfig(device_capacity=80, host_capacity=400, auto_ack=False))
    assert rep.error is None and rep.n_steps == len(PRESETS["tiers"].script().ops) + 2
    assert rep.stalled.startswith("64 of the GPU's 80 tokens are locked and 16 are free")
    assert "2 copies to CPU memory that nobody acknowledged" in rep.stalled
    assert rep.steps.iloc[-1].lines == [rep.stalled]
    on = replay(PRESETS["tiers"].script(), ReplayConfig(device_capacity=80, host_capacity=400, auto_ack=True))
    assert on.stalled == "" and (on.requests["status"] == "finished").all()


def test_a_lock_never_undone_stalls_with_the_step_that_frees_it():
    rep = replay(parse_text("insert 1..6\nlock 1..6\nr: 11..16 => 17"), ReplayConfig(cache="radix", device_capacity=8))
    assert rep.error is None
    assert rep.stalled == (
        "6 of the GPU's 8 tokens are locked and 2 are free, and the next waiting request (R1 r) does not fit. "
        "A `lock` step is never undone: add its `unlock` step to free the memory."
    )


def test_a_label_is_not_drawn_over_another_nodes_marker():
    """Two nodes a row apart: the lower one's two lines of text reach the upper one's marker. The
    upper node has no label of its own (an evicted node's may be dropped), so only its marker is there."""
    x, half = np.array([0.0, 0.0]), np.array([0.0, 3.0])
    ys, marker = np.array([0.0, -1.0]), np.array([0.2, 0.2])
    low, high = ys - marker, ys + marker + np.array([0.0, 1.5])
    texts = ["", "What can you … (13)"]
    assert figures._labelled([1], set(), texts, x, half, low, high) == {1}
    assert figures._labelled([1], set(), texts, x, half, low, high, (np.array([1.0, 1.0]), ys + marker)) == set()
    far = np.array([10.0, 0.0])  # the marker is beside the text instead
    assert figures._labelled([1], set(), texts, far, half, low, high, (np.array([1.0, 1.0]), ys + marker)) == {1}
