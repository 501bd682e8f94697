"""Readings of prefix-cache curves: LiteHit's worked case, memory and money, windows, requests, turns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kvviz.common import paper
from kvviz.common.hardware import gpu, model
from kvviz.eviction.curves import curve_of
from kvviz.eviction.grid import INFINITE
from kvviz.eviction.replay import sweep as block_sweep
from kvviz.prefix_cache import (
    GIB,
    block_bytes,
    by_turn,
    comparison,
    curve_notes,
    curve_of_table,
    fraction_notes,
    hit_fractions,
    hits_table,
    memory_price,
    paper_rows,
    prepare,
    reach_table,
    reaches,
    sweep,
    window_notes,
    window_ratios,
)
from kvviz.prefix_cache import figures as figs
from kvviz.prefix_cache.example import LITEHIT_REPORTED, worked_example
from kvviz.traces.workload import WorkloadConfig, generate


def test_litehit_worked_case_is_measured_seven_against_two():
    example = worked_example()
    assert (example.prefix_total, example.block_total) == (LITEHIT_REPORTED["prefix"], LITEHIT_REPORTED["block"])
    assert [s.prefix_hits for s in example.steps[1:]] == [0, 2, 2, 1, 2]  # LiteHit §10, capacity 2 blocks
    assert example.steps[1].block_cached == {"B", "C"}  # head first: A, the head, is already gone
    assert example.steps[1].prefix_cached == {"A", "B"}  # leaves first: the prompt's head stays
    assert example.steps[4].prefix_cached == {"A", "E"}
    assert all(len(s.prefix_cached) <= 2 and len(s.block_cached) <= 2 for s in example.steps)


def test_memory_in_gib_and_its_price():
    bpb = block_bytes(model("llama-3-8b"), 512)
    assert bpb == 131072 * 512 == 64 * 2**20
    price = memory_price(gpu("h100"))
    assert price.hbm == pytest.approx(3.99 / (80e9 / GIB))  # an H100's own GPU-hour
    assert price.dram == pytest.approx(0.003341 * GIB / 1e9)  # server DRAM, not secondary storage
    assert memory_price(gpu("a40")).hbm == pytest.approx(0.44 / (48e9 / GIB))


@pytest.fixture(scope="module")
def small():
    trace = generate(WorkloadConfig(requests=300, seed=2))
    replay = prepare(trace)
    caps = (50, 200, 1000, INFINITE)
    return trace, replay, caps


def test_comparison_reaches_and_notes(small):
    trace, replay, caps = small
    prefix = sweep(replay, ["lru", "fifo"], caps)
    swept = block_sweep(trace, ["lru", "fifo"], caps)
    comp = comparison(prefix, curve_of(swept, prefix=True), curve_of(swept))
    assert list(comp.columns) == [
        "policy",
        "capacity",
        "prefix",
        "block (prefix mode)",
        "block (every hit)",
        "difference",
    ]
    inf = comp[comp["capacity"] == INFINITE]
    assert np.allclose(inf["difference"], 0)  # chained ids: both infinite caches hit every seen prefix
    ceiling = float(inf["prefix"].iloc[0])
    found = reaches(prefix, ceiling)
    table = reach_table(found, 2**20, memory_price(gpu("h100")))
    assert len(table) == 6 and (table["GiB"].dropna() == table["capacity (blocks)"].dropna() / 1024).all()
    notes = curve_notes(comp, 2**20)
    assert notes[0].startswith("**LRU**") and any("within" in n for n in notes)
    rows = paper_rows(7, 2)
    assert not paper.problems(rows)
    assert rows[0]["status"] == "agrees" and paper_rows(7, 3)[0]["status"] == "differs"


def test_windows_fractions_and_turns(small):
    trace, replay, caps = small
    table = hits_table(replay, "lru", caps)
    curve = curve_of_table("lru", caps, table, replay.accesses)
    assert (np.diff(table.sum(axis=1)) >= 0).any()
    windows = window_ratios(replay, table, window_s=60.0)
    assert windows.shape[1] == len(caps) and ((windows.fillna(0) >= 0) & (windows.fillna(0) <= 1)).all().all()
    assert window_notes(windows, [str(c) for c in caps], "lru", "fifo", windows * 0)[-1].endswith("capacity.")
    fractions = hit_fractions(replay, table[-1])
    assert fractions.min() >= 0 and fractions.max() <= 1
    assert np.isclose((fractions * replay.input_lengths).sum() <= curve["hits"].iloc[-1] * replay.block_size, True)
    assert by_turn(trace.requests, fractions) is None
    turns = by_turn(trace.requests.assign(turn=np.arange(len(fractions)) % 3 + 1), fractions)
    assert turns["turn"].tolist() == [1, 2, 3] and turns["requests"].sum() == len(fractions)
    assert len(fraction_notes(fractions, turns)) == 2


def test_figures_build(small):
    trace, replay, caps = small
    prefix = sweep(replay, ["lru"], caps)
    swept = block_sweep(trace, ["lru"], caps)
    comp = comparison(prefix, curve_of(swept, prefix=True), curve_of(swept))
    found = reaches(prefix, float(prefix["hit_ratio"].iloc[-1]))
    fig = figs.fig_prefix_vs_block(comp, bytes_per_block=2**26, model="llama-3-8b", found=found, ceiling=0.3)
    assert fig.layout.xaxis.type == "log" and "GiB" in fig.layout.xaxis2.title.text
    assert len(figs.fig_example(worked_example(), 3).data) >= 2
    assert figs.gib_label(0.5) == "512 MiB" and figs.gib_label(2048) == "2 TiB"
    heat = figs.fig_heatmap(pd.DataFrame([[0.1, -0.2]], index=[0.0]), ["a", "b"], "t", difference=True)
    assert heat.data[0].zmid == 0
