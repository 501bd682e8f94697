"""S3-FIFO (Yang et al., SOSP 2023), as libCacheSim ``S3FIFO.c`` with its defaults.

Three FIFO queues: a small queue S of floor(0.1 C) blocks, a main queue M of the rest, and a
ghost queue G remembering the ids of up to floor(0.9 C) blocks evicted from S. Every hit adds 1
to the block's counter. A miss whose id is in G enters M; any other miss enters S (before the
first eviction, M once S is full). To make room: while M is over its share or S is empty, M's
tail is reinserted at M's head with its counter capped at 3 minus 1 if it was hit, else evicted;
otherwise S's tail moves to M (counter reset) if it was hit at least twice, else is evicted
into G. libCacheSim never admits a block as large as S itself: below 20 blocks S holds at most
one block, so nothing is ever cached (libCacheSim refuses fewer than 10 blocks outright).
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._jit import helper, kernel
from kvviz.policies._lists import SIZE, WHERE, new_queues, pop_tail, push_head, unlink

SMALL, MAIN, GHOST = 0, 1, 2
SMALL_RATIO = 0.1
GHOST_RATIO = 0.9
MOVE_TO_MAIN = 2     # hits in S needed to move to M instead of G
MAX_FREQ = 3         # M's counter saturates here (2-bit CLOCK)


@helper
def _remember(links: np.ndarray, ends: np.ndarray, b: int, ghost_size: int) -> None:
    """Put an id evicted from S into the ghost FIFO (dropping its oldest id when full)."""
    if ghost_size == 0 or links[b, WHERE] == GHOST:
        return
    if ends[GHOST, SIZE] == ghost_size:
        pop_tail(links, ends, GHOST)
    push_head(links, ends, GHOST, b)


@helper
def _evict_small(links: np.ndarray, ends: np.ndarray, freq: np.ndarray, ghost_size: int) -> None:
    while ends[SMALL, SIZE] > 0:
        b = pop_tail(links, ends, SMALL)
        if freq[b] >= MOVE_TO_MAIN:
            push_head(links, ends, MAIN, b)
            freq[b] = 0
        else:
            _remember(links, ends, b, ghost_size)
            return


@helper
def _evict_main(links: np.ndarray, ends: np.ndarray, freq: np.ndarray) -> None:
    while ends[MAIN, SIZE] > 0:
        b = pop_tail(links, ends, MAIN)
        if freq[b] == 0:
            return
        push_head(links, ends, MAIN, b)
        freq[b] = min(freq[b], MAX_FREQ) - 1


@kernel
def s3fifo_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of an S3-FIFO cache of ``capacity`` blocks."""
    hit = np.zeros(len(ids), np.bool_)
    small_size = int(capacity * SMALL_RATIO)
    main_size = capacity - small_size
    ghost_size = int(capacity * GHOST_RATIO)
    links, ends = new_queues(n_ids, 3)
    freq = np.zeros(n_ids, np.int64)
    has_evicted = False
    for i in range(len(ids)):
        b = ids[i]
        where = links[b, WHERE]
        if where == SMALL or where == MAIN:
            hit[i] = True
            freq[b] += 1
            continue
        in_ghost = where == GHOST
        if in_ghost:
            unlink(links, ends, b)
        if small_size < 1 or (small_size == 1 and not in_ghost):
            continue                    # never admitted: a block as large as S
        while ends[SMALL, SIZE] + ends[MAIN, SIZE] + 1 > capacity:
            has_evicted = True
            if ends[MAIN, SIZE] > main_size or ends[SMALL, SIZE] == 0:
                _evict_main(links, ends, freq)
            else:
                _evict_small(links, ends, freq, ghost_size)
        if in_ghost or (not has_evicted and ends[SMALL, SIZE] >= small_size):
            push_head(links, ends, MAIN, b)
        else:
            push_head(links, ends, SMALL, b)
        freq[b] = 0
    return hit
