"""LRU: evict the block used least recently.

LRU is a stack algorithm (Mattson, Gecsei, Slutz and Traiger, IBM Systems Journal 1970): a cache
of C blocks always holds the C most recently used blocks, so an access hits exactly when its
*stack distance* — the number of distinct other blocks used since the same block's previous
access — is below C. One pass over the trace gives every access's distance and with it the hits
of every capacity at once. The pass keeps a Fenwick tree over access positions marking each
block's latest access; the distance is the number of marks strictly between the two accesses.
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._jit import kernel

FIRST = -1  # the distance of a block's first access (a miss at every capacity)


@kernel
def _add(tree: np.ndarray, pos: int, delta: int) -> None:
    pos += 1
    while pos < len(tree):
        tree[pos] += delta
        pos += pos & -pos


@kernel
def _count_before(tree: np.ndarray, pos: int) -> int:
    """Marks at positions 0 .. pos-1."""
    total = 0
    while pos > 0:
        total += tree[pos]
        pos -= pos & -pos
    return total


@kernel
def lru_stack_distances(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """LRU stack distance of every access, ``FIRST`` for a block's first access."""
    n = len(ids)
    distance = np.full(n, FIRST, np.int64)
    latest = np.full(n_ids, -1, np.int64)
    tree = np.zeros(n + 1, np.int64)
    for i in range(n):
        b = ids[i]
        p = latest[b]
        if p >= 0:
            distance[i] = _count_before(tree, i) - _count_before(tree, p + 1)
            _add(tree, p, -1)
        _add(tree, i, 1)
        latest[b] = i
    return distance


def lru_hits_from_distances(distance: np.ndarray, capacity: int) -> np.ndarray:
    """Per-access hits of an LRU cache of ``capacity`` blocks, read off the stack distances."""
    return (distance >= 0) & (distance < capacity)
