"""Instances with SGLang's HiCache behind a router: round-robin is exactly the tiered replays of its
sub-traces, one instance's prefill is another's hit through a shared storage pool, and an instance with
no host memory is the GPU's radix cache request for request."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cluster import ClusterConfig, compare, cost, run
from kvviz.cluster.simulate import memory_gib
from kvviz.common.errors import InputError
from kvviz.prefix_cache import prepare
from kvviz.prefix_cache.instance import InstanceCache, numbered
from kvviz.prefix_cache.replay import POLICY_NAMES
from kvviz.radix.hiradix_cache import WRITE_POLICIES
from kvviz.tiers.instance import Storage, TieredInstance
from kvviz.tiers.replay import Capacities, floors, tier_hits
from kvviz.traces import Trace, from_records
from tests.cluster.test_cluster import sub_trace, trace_of
from tests.tiers.test_tier_cache import chained, paths_strategy


def chained_pages(paths: list[list[int]]) -> Trace:
    """:func:`chained`'s trace in blocks of 256 tokens, so the prefetch and load-back floors are one block."""
    small = chained(paths)
    ids = [small.hash_ids(r).tolist() for r in range(small.n_requests)]
    return from_records(np.arange(len(ids)), [256 * len(b) for b in ids], np.full(len(ids), 2), ids, block_size=256)


@settings(max_examples=40, deadline=None)
@given(
    paths=paths_strategy,
    instances=st.integers(2, 3),
    gpu=st.integers(1, 8),
    host=st.integers(1, 12),
    storage=st.sampled_from((0, 4, 30)),
    policy=st.sampled_from(POLICY_NAMES),
    write_policy=st.sampled_from(WRITE_POLICIES),
)
def test_round_robin_with_dram_is_the_tiered_replays_of_its_sub_traces(
    paths, instances, gpu, host, storage, policy, write_policy
):
    """Each instance (its own GPU, host memory and storage) finds, request for request, what HiCache's
    tiered replay of its round-robin sub-trace finds on each tier."""
    trace = chained_pages(paths)
    config = ClusterConfig(
        instances=instances,
        blocks=gpu,
        host_blocks=host,
        storage_blocks=storage,
        policy=policy,
        write_policy=write_policy,
    )
    result = run(trace, "round-robin", config)
    rows = np.arange(trace.n_requests)
    for k in range(instances):
        mine = rows % instances == k
        if not mine.any():
            continue
        prepared = prepare(sub_trace(trace, rows[mine]))
        caps = Capacities(min(gpu, prepared.n_nodes), min(host, prepared.n_nodes), min(storage, prepared.n_nodes))
        g, h, s, _ = tier_hits(prepared, caps, policy, write_policy)
        assert result.hits[mine].tolist() == g.tolist()
        assert result.lower[mine, 0].tolist() == h.tolist()
        assert result.lower[mine, 1].tolist() == s.tolist()


PROMPT = list(range(1, 21))
"""20 blocks of 16 tokens: past the prefetch floor (256 tokens, 16 blocks)."""


def test_a_second_instance_prefetches_what_the_first_stored_in_the_shared_pool():
    """Request 0 goes to instance 0, whose write-through puts its prompt in host memory and on to storage;
    request 1, the same prompt, goes to instance 1 (round-robin): with one pool it finds all 20 blocks
    there, with each instance's own storage nothing."""
    trace = trace_of([(0, 320, 1, PROMPT), (1000, 320, 1, PROMPT)])
    config = ClusterConfig(instances=2, blocks=64, host_blocks=64, storage_blocks=64)
    own = run(trace, "round-robin", config)
    shared = run(trace, "round-robin", replace(config, shared_storage=True))
    assert own.instance.tolist() == shared.instance.tolist() == [0, 1]
    assert own.lower.tolist() == [[0, 0], [0, 0]]
    assert shared.hits.tolist() == [0, 0] and shared.lower.tolist() == [[0, 0], [0, 20]]
    assert shared.ttft_s[1] < own.ttft_s[1]
    assert shared.by_instance(2)["storage"].tolist() == [0, 20]


def test_a_short_remainder_is_not_prefetched_from_the_pool():
    """Under the floor (15 blocks of 16 tokens < 256 tokens) the second instance asks storage for nothing."""
    trace = trace_of([(0, 240, 1, PROMPT[:15]), (1000, 240, 1, PROMPT[:15])])
    config = ClusterConfig(instances=2, blocks=64, host_blocks=64, storage_blocks=64, shared_storage=True)
    assert run(trace, "round-robin", config).lower.tolist() == [[0, 0], [0, 0]]


@settings(max_examples=40, deadline=None)
@given(paths=paths_strategy, capacity=st.integers(1, 12), policy=st.sampled_from(POLICY_NAMES))
def test_an_instance_without_host_memory_is_the_gpus_radix_cache(paths, capacity, policy):
    """Request for request, the blocks held before it is served and the blocks it hits."""
    shape = numbered(prepare(chained(paths)))
    radix = InstanceCache(shape, capacity, policy)
    tiered = TieredInstance(shape, capacity, 0, floors(1), policy, storage=Storage(shape, 0))
    for r in range(len(shape.offsets) - 1):
        assert tiered.match(r) == radix.match(r)
        found = tiered.serve(r)
        assert (found.gpu, found.host, found.storage) == (radix.serve(r), 0, 0)
        assert tiered.used == radix.used


def test_the_reference_is_one_hicache_of_all_the_instances_tiers():
    trace = trace_of([(0, 320, 1, PROMPT), (1000, 320, 1, PROMPT)])
    config = ClusterConfig(instances=2, blocks=64, host_blocks=64, storage_blocks=64, shared_storage=True)
    table = compare(trace, ["round-robin"], config)
    ref = table.iloc[-1]
    assert (ref["hits"], ref["dram_hits"], ref["storage_hits"]) == (20, 0, 0)
    assert table.iloc[0]["storage_hits"] == 20


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"storage_blocks": 8}, "HiCache writes storage from host memory"),
        ({"host_blocks": 8, "pool_blocks": 8}, "SGLang's shared pool is HiCache's storage"),
        ({"host_blocks": 8, "engine": "vllm-lmcache"}, "host blocks apply to SGLang's HiCache"),
        ({"host_blocks": 8, "write_policy": "sometimes"}, "unknown write policy"),
    ],
)
def test_what_does_not_apply_is_refused(change, message):
    with pytest.raises(InputError, match=message):
        run(trace_of([(0, 16, 1, [1])]), "round-robin", ClusterConfig(instances=2, **change))


def test_work_and_memory_with_host_memory_are_counted_before_a_run():
    """A HiCache instance serves fewer accesses per second and keeps more per block than the radix cache;
    a storage tier adds its record of every block, once for a pool and once per instance otherwise."""
    replay = prepare(trace_of([(0, 320, 1, PROMPT), (1000, 320, 1, PROMPT)]))
    radix, tiered = ClusterConfig(instances=4), ClusterConfig(instances=4, host_blocks=8)
    assert cost(replay, 1, tiered).seconds > cost(replay, 1, radix).seconds
    assert memory_gib(replay, tiered) > memory_gib(replay, radix)
    own, pool = replace(tiered, storage_blocks=8), replace(tiered, storage_blocks=8, shared_storage=True)
    assert memory_gib(replay, own) > memory_gib(replay, pool) > memory_gib(replay, tiered)
