"""SIEVE (Zhang et al., NSDI 2024): one FIFO queue, a visited bit, and a moving hand.

A new block enters at the head unvisited; a hit only sets its visited bit. To evict, the hand
walks from where it stopped last time (first time: the tail) toward the head, clearing visited
bits, and evicts the first unvisited block; past the head it wraps to the tail. The hand then
rests on the evicted block's newer neighbour. Retained blocks never move, unlike CLOCK's.
libCacheSim ``Sieve.c``.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import kernel
from kvviz.hiradix.lists import NONE, NOWHERE, PREV, SIZE, TAIL, WHERE, new_queues, push_head, unlink

QUEUE = 0


@kernel
def sieve_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of a SIEVE cache of ``capacity`` blocks."""
    hit = np.zeros(len(ids), np.bool_)
    links, ends = new_queues(n_ids, 1)
    visited = np.zeros(n_ids, np.bool_)
    hand = NONE
    for i in range(len(ids)):
        b = ids[i]
        if links[b, WHERE] != NOWHERE:
            hit[i] = True
            visited[b] = True
            continue
        if ends[QUEUE, SIZE] == capacity:
            victim = hand if hand != NONE else ends[QUEUE, TAIL]
            while visited[victim]:
                visited[victim] = False
                victim = links[victim, PREV] if links[victim, PREV] != NONE else ends[QUEUE, TAIL]
            hand = links[victim, PREV]
            unlink(links, ends, victim)
        push_head(links, ends, QUEUE, b)
        visited[b] = False
    return hit
