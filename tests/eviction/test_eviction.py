"""The eviction core: exact agreement with libCacheSim 0.3.5, textbook values, and the laws that hold."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.eviction.curves import TIE, counts_csv, curve_csv, findings, winners
from kvviz.eviction.grid import (
    INFINITE,
    ONLINE,
    POLICIES,
    log_capacities,
    parse_capacities,
    parse_capacity,
    parse_policies,
)
from kvviz.eviction.replay import HITS, Replay, coarsen, counts, hit_curve, hit_mask, replay_of, simulate, sweep
from kvviz.traces import from_records
from kvviz.traces.reuse import stack_distances
from kvviz.traces.workload import WorkloadConfig, generate

lcs = pytest.importorskip("libcachesim")
ORACLE = {
    "lru": lcs.LRU,
    "fifo": lcs.FIFO,
    "lfu": lcs.LFU,
    "sieve": lcs.Sieve,
    "arc": lcs.ARC,
    "s3fifo": lcs.S3FIFO,
    "belady": lcs.Belady,
}
NEVER = 2**63 - 1  # libCacheSim's next-access time of a block that is not used again


def oracle_hits(blocks: np.ndarray, policy: str, capacity: int) -> np.ndarray:
    """Per-access hits of libCacheSim's policy, driven one request at a time."""
    cache = ORACLE[policy](capacity, hashpower=12)
    nxt = np.full(len(blocks), NEVER, dtype=np.int64)
    last: dict[int, int] = {}
    for i in range(len(blocks) - 1, -1, -1):
        nxt[i] = last.get(int(blocks[i]), NEVER)
        last[int(blocks[i])] = i
    return np.array(
        [cache.get(lcs.Request(obj_size=1, obj_id=int(b), next_access_vtime=int(n))) for b, n in zip(blocks, nxt)],
        dtype=bool,
    )


def replay(blocks, offsets=None) -> Replay:
    blocks = np.asarray(blocks, dtype=np.int64)
    offsets = np.array([0, len(blocks)]) if offsets is None else np.asarray(offsets)
    trace = from_records(
        np.zeros(len(offsets) - 1),
        np.ones(len(offsets) - 1),
        np.zeros(len(offsets) - 1),
        [blocks[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])],
        block_size=1,
    )
    return replay_of(trace)


def _shapes() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    loop = np.concatenate([np.arange(i % 5, 40 + i % 7) for i in range(12)])
    workload = generate(WorkloadConfig(requests=60, seed=3, documents=12)).blocks[:1500]
    return {
        "uniform": rng.integers(0, 60, 700),
        "zipf": rng.zipf(1.4, 900) % 150,
        "scan-loop": loop,
        "workload": workload,
    }


