"""The compiled engine's public pieces: dense block ids, and the per-request steps driving several
independent caches, each equal to the prefix replay of the requests it was given."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.hiradix.ids import dense_block_ids
from kvviz.hiradix.keys import TREE_POLICIES
from kvviz.prefix_cache import POLICY_NAMES, PrefixPolicy, prepare, request_hits
from kvviz.prefix_cache.instance import InstanceCache, numbered
from kvviz.radix.radix_cache import STRATEGY
from kvviz.traces import Trace, from_records


def test_dense_ids_are_relabelled_unless_the_trace_says_they_are_dense():
    offsets = np.array([0, 2, 4], np.int64)
    table = {"timestamp": np.zeros(2), "input_length": np.full(2, 1024), "output_length": np.ones(2)}
    blocks = np.array([907, 3, 907, 55], np.int64)
    assert dense_block_ids(Trace(table, blocks, offsets)).tolist() == [2, 0, 2, 1]
    stored = np.array([0, 1, 0, 2], np.int32)  # a library entry's ids, numbered in first-use order
    assert dense_block_ids(Trace(table, stored, offsets, ids_dense=True)).tolist() == [0, 1, 0, 2]
    assert np.shares_memory(dense_block_ids(Trace(table, stored, offsets, ids_dense=True), np.int32), stored)


def test_the_eviction_keys_are_the_object_models_names_in_its_order():
    assert TREE_POLICIES == tuple(n for n in STRATEGY if n != "priority") == POLICY_NAMES
    assert [PrefixPolicy[n.upper()].value for n in TREE_POLICIES] == list(range(len(TREE_POLICIES)))


@settings(max_examples=30)
@given(
    paths=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=30),
    instances=st.integers(1, 3),
    capacity=st.integers(1, 12),
    policy=st.sampled_from(POLICY_NAMES),
)
def test_independent_trees_each_equal_the_replay_of_their_requests(paths, instances, capacity, policy):
    """Requests dealt round-robin to ``instances`` trees, served one at a time through the engine's ``serve``
    as an instance's cache drives it (the kind of arrays it is compiled for)."""
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    outputs = [1 + i % 3 for i in range(len(reqs))]
    whole = prepare(from_records(np.arange(len(reqs)), [len(r) for r in reqs], outputs, reqs, block_size=1))
    caches = [InstanceCache(numbered(whole), capacity, policy) for _ in range(instances)]  # each runs ``serve``
    got: list[list[int]] = [[] for _ in range(instances)]
    for r in range(len(reqs)):
        got[r % instances].append(caches[r % instances].serve(r))
    for k in range(min(instances, len(reqs))):  # an instance given no request holds nothing to compare
        mine = list(range(k, len(reqs), instances))
        sub = from_records(
            np.arange(len(mine)),
            [len(reqs[r]) for r in mine],
            [outputs[r] for r in mine],
            [reqs[r] for r in mine],
            block_size=1,
        )
        assert got[k] == request_hits(prepare(sub), policy, capacity).tolist()
