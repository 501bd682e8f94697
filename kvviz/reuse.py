"""Reuse in a block-access sequence: LRU stack distances and the LRU hit curve they give.

The stack distance of an access is the number of *distinct other* blocks touched since the
previous access to the same block. An LRU cache of C blocks hits exactly the accesses whose stack
distance is below C, so one pass gives the whole LRU hit curve (Mattson, Gecsei, Slutz and
Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970). The pass
keeps a Fenwick tree over access positions that marks each block's latest access; the distance
is the number of marks strictly between the two accesses. The loop is compiled by numba, like
the eviction policies (``kvviz.policies``), whose LRU reads its curve from here.
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._jit import kernel

FIRST = -1  # the distance given to an access with no earlier access to its block


@kernel
def _fenwick_add(tree: np.ndarray, pos: int, delta: int) -> None:
    pos += 1
    while pos < len(tree):
        tree[pos] += delta
        pos += pos & -pos


@kernel
def _fenwick_count(tree: np.ndarray, pos: int) -> int:
    """Marks at positions 0 .. pos-1."""
    total = 0
    while pos > 0:
        total += tree[pos]
        pos -= pos & -pos
    return total


@kernel
def stack_distances_of_ids(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """Stack distances of a sequence of dense ids (0 .. n_ids-1); ``FIRST`` for a first access."""
    n = len(ids)
    distance = np.full(n, FIRST, np.int64)
    latest = np.full(n_ids, -1, np.int64)
    tree = np.zeros(n + 1, np.int64)
    for i in range(n):
        b = ids[i]
        p = latest[b]
        if p >= 0:
            distance[i] = _fenwick_count(tree, i) - _fenwick_count(tree, p + 1)
            _fenwick_add(tree, p, -1)
        _fenwick_add(tree, i, 1)
        latest[b] = i
    return distance


def stack_distances(blocks: np.ndarray) -> np.ndarray:
    """LRU stack distance of every access (0 = no other block since), or -1 for a first access."""
    distinct, ids = np.unique(np.asarray(blocks), return_inverse=True)
    return stack_distances_of_ids(ids.astype(np.int64).ravel(), len(distinct))


def lru_curve(distances: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks), read off the stack distances: an access
    hits exactly when its distance is below the capacity."""
    reused = np.sort(distances[distances >= 0])
    return np.searchsorted(reused, np.asarray(capacities), side="left").astype(np.int64)


def lru_hits(blocks: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks) over the sequence, in one pass."""
    return lru_curve(stack_distances(blocks), capacities)
