"""SHARDS-adj sampled hit curves (kvviz.eviction.shards): the sample's rules, the adjustment against a
plain-Python reference, the fixed-size memory bound, the error bound and its flags, and the accuracy at 1%."""

from __future__ import annotations

import math
import tracemalloc
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from kvviz.eviction.replay import hit_curve, hit_mask, replay_of
from kvviz.eviction.shards import (
    BIAS_FACTOR,
    REPLICAS,
    SPREAD_Z,
    _fixed_size_rate,
    block_hashes,
    flags,
    in_band,
    nested_sample,
    replicas,
    sample_trace,
    sampled_curve,
)
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
    hashes = np.unique(block_hashes(small.blocks))
    assert sample.rate == float(hashes[hashes < np.uint64(2**63)][300]) / 2**64  # the 301st smallest goes
    curve = sampled_curve(small, ["fifo"], (100, INFINITE), 0.5, s_max=300)  # its replicas: the same lowered rate
    assert curve.rate == sample.rate and curve.distinct_limit == 300 and "fifo" in curve.error_estimates


def test_fixed_size_threshold_holds_s_max_hashes_not_the_trace_s():
    """The threshold search keeps at most s_max + 1 hashes and one chunk: on a million distinct
    blocks (8 MB of hashes) it allocates a fraction of that, and finds what sorting them all finds."""
    blocks = np.arange(1_000_000, dtype=np.int64)
    block_hashes(blocks[:10])  # compiled before measuring
    tracemalloc.start()
    rate = _fixed_size_rate(blocks, 1.0, 1000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3_000_000
    assert rate == float(np.sort(block_hashes(blocks))[1000]) / 2**64


def test_sample_setting():
    assert parse_sample("1%") == 0.01 and parse_sample(" Exact ") == "exact"
    assert chosen_rate("auto", AUTO_ABOVE) is None and chosen_rate("auto", 100 * AUTO_ABOVE) < 1
    assert chosen_rate("exact", 10**9) is None and chosen_rate(0.05, 10) == 0.05
    for bad in ("often", "0", "2", "nan", "-1%"):
        with pytest.raises(InputError, match="^field 'sample': ") as caught:
            parse_sample(bad)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("rate", [0.0, math.nan, 1.5, -0.1])
def test_a_rate_outside_0_1_is_refused_naming_the_option(small, rate):
    with pytest.raises(InputError, match=r"^field 'sample': sampling rate must be in \(0, 1\], got"):
        sampled_curve(small, ["lru"], (100,), rate)


_MASK = 2**64 - 1


def _splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _misses(blocks: list[int], capacity: int, fifo: bool) -> int:
    """A plain LRU (or FIFO) cache of ``capacity`` blocks: its misses on ``blocks``."""
    cache: OrderedDict[int, None] = OrderedDict()
    misses = 0
    for b in blocks:
        if b in cache:
            if not fifo:
                cache.move_to_end(b)
            continue
        misses += 1
        if len(cache) == capacity:
            cache.popitem(last=False)
        cache[b] = None
    return misses


def _hot_block_trace() -> Trace:
    """300 requests, each led by block 0 (the hottest, a quarter of the accesses) and 1-5 blocks of 200."""
    rng = np.random.default_rng(7)
    prompts = [[0, *rng.integers(1, 200, rng.integers(1, 6)).tolist()] for _ in range(300)]
    lengths = [len(p) for p in prompts]
    frame = pd.DataFrame(
        {"timestamp": np.arange(300) * 10, "input_length": np.multiply(lengths, 512), "output_length": 1}
    ).assign(n_blocks=lengths)
    return Trace(frame, np.concatenate(prompts), np.cumsum([0, *lengths]))


def test_shards_adj_counts_misses_against_n_times_r_when_the_hottest_block_is_left_out():
    """Block 0 hashes at 0.88 of the space, so a 0.3 sample leaves out the hottest block: it holds
    241 accesses where N x R = 362.4 were expected. SHARDS-adj's hit ratio is 1 - misses / (N x R),
    the misses those of the sample through round(C x R) blocks, as a plain-Python cache counts them."""
    trace, rate = _hot_block_trace(), 0.3
    blocks = trace.blocks.tolist()
    assert np.bincount(trace.blocks).argmax() == 0 and _splitmix64(0) >= rate * 2**64
    sample = [b for b in blocks if _splitmix64(b) < int(rate * 2**64)]
    assert (len(blocks), len(sample)) == (1208, 241)
    got = sampled_curve(trace, ["lru", "fifo"], (5, 20, 60), rate, exact_lru=False).curve
    for row in got.itertuples():
        misses = _misses(sample, round(row.capacity * rate), fifo=row.policy == "fifo")
        assert row.hit_ratio == 1 - misses / (len(blocks) * rate), (row.policy, row.capacity)
        assert row.hits == round(row.hit_ratio * len(blocks))
    lru = got[got["policy"] == "lru"].set_index("capacity")["hit_ratio"]
    assert lru.round(6).tolist() == [0.365342, 0.434327, 0.575055]  # 230, 205 and 154 sampled misses


@settings(max_examples=50)
@given(st.floats(0, 0.999), st.floats(0.001, 1.0))
def test_a_band_is_the_hashes_from_its_start_round_the_space(start, rate):
    ids = np.arange(2000, dtype=np.int64)
    low, high = int(start * 2**64), int(min(start + rate, 2.0) * 2**64)
    expected = [
        rate >= 1 or low <= h < high or (high > 2**64 and h < high - 2**64) for h in (_splitmix64(int(i)) for i in ids)
    ]
    assert in_band(ids, start, rate).tolist() == expected


def test_replicas_are_disjoint_bands_and_the_first_two_make_the_2r_sample(small):
    bands, double = replicas(small, 0.1)
    hashes = block_hashes(small.blocks).astype(float) / 2**64
    assert len(bands) == REPLICAS and all(b.rate == 0.1 for b in bands) and double.rate == 0.2
    for k, band in enumerate(bands):
        assert np.array_equal(band.positions, np.flatnonzero((hashes >= k * 0.1) & (hashes < (k + 1) * 0.1)))
    assert np.array_equal(bands[0].positions, sample_trace(small, 0.1).positions)
    assert np.array_equal(double.positions, np.union1d(bands[0].positions, bands[1].positions))


def test_the_bound_is_the_replicas_spread_and_the_move_to_twice_the_rate(small):
    caps = (100, 1000, INFINITE)
    result = sampled_curve(small, ["fifo"], caps, 0.1, exact_lru=False)
    bands, double = replicas(small, 0.1)
    ratios = np.array(
        [
            [s.hit_ratio(int(hit_mask(s.replay, "fifo", s.sampled_capacity(c)).sum())) for c in caps]
            for s in [*bands, double]
        ]
    )
    expected = SPREAD_Z * ratios[:-1].std(axis=0, ddof=1) + BIAS_FACTOR * np.abs(ratios[:2].mean(axis=0) - ratios[-1])
    assert np.allclose(result.curve["hit_ratio"], ratios[0], rtol=0, atol=1e-15)
    assert np.allclose(result.curve["error_estimate"], expected, rtol=0, atol=1e-15)
    represented = result.curve[result.curve["represented"] & np.isfinite(result.curve["capacity"])]
    assert result.error_estimates["fifo"] == represented["error_estimate"].max()


def test_flags_name_the_capacities_over_the_limit_and_the_rate_that_holds_them():
    table = pd.DataFrame(
        {
            "policy": ["lru", "lru", "lfu", "lfu", "lfu", "lfu"],
            "capacity": [2e4, INFINITE, 1e4, 2e4, 5e4, INFINITE],
            "rate": 0.01,
            "represented": [True, True, False, True, True, True],
            "error_estimate": [0.0, 0.0, 0.2, 0.031, 0.012, 0.5],
        }
    )
    (flag,) = flags(table)  # an unrepresented or infinite capacity is never flagged
    assert (flag.policy, flag.capacities, flag.bound) == ("lfu", (2e4, 5e4), 0.031)
    assert flag.suggested_rate == 0.097  # 0.01 x 3.1² = 0.0961, up to two digits
    assert flags(table.assign(error_estimate=0.2))[0].suggested_rate == 1.0  # past 1: replay exactly


def test_one_percent_sample_of_a_million_accesses():
    """On a steady workload every policy is within its tolerance wherever the bound does not flag
    it, and the bound is at or above the actual error at every represented capacity but one:
    Belady's at 20k blocks (0.0094 against 0.0082), a bias of the sample that does not shrink from
    R to 2R (the four replicas are all 0.004-0.009 low), which no comparison of samples can see."""
    trace = generate(ACCURACY_TRACE)
    assert len(trace.blocks) >= 2_000_000
    exact = hit_curve(trace, list(POLICIES), CAPACITIES).set_index(["policy", "capacity"])["hit_ratio"]
    result = sampled_curve(trace, list(POLICIES), CAPACITIES, 0.01)
    assert result.rate == 0.01 and 0.008 < result.sampled_accesses / result.accesses < 0.012
    assert result.lru_error is not None and result.lru_error > 0  # the sample did err; LRU measured it
    curve = result.curve.set_index(["policy", "capacity"])
    assert (curve["sampled_capacity"] >= MIN_SAMPLED_CAPACITY).all()
    unrepresented = set(curve.index[~curve["represented"]])
    assert unrepresented == {("sieve", c) for c in CAPACITIES if c * 0.01 < min_sampled_capacity("sieve")}
    shown = curve[curve["represented"]]
    error = (shown["hit_ratio"] - exact.loc[shown.index]).abs()
    assert set(shown.index[error > shown["error_estimate"] + 1e-12]) == {("belady", 20_000)}
    for (policy, cap), e in error.items():
        assert e <= TOLERANCE[policy] + 1e-12 or shown.loc[(policy, cap), "error_estimate"] > RELIABLE_ERROR


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


def test_the_bound_flags_lfu_on_a_shifting_workload():
    trace = in_sequence([generate(WorkloadConfig(requests=15_000, seed=s)) for s in range(5)])
    assert len(trace.blocks) >= 1_000_000
    result = sampled_curve(trace, ["lru", "fifo", "lfu"], (10_000, 30_000, 100_000, INFINITE), 0.01)
    assert result.error_estimates["lfu"] > RELIABLE_ERROR and "lfu" in result.unreliable
    assert result.error_estimates["lru"] == 0 and "lru" not in result.unreliable
    lfu = next(f for f in result.flags if f.policy == "lfu")
    assert lfu.suggested_rate > 0.01 and 10_000 in lfu.capacities


def test_flag_is_shown_in_the_figure_note_and_on_stderr(capsys):
    from kvviz.commands.hitcurve import _say_sampled
    from kvviz.eviction.figures import sample_note

    assert "not reliable at this rate" not in sample_note(0.01, 0.02)
    assert sample_note(0.01, 0.02, ("lfu", "sieve")).endswith("raise the rate): LFU, SIEVE")
    curve = pd.DataFrame(
        {
            "policy": ["lru", "lru", "lfu", "lfu", "lfu"],
            "capacity": [2e4, INFINITE, 1e4, 2e4, INFINITE],
            "rate": 0.01,
            "represented": True,
            "error_estimate": [0.0, 0.0, 0.03, 0.008, 0.0],
        }
    )
    _say_sampled(curve)
    lines = capsys.readouterr().err.splitlines()
    assert lines[1:] == [
        "  lru: 0.000",
        "  lfu: 0.030  not reliable at this rate at 10000 blocks: raise --sample to 0.09",
    ]


def test_the_page_says_where_a_policy_is_off_and_what_sample_would_hold_it():
    from kvviz.eviction.notes import sampling_advice
    from kvviz.eviction.shards import Flag

    advice = sampling_advice([Flag("lfu", (1e4, 2e4), 0.048, 0.24), Flag("belady", (1e4,), 0.2, 1.0)], 0.01)
    assert advice == (
        "LFU may be off by up to 0.048 at 10,000, 20,000 blocks, over 0.01: a sample of 24% would hold it. "
        "Belady (OPT) may be off by up to 0.200 at 10,000 blocks, over 0.01: only the exact replay holds it."
    )
    assert sampling_advice([], 0.01) == ""
    many = sampling_advice([Flag("fifo", (1109.0, 1335.0, 3368.0), 0.054, 0.5)], 0.01)
    assert many == (
        "FIFO may be off by up to 0.054 at 3 capacities from 1,109 to 3,368 blocks, over 0.01: "
        "a sample of 50% would hold it."
    )
