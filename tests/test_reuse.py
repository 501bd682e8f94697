"""Stack distances and the one-pass LRU curve against the definition and a plain LRU simulation."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.reuse import lru_hits, stack_distances


def naive_stack_distances(seq):
    out = []
    for i, b in enumerate(seq):
        prev = max((j for j in range(i) if seq[j] == b), default=None)
        out.append(-1 if prev is None else len(set(seq[prev + 1:i]) - {b}))
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


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=60))
def test_stack_distances_match_the_definition(seq):
    assert stack_distances(np.array(seq, dtype=np.int64)).tolist() == naive_stack_distances(seq)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_one_pass_lru_curve_equals_simulation(seq):
    caps = np.array([1, 2, 3, 5, 8, 20])
    assert lru_hits(np.array(seq), caps).tolist() == [lru_simulation(seq, int(c)) for c in caps]
