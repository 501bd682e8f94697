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

from kvviz.policies._heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.policies._jit import kernel


@kernel
def frequency_hits(ids: np.ndarray, n_ids: int, capacity: int, depth: np.ndarray) -> np.ndarray:
    """Per-access hits; the key is (frequency, -depth, time reached), smallest evicted first.

    LFU passes zeros for ``depth``; LengthAwareCache passes each access's index in its request.
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
