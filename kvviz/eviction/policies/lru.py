"""LRU: evict the block used least recently.

LRU is a stack algorithm (Mattson, Gecsei, Slutz and Traiger, IBM Systems Journal 1970): a cache
of C blocks always holds the C most recently used blocks, so an access hits exactly when its
*stack distance* — the number of distinct other blocks used since the same block's previous
access — is below C. One pass over the trace gives every access's distance and with it the hits
of every capacity at once; ``kvviz.traces.reuse.stack_distances_of_ids`` is that pass.
"""

from __future__ import annotations

import numpy as np


def lru_hits_from_distances(distance: np.ndarray, capacity: int) -> np.ndarray:
    """Per-access hits of an LRU cache of ``capacity`` blocks, read off the stack distances: read as
    unsigned, a first access's -1 is above every capacity, so one comparison, without a copy, decides."""
    return distance.view(f"u{distance.itemsize}") < capacity
