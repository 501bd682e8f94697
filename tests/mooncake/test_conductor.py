"""Algorithm 1 (KVCache-centric scheduling) and the baseline schedulers on hand-built cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.mooncake.conductor import SCHEDULERS, ConductorConfig, PrefillModel, compare, offered_load, schedule
from kvviz.mooncake.placement import cache_aware_choice, kvcentric_choice
from kvviz.prefix_cache.instance import TimedCache, nodes_of
from kvviz.traces import from_records

BS = 512
PER_BLOCK = PrefillModel(overhead_s=0.0, per_token_s=0.1 / BS, per_token2_s=0.0)  # 0.1 s per block


def test_lecture_exercise_5_fetch_from_the_busy_instance():
    # 20 blocks; A holds 4 and waits 0.5 s, B holds 18 and waits 3 s; fetch 0.002 s per block.
    c = kvcentric_choice([4, 18], [0.5, 3.0], 20 * BS, BS, PER_BLOCK, threshold=1.25, transfer_s_per_block=0.002)
    assert (c.instance, c.fetch_from, c.fetched_blocks, c.prefix_blocks) == (0, 1, 14, 18)
    assert c.ttft_s == pytest.approx(0.5 + 14 * 0.002 + 2 * 0.1)  # 0.728 s


def test_congested_fetch_is_still_taken_because_each_instance_has_one_branch():
    # At 0.15 s per block the fetch costs 2.8 s; A computing locally would take 2.1 s, but
    # Algorithm 1 costs A only on its fetch branch (ratio 4.5 >= threshold), so it picks 2.8 s.
    c = kvcentric_choice([4, 18], [0.5, 3.0], 20 * BS, BS, PER_BLOCK, threshold=1.25, transfer_s_per_block=0.15)
    assert (c.instance, c.fetched_blocks) == (0, 14)
    assert c.ttft_s == pytest.approx(2.8)


def test_a_high_threshold_keeps_the_local_prefix():
    c = kvcentric_choice([4, 18], [0.5, 3.0], 20 * BS, BS, PER_BLOCK, threshold=5.0, transfer_s_per_block=0.002)
    assert (c.instance, c.fetched_blocks, c.fetch_from) == (0, 0, None)
    assert c.ttft_s == pytest.approx(0.5 + 16 * 0.1)  # 2.1 s


def test_best_instance_wins_when_its_queue_is_short():
    c = kvcentric_choice([4, 18], [0.5, 0.2], 20 * BS, BS, PER_BLOCK, threshold=1.25, transfer_s_per_block=0.002)
    assert (c.instance, c.fetched_blocks) == (1, 0)
    assert c.ttft_s == pytest.approx(0.2 + 0.2)


def test_no_prefix_anywhere_means_plain_load_balancing():
    c = kvcentric_choice([0, 0, 0], [2.0, 1.0, 3.0], 10 * BS, BS, PER_BLOCK, 1.25, 0.002)
    assert (c.instance, c.fetched_blocks) == (1, 0)


def test_cache_aware_weighs_queue_against_local_prefix():
    assert cache_aware_choice([4, 18], [0.5, 3.0], 20 * BS, BS, PER_BLOCK).instance == 0  # 2.1 < 3.2
    c = cache_aware_choice([4, 18], [2.0, 3.0], 20 * BS, BS, PER_BLOCK)  # 3.6 > 3.2
    assert (c.instance, c.ttft_s) == (1, pytest.approx(3.2))


def test_ties_go_to_the_instance_with_less_work_done():
    c = cache_aware_choice([0, 0], [0.0, 0.0], BS, BS, PER_BLOCK, tiebreak=[5.0, 1.0])
    assert c.instance == 1


def test_an_instances_cache_is_the_clusters_and_knows_when_its_kv_exists():
    """Three blocks of room: SGLang's radix cache keeps the first three blocks of a four-block prompt
    (a prompt longer than the cache caches what fits); they exist from the end of the prefill that
    computed them, and a block already cached keeps its time."""
    shape = nodes_of(np.array([1, 2, 3, 4, 1, 2, 5]), np.array([0, 4, 7]), np.array([10, 10]))
    cache = TimedCache(shape, 3)
    cache.store(0, ready_at=2.0)
    assert cache.match(0) == (3, 2.0) and cache.cache.used == 3
    assert cache.match(1) == (2, 2.0)
    cache.store(1, ready_at=5.0)
    assert cache.match(1) == (3, 5.0) and cache.match(0) == (2, 2.0)  # 3 evicted for 5; 1 and 2 kept at 2 s


def _two_request_trace():
    # r0 at 0 s: blocks 1-4; r1 at 0.5 s: blocks 1-5 (shares r0's four, still being computed).
    return from_records([0, 500], [4 * BS, 5 * BS], [10, 10], [[1, 2, 3, 4], [1, 2, 3, 4, 5]], block_size=BS)


ONE_S_PER_BLOCK = PrefillModel(0.0, 1.0 / BS, 0.0)


def test_schedulers_on_a_shared_prefix_still_being_computed():
    config = ConductorConfig(instances=2, prefill=ONE_S_PER_BLOCK)
    runs = compare(_two_request_trace(), config)
    # r0 runs 0-4 s on instance 0. Cache-aware waits behind it: 3.5 + 1 = 4.5 s.
    assert runs["cache"].instance.tolist() == [0, 0]
    assert runs["cache"].ttft_s[1] == pytest.approx(4.5)
    # KVCache-centric cannot fetch r0's blocks before 4 s: waiting and fetching (4.5 s + transfer)
    # loses to queueing behind r0 on instance 0 (4.5 s).
    assert runs["kvcentric"].instance.tolist() == [0, 0]
    assert runs["kvcentric"].ttft_s[1] == pytest.approx(4.5)
    assert runs["kvcentric"].remote_fetches == 0
    # Load balancing sends r1 to the idle instance, which has nothing cached: 5 s.
    assert runs["balance"].instance.tolist() == [0, 1]
    assert runs["balance"].ttft_s[1] == pytest.approx(5.0)
    assert runs["balance"].hit_ratio == 0.0


def test_kvcentric_fetches_a_finished_prefix_to_a_less_busy_instance():
    # r0 (blocks 1-4) on instance 0 until 4 s; r1 (10 blocks) on instance 1 until 10 s; r2 at 4.5 s
    # keeps instance 0 busy until 14.5 s. r3 at 5 s shares r0's blocks, which exist since 4 s.
    ids = [[1, 2, 3, 4], list(range(70, 80)), list(range(80, 90)), [1, 2, 3, 4, 5]]
    trace = from_records([0, 0, 4500, 5000], [len(x) * BS for x in ids], [10] * 4, ids, block_size=BS)
    config = ConductorConfig(instances=2, prefill=ONE_S_PER_BLOCK)
    kv = schedule(trace, config, "kvcentric")
    assert kv.instance.tolist() == [0, 1, 0, 1]
    per_block = config.transfer_s_per_block(BS)
    assert per_block == pytest.approx(512 * 327_680 * 8 / 800e9)
    assert kv.ttft_s[3] == pytest.approx(5.0 + 0.001 + 4 * per_block + 1.0)  # queue 5 s on instance 1
    assert (kv.remote_fetches, kv.replicated_blocks) == (1, 4)
    assert kv.hit_ratio == pytest.approx(4 / 29)
    summary = kv.summary()
    assert summary["remote_fetches"] == 1 and summary["requests"] == 4


def test_kv_is_causal_a_second_request_cannot_fetch_kv_still_being_computed():
    """Two requests for one 16-block document, 1 ms apart: the first's KV exists only when its
    prefill ends, so the second either waits for it or recomputes; it cannot fetch it at once."""
    doc = list(range(16))
    trace = from_records([0, 1], [17 * BS, 17 * BS], [10, 10], [doc + [100], doc + [101]], block_size=BS)
    config = ConductorConfig()
    f = config.prefill
    first_done = f.time(17 * BS)  # r0 alone on an idle instance
    for scheduler in ("cache", "kvcentric"):
        r = schedule(trace, config, scheduler)
        assert r.ttft_s[0] == pytest.approx(first_done)
        # cheapest: recompute everything on an idle instance (waiting for r0 and fetching is later)
        assert r.ttft_s[1] == pytest.approx(f.time(17 * BS)), scheduler
        assert r.prefix_blocks[1] == 0 and r.fetched_blocks[1] == 0
    fetch = kvcentric_choice(
        [16, 0, 0], [first_done, 0.0, 0.0], 17 * BS, BS, PER_BLOCK, 1.25, 0.002, ready_in_s=[0.5, 0.0, 0.0]
    )
    # KV ready in 0.5 s on the busy instance: idle instance 1 waits 0.5 s, fetches 16 blocks, computes 1
    assert (fetch.instance, fetch.fetched_blocks, fetch.fetch_from) == (1, 16, 0)
    assert (fetch.ttft_s, fetch.waited_s) == (pytest.approx(0.5 + 16 * 0.002 + 0.1), pytest.approx(0.5))


def test_trace_without_block_ids_is_refused_with_a_message():
    trace = from_records([0, 10], [100, 100], [1, 1], None)
    with pytest.raises(InputError, match="no block ids"):
        schedule(trace, ConductorConfig(), "cache")


@pytest.mark.parametrize(
    "bad",
    [
        dict(instances=0),
        dict(cache_blocks=0),
        dict(speedup=0),
        dict(bandwidth_gbps=-1),
        dict(balancing_threshold=0.5),
        dict(ttft_slo_s=0),
    ],
)
def test_bad_configs_are_input_errors(bad):
    with pytest.raises(InputError):
        schedule(_two_request_trace(), ConductorConfig(**bad), "random")


def test_unknown_scheduler():
    with pytest.raises(InputError, match="unknown scheduler"):
        schedule(_two_request_trace(), ConductorConfig(), "fastest")


def test_offered_load():
    trace = _two_request_trace()
    config = ConductorConfig(instances=2, prefill=ONE_S_PER_BLOCK)
    assert offered_load(trace, config) == pytest.approx(9.0 / (0.5 * 2))


_requests = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 6), st.integers(0, 2000)), min_size=1, max_size=30)


def _trace_from(reqs):
    # each request: a document (shared blocks) of some length, then a block of its own
    ts = np.cumsum([r[2] for r in reqs])
    ids = [[100 * r[0] + k for k in range(r[1])] + [10_000 + i] for i, r in enumerate(reqs)]
    return from_records(ts, [len(x) * BS for x in ids], [1] * len(reqs), ids, block_size=BS)


@settings(max_examples=25)
@given(_requests)
def test_one_instance_makes_every_scheduler_the_same(reqs):
    runs = compare(_trace_from(reqs), ConductorConfig(instances=1, cache_blocks=8))
    ttfts = [r.ttft_s for r in runs.values()]
    for t in ttfts[1:]:
        assert np.allclose(t, ttfts[0])


@settings(max_examples=25)
@given(_requests, st.integers(1, 4), st.sampled_from(SCHEDULERS))
def test_ttft_covers_the_uncached_prefill_and_hits_are_a_ratio(reqs, n, scheduler):
    trace = _trace_from(reqs)
    config = ConductorConfig(instances=n, cache_blocks=12)
    r = schedule(trace, config, scheduler)
    lengths = trace.requests["input_length"].to_numpy()
    cached = np.minimum(r.prefix_blocks * BS, lengths - 1)
    assert np.all(r.ttft_s >= config.prefill.time(lengths, cached) - 1e-9)
    assert 0.0 <= r.hit_ratio <= 1.0
    assert r.imbalance >= 1.0 - 1e-9
    assert np.all(r.fetched_blocks <= r.prefix_blocks)


@settings(max_examples=40)
@given(_requests, st.integers(2, 4), st.sampled_from([0.2, 1.0, 3.0]))
def test_kv_is_fetched_only_after_the_prefill_that_computed_it(reqs, n, speedup):
    """Every fetched block was computed on the source instance by an earlier request whose prefill
    had finished when the transfer started (causal KV: no fetch of KV still being computed)."""
    trace = _trace_from(reqs)
    r = schedule(trace, ConductorConfig(instances=n, cache_blocks=12, speedup=speedup), "kvcentric")
    arrival = trace.requests["timestamp"].to_numpy(np.float64) / 1000.0 / speedup
    done = arrival + r.ttft_s
    ids = [trace.blocks[trace.offsets[i] : trace.offsets[i + 1]].tolist() for i in range(trace.n_requests)]
    for i in np.flatnonzero(r.fetched_blocks):
        j, start = r.fetch_from[i], r.fetch_start_s[i]
        for block in ids[i][: r.prefix_blocks[i]]:
            assert any(r.instance[q] == j and block in ids[q] and done[q] <= start + 1e-9 for q in range(i)), (i, block)


@pytest.mark.parametrize("scheduler", ["random", "balance", "cache"])
def test_each_instances_hits_are_the_clusters_radix_cache_over_what_it_was_sent(scheduler):
    """The Scheduling view's instances are the cluster's caches: without fetches, the prefix each request
    reuses is what SGLang's radix cache (the prefix replay, LRU) hits over the requests sent to that instance."""
    from kvviz.prefix_cache import prepare, request_hits
    from kvviz.traces.workload import WorkloadConfig, generate
    from tests.cluster.test_cluster import sub_trace

    trace = generate(WorkloadConfig(requests=300, seed=1))
    r = schedule(trace, ConductorConfig(instances=3, cache_blocks=40, speedup=3.0), scheduler)
    evicting = 0
    for i in range(3):
        rows = np.flatnonzero(r.instance == i)
        alone = request_hits(prepare(sub_trace(trace, rows)), "lru", 40)
        assert r.prefix_blocks[rows].tolist() == alone.tolist()
        evicting += int(alone.sum()) < int(request_hits(prepare(sub_trace(trace, rows)), "lru", float("inf")).sum())
    assert evicting  # the caches are small enough to evict