SHAPES = _shapes()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("policy", ORACLE)
def test_hits_equal_libcachesim_access_by_access(shape, policy):
    blocks = SHAPES[shape]
    r = replay(blocks)
    caps = sorted({1, 2, 7, 10, 23, r.n_ids // 3, r.n_ids - 1, r.n_ids, r.n_ids + 10} - {0})
    for cap in caps:
        if policy == "s3fifo" and cap < 10:  # libCacheSim aborts below 10 blocks
            continue
        np.testing.assert_array_equal(
            hit_mask(r, policy, cap), oracle_hits(blocks, policy, cap), err_msg=f"{policy} at {cap} blocks on {shape}"
        )


@settings(max_examples=25)
@given(
    blocks=st.lists(st.integers(0, 25), min_size=1, max_size=160),
    cap=st.integers(1, 30),
    policy=st.sampled_from(sorted(ORACLE)),
)
def test_hits_equal_libcachesim_on_any_trace(blocks, cap, policy):
    if policy == "s3fifo":
        cap += 9
    blocks = np.array(blocks)
    assert (hit_mask(replay(blocks), policy, cap) == oracle_hits(blocks, policy, cap)).all()


def test_s3fifo_caches_nothing_below_twenty_blocks_as_libcachesim():
    blocks = np.tile(np.arange(5), 30)
    assert hit_mask(replay(blocks), "s3fifo", 15).sum() == oracle_hits(blocks, "s3fifo", 15).sum() == 0
    assert hit_mask(replay(blocks), "s3fifo", 3).sum() == 0
    assert hit_mask(replay(blocks), "s3fifo", 20).sum() == len(blocks) - 5


# The reference string of Silberschatz et al., "Operating System Concepts" §10.4, 3 frames:
# OPT makes 9 faults, LRU 12, FIFO 15.
TEXTBOOK = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1]


@pytest.mark.parametrize(("policy", "faults"), [("belady", 9), ("lru", 12), ("fifo", 15)])
def test_textbook_fault_counts(policy, faults):
    assert len(TEXTBOOK) - hit_mask(replay(TEXTBOOK), policy, 3).sum() == faults


def test_lfu_breaks_ties_by_the_oldest_at_that_frequency():
    # a and b both reach frequency 2; a got there first, so c evicts a.
    a, b, c = 0, 1, 2
    hits = hit_mask(replay([a, b, a, b, c, a, b]), "lfu", 2)
    assert hits.tolist() == [False, False, True, True, False, False, True]


def test_length_aware_evicts_the_deepest_block_among_equal_frequencies():
    # one request [10, 11, 12] (depths 0, 1, 2); then 13 needs room: the deepest (12) goes.
    r = replay([10, 11, 12, 13, 10, 11, 12], offsets=[0, 3, 4, 7])
    assert hit_mask(r, "length_aware", 3).tolist() == [False, False, False, False, True, True, False]
    # plain LFU evicts the oldest instead (10), and then loses 10, 11 and 12 in a cascade
    assert hit_mask(r, "lfu", 3).tolist() == [False] * 7


def test_prefix_mode_stops_counting_at_a_request_s_first_miss():
    r = replay([1, 2, 3, 1, 9, 3], offsets=[0, 3, 6])
    sim = simulate(r, "lru", INFINITE)
    assert sim.requests["hits"].tolist() == [0, 2]
    assert sim.requests["prefix_hits"].tolist() == [0, 1]
    assert sim.hit_ratio() == pytest.approx(2 / 6)
    assert sim.hit_ratio(prefix=True) == pytest.approx(1 / 6)


def test_lru_one_pass_distances_equal_the_foundation_s():
    blocks = SHAPES["zipf"]
    np.testing.assert_array_equal(replay(blocks).stack_distances, stack_distances(blocks))


@settings(max_examples=30)
@given(blocks=st.lists(st.integers(0, 40), min_size=1, max_size=200), data=st.data())
def test_laws_every_policy_obeys(blocks, data):
    cuts = data.draw(st.sets(st.integers(1, len(blocks) - 1), max_size=8)) if len(blocks) > 1 else set()
    offsets = [0, *sorted(cuts), len(blocks)]
    r = replay(blocks, offsets)
    ceiling = int(r.seen_before.sum())
    caps = (1, 2, 5, 20, 45)
    frame = sweep(r, list(POLICIES), caps, workers=1)
    bound = frame[frame.policy == "belady"].set_index("capacity")["hits"]
    for row in frame.itertuples():
        assert row.prefix_hits <= row.hits <= ceiling
        assert row.hits <= bound[row.capacity]  # nothing beats OPT with forced insertion
    for policy in ("lru", "belady"):  # stack algorithms: more room never hurts
        hits = frame[frame.policy == policy]["hits"].to_numpy()
        assert (np.diff(hits) >= 0).all()
    big = frame[frame.capacity == 45]  # 45 > 41 distinct blocks: nothing is evicted
    assert (big["hits"] == ceiling).all()


def test_hit_curve_frame_csv_and_infinite_capacity():
    trace = generate(WorkloadConfig(requests=80, seed=1))
    curve = hit_curve(trace, ["lru", "belady"], [50, INFINITE], prefix=False)
    assert list(curve.columns) == ["policy", "capacity", "hits", "accesses", "hit_ratio"]
    ceiling = replay_of(trace).seen_before.mean()
    assert curve[curve.capacity == INFINITE]["hit_ratio"].tolist() == pytest.approx([ceiling, ceiling])
    text = curve_csv(curve)
    assert text.splitlines()[0] == "policy,capacity,hits,accesses,hit_ratio"
    assert text.splitlines()[2].startswith("lru,inf,")
    prefix = hit_curve(trace, ["lru"], [50], prefix=True)
    assert prefix["hits"].iloc[0] <= curve["hits"].iloc[0]


def test_simulate_agrees_with_the_curve_and_windows_cover_the_trace():
    trace = generate(WorkloadConfig(requests=200, seed=2))
    sim = simulate(trace, "arc", 300)
    curve = hit_curve(trace, ["arc"], [300])
    assert sim.requests["hits"].sum() == curve["hits"].iloc[0]
    windows = sim.over_time()
    assert windows["accesses"].sum() == len(trace.blocks)
    assert ((windows["hit_ratio"] >= 0) & (windows["hit_ratio"] <= 1)).all()


def test_coarsen_names_a_coarse_block_by_its_last_fine_block():
    trace = from_records([0, 1], [1500, 900], [1, 1], [[1, 2, 3], [1, 2]], block_size=512)
    coarse = coarsen(trace, 2)
    assert coarse.block_size == 1024
    assert coarse.blocks.tolist() == [2, 3, 2]
    assert coarse.offsets.tolist() == [0, 2, 3]
    assert coarsen(trace, 1) is trace


def test_winners_picks_the_best_online_policy_per_capacity():
    trace = generate(WorkloadConfig(requests=150, seed=4))
    curve = hit_curve(trace, list(POLICIES), [100, 1000])
    best = winners(curve)
    assert set(best["policy"]) <= set(ONLINE)
    for row in best.itertuples():
        at = curve[(curve.capacity == row.capacity) & curve.policy.isin(ONLINE)]
        assert row.hit_ratio == at["hit_ratio"].max()


@pytest.mark.parametrize(
    ("text", "value"), [("1000", 1000), ("10k", 10_000), ("1e3", 1000), ("2M", 2_000_000), (" inf ", INFINITE), (7, 7)]
)
def test_capacity_parsing(text, value):
    assert parse_capacity(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", "", "nan"])
def test_bad_capacities_name_the_value(text):
    with pytest.raises(InputError, match="capacit"):
        parse_capacities([text]) if text else parse_capacities(text)


def test_policy_names_are_validated_and_listed():
    assert parse_policies("LRU, s3-fifo,lru") == ("lru", "s3fifo")
    with pytest.raises(InputError, match="unknown policy 'mru'.*lru, fifo"):
        parse_policies("lru,mru")


def test_traces_that_cannot_be_replayed():
    no_ids = from_records([0], [100], [1], None)
    with pytest.raises(InputError, match="no block ids"):
        replay_of(no_ids)
    with pytest.raises(InputError, match="empty"):
        replay_of(from_records([], [], [], []))


def test_log_capacities():
    caps = log_capacities(100, 100_000, 4)
    assert caps == (100, 1000, 10_000, 100_000)
    assert len(log_capacities(1, 3, 20)) == 3
    with pytest.raises(InputError, match="below the smallest"):
        log_capacities(10, 5, 4)
    assert math.isinf(parse_capacities("5,inf")[-1])


@settings(max_examples=5)
@given(seed=st.integers(0, 1000), capacity=st.integers(1, 3000))
def test_lru_hits_are_whole_prefixes_on_chained_ids(seed, capacity):
    # A chained block's parent is used right before it every time, so LRU evicts the child first:
    # every LRU hit is part of a hit prefix and prefix mode changes nothing.
    trace = generate(WorkloadConfig(requests=120, seed=seed))
    row = sweep(trace, ["lru"], [capacity], workers=1).iloc[0]
    assert row.prefix_hits == row.hits


def test_findings_summarise_leaders_gap_and_convergence():
    trace = generate(WorkloadConfig(requests=150, seed=6))
    curve = hit_curve(trace, ["lru", "fifo", "belady"], [10, 100, 1000, 100_000, INFINITE])
    found = findings(curve, ["lru", "fifo"])
    assert [c for c, _, _ in found.leaders] == [10, 1000, 100_000]
    assert found.ceiling == pytest.approx(replay_of(trace).seen_before.mean())
    assert found.converged_at == 100_000  # more blocks than the trace has
    assert found.leaders[-1][1] == TIE
    cap, gap = found.widest_gap
    at = curve[curve.capacity == cap].set_index("policy")["hit_ratio"]
    assert gap == pytest.approx(at["belady"] - max(at["lru"], at["fifo"])) and gap > 0


@settings(max_examples=20)
@given(blocks=st.lists(st.integers(0, 30), min_size=1, max_size=300), cap=st.integers(1, 35))
def test_length_aware_with_all_depths_zero_is_exactly_lfu(blocks, cap):
    from kvviz.eviction.policies.lfu import length_aware_hits

    r = replay(blocks)
    depths = replace(r, depths=np.zeros(r.accesses)).depth  # the kind of array the replay hands the kernel
    flat = length_aware_hits(r.ids, r.n_ids, cap, depths)
    np.testing.assert_array_equal(flat, hit_mask(r, "lfu", cap))


def length_aware_reference(blocks, depths, capacity: int) -> list[bool]:
    """LengthAwareCache as its rule reads: evict the smallest (frequency, -depth, time reached)."""
    state: dict[int, tuple[int, int, int]] = {}
    hits = []
    for i, (b, d) in enumerate(zip(blocks, depths)):
        hits.append(b in state)
        if b not in state and len(state) == capacity:
            del state[min(state, key=state.__getitem__)]
        state[b] = (state[b][0] + 1 if b in state else 1, -d, i)
    return hits


@settings(max_examples=40)
@given(blocks=st.lists(st.integers(0, 25), min_size=1, max_size=250), cap=st.integers(1, 30), data=st.data())
def test_length_aware_equals_its_rule_on_any_depths(blocks, cap, data):
    # Depths from 0 to the largest a trace can have, with many ties: the packed keys order as the tuples.
    from kvviz.common.jit import frozen
    from kvviz.eviction.grid import MAX_ACCESSES
    from kvviz.eviction.policies.lfu import length_aware_hits

    choices = st.sampled_from([0, 1, 2, 3, 7, MAX_ACCESSES - 2, MAX_ACCESSES - 1])
    drawn = data.draw(st.lists(choices, min_size=len(blocks), max_size=len(blocks)))
    depths = frozen(np.array(drawn), np.int64)  # the kind of array the replay hands the kernel
    r = replay(blocks)
    got = length_aware_hits(r.ids, r.n_ids, cap, depths)
    assert got.tolist() == length_aware_reference(r.ids.tolist(), depths.tolist(), cap)


def test_length_aware_keys_order_as_tuples_at_the_extremes():
    from kvviz.eviction.grid import MAX_ACCESSES
    from kvviz.eviction.policies.lfu import state_key

    top = MAX_ACCESSES - 1
    values = [0, 1, top - 1, top]
    states = [(f, d, t, b) for f in values for d in values for t in values for b in (0, top)]
    by_key = sorted(states, key=lambda s: state_key.py_func(*s))
    assert by_key == sorted(states, key=lambda s: (s[0], -s[1], s[2], s[3]))


@settings(max_examples=10)
@given(seed=st.integers(0, 1000), capacity=st.integers(1, 2000), policy=st.sampled_from(sorted(POLICIES)))
def test_sweep_totals_equal_the_per_request_counts(seed, capacity, policy):
    # The sweep counts totals without per-request arrays; a simulation keeps every request's hits.
    trace = generate(WorkloadConfig(requests=60, seed=seed))
    row = sweep(trace, [policy], [capacity], workers=1).iloc[0]
    per_request = simulate(trace, policy, capacity).requests
    assert (row.hits, row.prefix_hits) == (per_request["hits"].sum(), per_request["prefix_hits"].sum())


def test_exact_csv_without_pandas_equals_the_curve_csv():
    # counts_csv is the hitcurve command's pandas-free path: the same text as curve_csv(hit_curve(...)).
    trace = generate(WorkloadConfig(requests=150, seed=8))
    policies, capacities = ["lru", "arc", "s3fifo", "belady"], [10, 300, INFINITE]
    for prefix in (False, True):
        assert counts_csv(counts(trace, policies, capacities), prefix) == curve_csv(
            hit_curve(trace, policies, capacities, prefix=prefix)
        )


def test_every_named_policy_has_a_simulation_and_no_other():
    assert tuple(HITS) == tuple(POLICIES)


@pytest.mark.parametrize("workers", [1, 2])
def test_counts_on_a_pool_equal_each_simulation_alone_and_report_progress(workers):
    """LRU's distance pass runs in the pool beside the other policies, its capacities after it."""
    rng = np.random.default_rng(3)
    r = replay(rng.integers(0, 60, 400).tolist(), [0, 150, 400])
    seen: list[float] = []
    got = counts(r, ["fifo", "lru", "sieve"], [3, 10, 30], workers=workers, progress=seen.append)
    assert [(c.policy, c.capacity) for c in got] == [(p, c) for p in ("fifo", "lru", "sieve") for c in (3, 10, 30)]
    for c in got:
        hit = hit_mask(r, c.policy, c.capacity)
        assert (c.hits, c.prefix_hits) == (int(hit.sum()), int(hit[:150].cumprod().sum() + hit[150:].cumprod().sum()))
    assert seen == sorted(seen) and len(seen) == 9 and seen[-1] == 1.0
