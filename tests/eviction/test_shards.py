"""SHARDS sampled hit curves (kvviz.eviction.shards): the sample's rules, and its accuracy at a 1% rate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kvviz.common.errors import InputError
from kvviz.eviction.curves import SAMPLED_COLUMNS
from kvviz.eviction.grid import (
    AUTO_ABOVE,
    INFINITE,
    MIN_SAMPLED_CAPACITY,
    POLICIES,
    RELIABLE_ERROR,
    chosen_rate,
    min_sampled_capacity,
    parse_sample,
)
from kvviz.eviction.replay import hit_curve, replay_of
from kvviz.eviction.shards import block_hashes, nested_sample, sample_trace, sampled_curve
from kvviz.traces import Trace
from kvviz.traces.workload import WorkloadConfig, generate

# Each policy's largest error (sampled, corrected by LRU, minus exact) allowed at a 1% rate on the
# accuracy trace below, over the capacities the sample represents; docs/eviction.md carries the
# measured table. SIEVE represents only capacities of 2,000 sampled blocks and more.
TOLERANCE = {**dict.fromkeys(POLICIES, 0.01), "lru": 0.0}
ACCURACY_TRACE = WorkloadConfig(
    requests=80_000, seed=3, documents=5_000, doc_zipf=0.6, doc_tokens=20_000, chat_first_tokens=10_000
)
CAPACITIES = (20_000, 50_000, 100_000, 200_000, INFINITE)  # x 1% = 200 .. 2,000 sampled blocks


@pytest.fixture(scope="module")
def small():
    return generate(WorkloadConfig(requests=400, seed=5))


def test_splitmix64_known_values():
    # splitmix64's first outputs from state 0 (Vigna's reference): the finaliser of 0x9E37..15 * k
    assert block_hashes(np.array([0], dtype=np.int64))[0] == np.uint64(0xE220A8397B1DCDAF)


def test_sample_keeps_every_access_of_a_kept_block(small):
    sample = sample_trace(small, 0.2)
    kept = block_hashes(small.blocks) < np.uint64(int(0.2 * 2**64))
    assert sample.replay.accesses == int(kept.sum())
    blocks = small.blocks[kept]
    assert len(np.unique(blocks)) == sample.replay.n_ids
    _, dense = np.unique(blocks, return_inverse=True)
    assert np.array_equal(sample.replay.ids, dense.ravel())
    depth = np.arange(len(small.blocks)) - np.repeat(small.offsets[:-1], np.diff(small.offsets))
    assert np.array_equal(sample.replay.depth, depth[kept])
    assert sample.replay.offsets[-1] == sample.replay.accesses


def test_nested_sample_is_the_sample_at_its_rate(small):
    # taken from a larger sample's accesses alone, it keeps what a pass over the whole trace keeps
    nested, direct = nested_sample(small, sample_trace(small, 0.4), 0.2), sample_trace(small, 0.2)
    assert nested.rate == direct.rate and np.array_equal(nested.positions, direct.positions)
    for field in ("ids", "offsets", "depth"):
        assert np.array_equal(getattr(nested.replay, field), getattr(direct.replay, field)), field
    with pytest.raises(InputError):
        nested_sample(small, direct, 0.4)


def test_rate_one_is_the_exact_curve(small):
    caps = (50, 200, 1000, INFINITE)
    exact = hit_curve(small, list(POLICIES), caps)
    sampled = sampled_curve(small, list(POLICIES), caps, 1.0).curve
    assert np.array_equal(exact["hits"].to_numpy(), sampled["hits"].to_numpy())


def test_fixed_size_lowers_the_rate_to_s_max_blocks(small):
    sample = sample_trace(small, 0.5, s_max=300)
    assert sample.replay.n_ids == 300 and sample.rate < 0.5 and sample.distinct_limit == 300
    assert sample_trace(small, 0.5, s_max=10**9).rate == 0.5
    curve = sampled_curve(small, ["fifo"], (100, INFINITE), 0.5, s_max=300)  # its check sample: 2x that rate
    assert curve.rate == sample.rate and curve.distinct_limit == 300 and "fifo" in curve.error_estimates


def test_sample_setting():
    assert parse_sample("1%") == 0.01 and parse_sample(" Exact ") == "exact"
    assert chosen_rate("auto", AUTO_ABOVE) is None and chosen_rate("auto", 100 * AUTO_ABOVE) < 1
    assert chosen_rate("exact", 10**9) is None and chosen_rate(0.05, 10) == 0.05
    for bad in ("often", "0", "2", "nan"):
        with pytest.raises(InputError):
            parse_sample(bad)


def test_one_percent_sample_of_a_million_accesses():
    trace = generate(ACCURACY_TRACE)
    assert len(trace.blocks) >= 2_000_000
    exact = hit_curve(trace, list(POLICIES), CAPACITIES).set_index(["policy", "capacity"])["hit_ratio"]
    result = sampled_curve(trace, list(POLICIES), CAPACITIES, 0.01)
    assert result.rate == 0.01 and 0.008 < result.sampled_accesses / result.accesses < 0.012
    assert result.lru_error is not None and result.lru_error > 0  # the sample did err; LRU measured it
    assert result.unreliable == ()  # the error estimate raises no flag on a steady workload
    curve = result.curve.set_index(["policy", "capacity"])
    assert (curve["sampled_capacity"] >= MIN_SAMPLED_CAPACITY).all()
    unrepresented = set(curve.index[~curve["represented"]])
    assert unrepresented == {("sieve", c) for c in CAPACITIES if c * 0.01 < min_sampled_capacity("sieve")}
    for (policy, cap), ratio in curve.loc[curve["represented"], "hit_ratio"].items():
        assert abs(ratio - exact[(policy, cap)]) <= TOLERANCE[policy] + 1e-12, (policy, cap)


def test_a_sampled_curve_s_table_has_the_exact_columns_then_the_sampled_ones(small):
    sampled = sampled_curve(small, ["fifo", "lru"], (100, INFINITE), 0.3).table
    assert tuple(sampled.columns) == (
        *hit_curve(small, ["fifo"], (100,)).columns,
        "represented",
        "error_estimate",
        "rate",
    )
    assert set(sampled["rate"]) == {0.3} and set(SAMPLED_COLUMNS) <= set(sampled.columns)
    assert chosen_rate("auto", replay_of(small).accesses) is None  # small: exact
    assert replay_of(small).accesses == int(sampled["accesses"].iloc[0])


def in_sequence(traces: list[Trace]) -> Trace:
    """The traces one after another, block ids shifted so no two share a block: a workload whose
    popular blocks change (the case where LFU's sampled curve errs, docs/eviction.md)."""
    id_step = max(int(t.blocks.max()) for t in traces) + 1
    time_step = max(int(t.requests["timestamp"].iloc[-1]) for t in traces) + 1000
    starts = np.cumsum([0] + [len(t.blocks) for t in traces])
    return Trace(
        pd.concat(
            [t.requests.assign(timestamp=t.requests["timestamp"] + k * time_step) for k, t in enumerate(traces)],
            ignore_index=True,
        ),
        np.concatenate([t.blocks.astype(np.int64) + k * id_step for k, t in enumerate(traces)]),
        np.concatenate([[0]] + [t.offsets[1:] + starts[k] for k, t in enumerate(traces)]),
    )


def test_error_estimate_flags_lfu_on_a_shifting_workload():
    trace = in_sequence([generate(WorkloadConfig(requests=15_000, seed=s)) for s in range(5)])
    assert len(trace.blocks) >= 1_000_000
    result = sampled_curve(trace, ["lru", "fifo", "lfu"], (10_000, 30_000, 100_000, INFINITE), 0.01)
    assert result.error_estimates["lfu"] > RELIABLE_ERROR and "lfu" in result.unreliable
    assert result.error_estimates["lru"] == 0 and "lru" not in result.unreliable
    assert "fifo" not in result.unreliable
    assert set(result.curve.loc[result.curve["policy"] == "lfu", "error_estimate"]) == {result.error_estimates["lfu"]}


def test_error_estimate_is_the_disagreement_with_twice_the_rate(small):
    result = sampled_curve(small, ["fifo"], (100, 1000, INFINITE), 0.2, exact_lru=False)
    double = sampled_curve(small, ["fifo"], (100, 1000, INFINITE), 0.4, exact_lru=False).curve
    full = result.curve
    finite = np.isfinite(full["capacity"]) & full["represented"]
    gap = (full["hit_ratio"] - double["hit_ratio"]).abs()[finite].max()
    assert result.error_estimates["fifo"] == pytest.approx(gap)


def test_flag_is_shown_in_the_figure_note_and_on_stderr(capsys):
    from kvviz.commands.hitcurve import _say_sampled
    from kvviz.eviction.figures import sample_note

    assert "not reliable at this rate" not in sample_note(0.01, 0.02)
    assert sample_note(0.01, 0.02, ("lfu", "sieve")).endswith("raise the rate): LFU, SIEVE")
    curve = pd.DataFrame(
        {
            "policy": ["lru", "lru", "lfu", "lfu"],
            "capacity": [2e4, INFINITE] * 2,
            "rate": 0.01,
            "represented": True,
            "error_estimate": [0.0, 0.0, 0.03, 0.03],
        }
    )
    _say_sampled(curve)
    lines = capsys.readouterr().err.splitlines()
    assert lines[1:] == ["  lru: 0.000", "  lfu: 0.030  not reliable at this rate: raise --sample above 0.01"]
