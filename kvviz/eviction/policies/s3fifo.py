"""S3-FIFO (Yang et al., SOSP 2023), as libCacheSim ``S3FIFO.c`` with its defaults.

Three FIFO queues: a small queue S of floor(0.1 C) blocks, a main queue M of the rest, and a
ghost queue G remembering the ids of up to floor(0.9 C) blocks evicted from S. Every hit adds 1
to the block's counter, which saturates at 3 (a 2-bit counter). A miss whose id is in G enters
M; any other miss enters S (before the first eviction, M once S is full). To make room: while M
is over its share or S is empty, M's tail is reinserted at M's head with its counter minus 1 if
it was hit, else evicted; otherwise S's tail moves to M (counter reset) if it was hit at least twice, else is evicted
into G. libCacheSim never admits a block as large as S itself: below 20 blocks S holds at most
one block, so nothing is ever cached (libCacheSim refuses fewer than 10 blocks outright).
The queues are rings (``kvviz.eviction.policies._rings``): S and M only enter at one end and leave at the
other, and a ghost hit only marks its id out.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import kernel
from kvviz.eviction.policies._rings import new_rings, pop_oldest, push, queue_of, take

SMALL, MAIN, GHOST = 0, 1, 2
SMALL_RATIO = 0.1
GHOST_RATIO = 0.9
MOVE_TO_MAIN = 2  # hits in S needed to move to M instead of G
MAX_FREQ = 3  # the counter saturates here (2-bit CLOCK): more hits change nothing


@kernel
def s3fifo_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of an S3-FIFO cache of ``capacity`` blocks.

    The eviction loops are written out here rather than as inlined helpers: numba kept array
    reference counting inside the loop for helpers that call helpers, which tripled the time.
    """
    hit = np.zeros(len(ids), np.bool_)
    small_size = int(capacity * SMALL_RATIO)
    main_size = capacity - small_size
    ghost_size = int(capacity * GHOST_RATIO)
    ring, ends, tag = new_rings(n_ids, 3, min(capacity, n_ids))
    freq = np.zeros(n_ids, np.int8)
    n_small = n_main = n_ghost = 0  # the queues' sizes
    has_evicted = False
    for i in range(len(ids)):
        b = ids[i]
        found = queue_of(tag, b)
        if found == SMALL or found == MAIN:
            hit[i] = True
            freq[b] = min(freq[b] + 1, MAX_FREQ)
            continue
        in_ghost = found == GHOST
        if in_ghost:
            take(tag, b)
            n_ghost -= 1
        if small_size < 1 or (small_size == 1 and not in_ghost):
            continue  # never admitted: a block as large as S
        while n_small + n_main + 1 > capacity:
            has_evicted = True
            if n_main > main_size or n_small == 0:
                while n_main > 0:  # M: reinsert blocks that were hit, one hit fewer
                    victim = pop_oldest(ring, ends, tag, MAIN)
                    if freq[victim] == 0:
                        n_main -= 1
                        break
                    push(ring, ends, tag, MAIN, victim)
                    freq[victim] -= 1
            else:
                while n_small > 0:  # S: hit twice moves to M, else leaves into G
                    victim = pop_oldest(ring, ends, tag, SMALL)
                    n_small -= 1
                    if freq[victim] >= MOVE_TO_MAIN:
                        push(ring, ends, tag, MAIN, victim)
                        n_main += 1
                        freq[victim] = 0
                        continue
                    if ghost_size > 0:
                        if n_ghost == ghost_size:
                            pop_oldest(ring, ends, tag, GHOST)
                            n_ghost -= 1
                        push(ring, ends, tag, GHOST, victim)
                        n_ghost += 1
                    break
        if in_ghost or (not has_evicted and n_small >= small_size):
            push(ring, ends, tag, MAIN, b)
            n_main += 1
        else:
            push(ring, ends, tag, SMALL, b)
            n_small += 1
        freq[b] = 0
    return hit
