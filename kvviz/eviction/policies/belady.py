"""Belady's MIN (OPT) with forced insertion: on a miss the block is always inserted, and when the
cache is full the cached block whose next use lies farthest in the future is evicted first —
blocks never used again before any other.

No online policy can do better, so its curve is the upper bound on every chart (Belady, "A study
of replacement algorithms for a virtual-storage computer", IBM Systems Journal 1966). Which of
several never-reused blocks goes first cannot change any later hit, so ties need no rule.
libCacheSim ``Belady.c`` keeps the same priority queue on the next access time.

Two things make it fast without changing a hit. A block that will never be used again is never
accessed again either, so which one it is does not matter: such blocks are only counted
(``dead``), and evicted first. The others sit in a max-heap whose entries pack the next use and
the block into one int64 (``next_use << 32 | block``; next uses of different blocks differ), so a
comparison reads the heap array itself; ``slot[b]`` is block b's place in it (``ABSENT`` if none).
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel

ABSENT = -1
BLOCK = 0xFFFFFFFF  # the low 32 bits of an entry: its block


@helper
def _sift_up(heap: np.ndarray, slot: np.ndarray, k: int) -> None:
    entry = heap[k]
    while k > 0:
        parent = (k - 1) >> 1
        if heap[parent] >= entry:
            break
        heap[k] = heap[parent]
        slot[heap[k] & BLOCK] = k
        k = parent
    heap[k] = entry
    slot[entry & BLOCK] = k


@helper
def _sift_down(heap: np.ndarray, slot: np.ndarray, size: int, k: int) -> None:
    entry = heap[k]
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] > heap[child]:
            child += 1
        if heap[child] <= entry:
            break
        heap[k] = heap[child]
        slot[heap[k] & BLOCK] = k
        k = child
    heap[k] = entry
    slot[entry & BLOCK] = k


@helper
def _take(heap: np.ndarray, slot: np.ndarray, size: int, k: int) -> int:
    """Remove the entry at heap place ``k``; returns the new size."""
    slot[heap[k] & BLOCK] = ABSENT
    size -= 1
    if k < size:
        heap[k] = heap[size]
        _sift_up(heap, slot, k)
        _sift_down(heap, slot, size, slot[heap[size] & BLOCK])
    return size


@kernel
def belady_hits(ids: np.ndarray, n_ids: int, capacity: int, next_use: np.ndarray) -> np.ndarray:
    """Per-access hits of MIN; ``next_use[i]`` is the index of the next access to ``ids[i]``
    (``len(ids)`` if none)."""
    n = len(ids)
    hit = np.zeros(n, np.bool_)
    heap = np.empty(min(capacity, n_ids), np.int64)
    slot = np.full(n_ids, ABSENT, np.int32)
    size = 0
    dead = 0
    for i in range(n):
        b = ids[i]
        k = slot[b]
        if k != ABSENT:
            hit[i] = True
            if next_use[i] == n:
                size = _take(heap, slot, size, k)
                dead += 1
            else:
                heap[k] = (next_use[i] << 32) | b  # a later next use: toward the root
                _sift_up(heap, slot, k)
            continue
        if size + dead == capacity:
            if dead > 0:
                dead -= 1
            else:
                size = _take(heap, slot, size, 0)
        if next_use[i] == n:
            dead += 1
        else:
            heap[size] = (next_use[i] << 32) | b
            size += 1
            _sift_up(heap, slot, size - 1)
    return hit
