"""FIFO: evict the block that entered the cache first; a hit changes nothing.

libCacheSim ``FIFO.c``: insert at the head of one queue, evict from its tail.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import kernel
from kvviz.hiradix.lists import NOWHERE, SIZE, WHERE, new_queues, pop_tail, push_head

QUEUE = 0


@kernel
def fifo_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of a FIFO cache of ``capacity`` blocks."""
    hit = np.zeros(len(ids), np.bool_)
    links, ends = new_queues(n_ids, 1)
    for i in range(len(ids)):
        b = ids[i]
        if links[b, WHERE] != NOWHERE:
            hit[i] = True
            continue
        if ends[QUEUE, SIZE] == capacity:
            pop_tail(links, ends, QUEUE)
        push_head(links, ends, QUEUE, b)
    return hit
