"""ARC, the Adaptive Replacement Cache (Megiddo and Modha, FAST 2003), as libCacheSim ``ARC.c``.

Two LRU lists of cached blocks — T1 (seen once recently) and T2 (seen at least twice) — and two
ghost lists of evicted ids — B1 and B2. A target size ``p`` for T1 adapts: a ghost hit in B1
grows it by max(|B2|/|B1|, 1), a ghost hit in B2 shrinks it by max(|B1|/|B2|, 1) (floats, as in
libCacheSim, clamped to [0, C]). A hit moves the block to T2's head; a miss enters T1's head, or
T2's head after a ghost hit. REPLACE evicts T1's tail into B1 when T1 is non-empty and larger
than ``p`` (or equal to it on a B2 ghost hit), or when T2 is empty; otherwise T2's tail into B2.
On a miss in all four lists with a full cache (the paper's case IV): if |T1|+|B1| would exceed C,
drop B1's tail and REPLACE, or, with B1 empty, drop T1's tail outright; otherwise drop B2's tail
once all four lists hold 2C ids, then REPLACE.
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._jit import kernel
from kvviz.policies._rings import SIZE, new_rings, pop_oldest, push, queue_of, remove

T1, B1, T2, B2 = 0, 1, 2, 3
NO_GHOST = -1


@kernel
def arc_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of an ARC cache of ``capacity`` blocks (the four lists hold at most 2C ids).

    Making room is written out here rather than as inlined helpers: numba kept array reference
    counting inside the loop for helpers that call helpers, which doubled the time.
    """
    hit = np.zeros(len(ids), np.bool_)
    ring, ends, tag = new_rings(n_ids, 4, min(2 * capacity, n_ids))
    p = 0.0
    for i in range(len(ids)):
        b = ids[i]
        found = queue_of(tag, b)
        if found == T1 or found == T2:
            hit[i] = True
            remove(ends, tag, b)
            push(ring, ends, tag, T2, b)
            continue
        ghost = NO_GHOST
        if found == B1:
            p = min(p + max(ends[B2, SIZE] / ends[B1, SIZE], 1.0), float(capacity))
            ghost = B1
        elif found == B2:
            p = max(p - max(ends[B1, SIZE] / ends[B2, SIZE], 1.0), 0.0)
            ghost = B2
        if ghost != NO_GHOST:
            remove(ends, tag, b)
        while ends[T1, SIZE] + ends[T2, SIZE] + 1 > capacity:
            demote = T1 if (ends[T1, SIZE] > 0 and (ends[T1, SIZE] > p or (ends[T1, SIZE] == p and ghost == B2))
                            or ends[T2, SIZE] == 0) else T2         # REPLACE's choice, unless case IV
            if ghost == NO_GHOST:                                   # case IV: first trim the ghosts
                if ends[T1, SIZE] + ends[B1, SIZE] + 1 > capacity:
                    if ends[B1, SIZE] == 0:
                        demote = NO_GHOST                           # T1's oldest leaves outright
                    else:
                        pop_oldest(ring, ends, tag, B1)
                elif (ends[T1, SIZE] + ends[B1, SIZE] + ends[T2, SIZE] + ends[B2, SIZE] >= 2 * capacity
                      and ends[B2, SIZE] > 0):
                    pop_oldest(ring, ends, tag, B2)
            victim = pop_oldest(ring, ends, tag, T1 if demote == NO_GHOST else demote)
            if demote != NO_GHOST:
                push(ring, ends, tag, B1 if demote == T1 else B2, victim)
        push(ring, ends, tag, T1 if ghost == NO_GHOST else T2, b)
    return hit
