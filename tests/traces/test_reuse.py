"""Stack distances and the one-pass LRU curve against the definition and a plain LRU simulation."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.traces.reuse import dense_ids, lru_curve, lru_hit_counts, lru_hits, stack_distances


def naive_stack_distances(seq):
    out = []
    for i, b in enumerate(seq):
        prev = max((j for j in range(i) if seq[j] == b), default=None)
        out.append(-1 if prev is None else len(set(seq[prev + 1 : i]) - {b}))
    return out


def lru_simulation(seq, capacity):
    cache, hits = OrderedDict(), 0
    for b in seq:
        if b in cache:
            hits += 1
            cache.move_to_end(b)
        else:
            cache[b] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


def test_hand_made_sequence():
    seq = np.array([1, 2, 1, 3, 2, 2, 1])
    assert stack_distances(seq).tolist() == [-1, -1, 1, -1, 2, 0, 2]


@settings(max_examples=120)
@given(st.lists(st.integers(0, 9), max_size=60))
def test_stack_distances_match_the_definition(seq):
    assert stack_distances(np.array(seq, dtype=np.int64)).tolist() == naive_stack_distances(seq)


@settings(max_examples=60)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_one_pass_lru_curve_equals_simulation(seq):
    caps = np.array([1, 2, 3, 5, 8, 20])
    assert lru_hits(np.array(seq), caps).tolist() == [lru_simulation(seq, int(c)) for c in caps]


@settings(max_examples=120)
@given(
    st.lists(st.integers(-3, 40), max_size=120),
    st.sampled_from([np.int32, np.int64]),
    st.lists(st.sampled_from([0, 0.5, 1, 2, 2.5, 3, 7, 10**6, np.inf]), min_size=1, max_size=5),
)
def test_histogram_pass_equals_the_distance_curve(seq, dtype, caps):
    # the kernel beside SHARDS samples (no distance per access) against lru_curve of the distances
    blocks = np.array(seq, dtype=dtype)
    caps = np.array(caps, dtype=float)
    ids, n_ids = dense_ids(blocks)
    assert ids.dtype in (np.int32, np.int64) and (len(ids) == 0 or ids.max() < n_ids)
    expected = lru_curve(stack_distances(blocks), caps).tolist()
    assert lru_hit_counts(ids, n_ids, caps).tolist() == expected
    assert lru_hit_counts(ids, n_ids, caps, slots=1).tolist() == expected  # the fewest slots: compacts at every chance


def test_dense_ids_keep_a_dense_int32_array_without_copying():
    blocks = np.array([3, 0, 2, 3, 1], dtype=np.int32)
    ids, n_ids = dense_ids(blocks)
    assert ids is blocks and n_ids == 4
    sparse, n = dense_ids(np.array([10**12, 5, 10**12]))
    assert sparse.tolist() == [1, 0, 1] and n == 2 and sparse.dtype == np.int32


def test_window_pass_on_a_skewed_sequence_equals_the_distance_curve():
    # many blocks leave the window and come back, many compactions (window 10 .. 1,000 blocks)
    blocks = np.random.default_rng(4).zipf(1.2, 50_000) % 5_000
    caps = np.array([0, 10, 100, 1000, np.inf])
    ids, n_ids = dense_ids(blocks)
    assert lru_hit_counts(ids, n_ids, caps).tolist() == lru_curve(stack_distances(blocks), caps).tolist()
    for window in (10, 100):
        assert (
            lru_hit_counts(ids, n_ids, caps[caps <= window]).tolist() == lru_hits(blocks, caps[caps <= window]).tolist()
        )
