"""LFU and Mooncake's LengthAwareCache: evict the block with the fewest hits while cached.

**LFU** (libCacheSim ``LFU.c``): a block enters with frequency 1 and gains 1 per hit; the count
is forgotten when the block is evicted. The victim has the lowest frequency; among equals, the
one that reached that frequency first (libCacheSim appends to the tail of a per-frequency list
and evicts from its head).

**LengthAwareCache** (Mooncake, arXiv 2407.00079 v3 §4.2, Table 1): "similar to LFU but
prioritizing cache blocks occurring later in requests" for eviction, because with prefix reuse
a later block can only hit if every earlier block of the request hits too. The rule kept here:
lowest frequency first; among equal frequencies, the block that sat deepest in its request
(largest block index, at its latest access) first; among those, the one that reached that state
first. The paper states no tie rule; this is the choice documented in ``docs/eviction.md``.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel
from kvviz.hiradix.lists import NOWHERE, SIZE, WHERE, new_queues, pop_tail, push_head, unlink

ABSENT = -1


@kernel
def lfu_hits(ids: np.ndarray, n_ids: int, capacity: int, most_accesses: int) -> np.ndarray:
    """Per-access hits of LFU in O(1) per access, with libCacheSim's frequency lists.

    Queue ``f`` holds the cached blocks of frequency ``f``, newest at the head; the victim is the
    tail of the lowest non-empty queue. ``most_accesses`` bounds every frequency (the most any
    block is accessed in the trace). A miss always inserts at frequency 1 right after evicting,
    so the lowest frequency only needs tracking through hits.
    """
    hit = np.zeros(len(ids), np.bool_)
    links, ends = new_queues(n_ids, most_accesses + 1)
    cached = 0
    lowest = 1
    for i in range(len(ids)):
        b = ids[i]
        f = links[b, WHERE]
        if f != NOWHERE:
            hit[i] = True
            unlink(links, ends, b)
            push_head(links, ends, f + 1, b)
            if f == lowest and ends[f, SIZE] == 0:
                lowest = f + 1
            continue
        if cached == capacity:
            pop_tail(links, ends, lowest)
        else:
            cached += 1
        push_head(links, ends, 1, b)
        lowest = 1
    return hit


DEEPEST = 2**31 - 1  # depths, frequencies, times and blocks are below this (``MAX_ACCESSES``)
BLOCK = 0xFFFFFFFF  # the low 32 bits of an entry's second word: its block


@helper
def state_key(freq: int, depth: int, time: int, block: int) -> tuple[int, int]:
    """A cached block's place in the eviction order as two words compared in turn: the first packs
    (frequency, deepest first), the second (time that state was reached, then the block, which
    never decides: times differ). Every part is below 2**31, so each word holds its pair exactly
    and the pair of words orders as the tuple ``(freq, -depth, time)``."""
    return (freq << 32) | (DEEPEST - depth), (time << 32) | block


@helper
def _less(heap: np.ndarray, k: int, first: int, second: int) -> bool:
    """Whether the entry at heap place ``k`` comes before the entry ``(first, second)``."""
    return heap[k, 0] < first or (heap[k, 0] == first and heap[k, 1] < second)


@helper
def _put(heap: np.ndarray, slot: np.ndarray, k: int, first: int, second: int) -> None:
    heap[k, 0] = first
    heap[k, 1] = second
    slot[second & BLOCK] = k


@helper
def _sift_up(heap: np.ndarray, slot: np.ndarray, k: int, first: int, second: int) -> None:
    """Put the entry ``(first, second)`` at heap place ``k`` or above it."""
    while k > 0 and not _less(heap, (k - 1) >> 1, first, second):
        _put(heap, slot, k, heap[(k - 1) >> 1, 0], heap[(k - 1) >> 1, 1])
        k = (k - 1) >> 1
    _put(heap, slot, k, first, second)


@helper
def _sift_down(heap: np.ndarray, slot: np.ndarray, size: int, k: int, first: int, second: int) -> None:
    """Put the entry ``(first, second)`` at heap place ``k`` or below it."""
    while 2 * k + 1 < size:
        child = 2 * k + 1
        if child + 1 < size and _less(heap, child + 1, heap[child, 0], heap[child, 1]):
            child += 1
        if not _less(heap, child, first, second):
            break
        _put(heap, slot, k, heap[child, 0], heap[child, 1])
        k = child
    _put(heap, slot, k, first, second)


@kernel
def length_aware_hits(ids: np.ndarray, n_ids: int, capacity: int, depth: np.ndarray) -> np.ndarray:
    """Per-access hits of LengthAwareCache; ``depth[i]`` is access i's block index in its request.

    The cached blocks sit in a min-heap of their keys (``state_key``), stored in the heap's own
    rows so that a comparison reads memory the heap walks anyway; ``slot[b]`` is block b's row
    (``ABSENT`` if not cached). A hit raises the block's frequency, so its key only grows and it
    only moves down; a miss in a full cache puts the new block in the root's place (the evicted
    block's) and moves it down. With all depths zero this is exactly LFU.
    """
    hit = np.zeros(len(ids), np.bool_)
    heap = np.empty((max(min(capacity, n_ids), 1), 2), np.int64)
    slot = np.full(n_ids, ABSENT, np.int32)
    size = 0
    for i in range(len(ids)):
        b = ids[i]
        k = slot[b]
        if k != ABSENT:
            hit[i] = True
            first, second = state_key((heap[k, 0] >> 32) + 1, depth[i], i, b)
            _sift_down(heap, slot, size, k, first, second)
            continue
        first, second = state_key(1, depth[i], i, b)
        if size == capacity:
            slot[heap[0, 1] & BLOCK] = ABSENT
            _sift_down(heap, slot, size, 0, first, second)
        else:
            size += 1
            _sift_up(heap, slot, size - 1, first, second)
    return hit
