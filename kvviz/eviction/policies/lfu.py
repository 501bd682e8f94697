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

from kvviz.common.jit import kernel
from kvviz.hiradix.heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.hiradix.lists import NOWHERE, SIZE, WHERE, new_queues, pop_tail, push_head, unlink


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


@kernel
def length_aware_hits(ids: np.ndarray, n_ids: int, capacity: int, depth: np.ndarray) -> np.ndarray:
    """Per-access hits of LengthAwareCache; ``depth[i]`` is access i's block index in its request.

    The cached blocks sit in a heap keyed by (frequency, -depth, time that state was reached);
    the smallest key is evicted. With all depths zero this is exactly LFU.
    """
    hit = np.zeros(len(ids), np.bool_)
    nodes, slots = new_heap(n_ids, capacity)
    size = 0
    for i in range(len(ids)):
        b = ids[i]
        nodes[b, 1] = -depth[i]
        nodes[b, 2] = i
        if nodes[b, SLOT] != ABSENT:
            hit[i] = True
            nodes[b, 0] += 1
            rekey(nodes, slots, size, b)
            continue
        if size == capacity:
            size = pop(nodes, slots, size)
        nodes[b, 0] = 1
        size = push(nodes, slots, size, b)
    return hit
