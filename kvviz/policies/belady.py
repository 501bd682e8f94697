"""Belady's MIN (OPT) with forced insertion: on a miss the block is always inserted, and when the
cache is full the cached block whose next use lies farthest in the future is evicted first —
blocks never used again before any other.

No online policy can do better, so its curve is the upper bound on every chart (Belady, "A study
of replacement algorithms for a virtual-storage computer", IBM Systems Journal 1966). Which of
several never-reused blocks goes first cannot change any later hit, so ties need no rule.
libCacheSim ``Belady.c`` keeps the same priority queue on the next access time.
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.policies._jit import kernel


@kernel
def belady_hits(ids: np.ndarray, n_ids: int, capacity: int, next_use: np.ndarray) -> np.ndarray:
    """Per-access hits of MIN; ``next_use[i]`` is the index of the next access to ``ids[i]``."""
    hit = np.zeros(len(ids), np.bool_)
    nodes, slots = new_heap(n_ids, capacity)
    size = 0
    for i in range(len(ids)):
        b = ids[i]
        nodes[b, 0] = -next_use[i]         # the smallest key, the farthest next use, goes first
        if nodes[b, SLOT] != ABSENT:
            hit[i] = True
            rekey(nodes, slots, size, b)
            continue
        if size == capacity:
            size = pop(nodes, slots, size)
        size = push(nodes, slots, size, b)
    return hit
