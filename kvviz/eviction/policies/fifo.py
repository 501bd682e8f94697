"""FIFO: evict the block that entered the cache first; a hit changes nothing.

libCacheSim ``FIFO.c``: insert at the head of one queue, evict from its tail. Nothing ever leaves
the middle of that queue, so it is a ring of ``capacity`` slots: a miss overwrites the slot of the
block that entered ``capacity`` misses ago (evicting it) and moves on. A miss touches the ring in
order and two flags, where a linked list writes four links in two blocks' rows.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import kernel


@kernel
def fifo_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of a FIFO cache of ``capacity`` blocks."""
    hit = np.zeros(len(ids), np.bool_)
    if capacity <= 0:
        return hit
    cached = np.zeros(n_ids, np.bool_)
    ring = np.empty(min(capacity, n_ids), np.int32)
    held = 0
    slot = 0
    for i in range(len(ids)):
        b = ids[i]
        if cached[b]:
            hit[i] = True
            continue
        if held == len(ring):
            cached[ring[slot]] = False
        else:
            held += 1
        ring[slot] = b
        cached[b] = True
        slot += 1
        if slot == len(ring):
            slot = 0
    return hit
