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

from kvviz.common.jit import kernel
from kvviz.eviction.policies._rings import new_rings, pop_oldest, push, queue_of, take

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
    t1 = b1 = t2 = b2 = 0  # the lists' sizes
    for i in range(len(ids)):
        b = ids[i]
        found = queue_of(tag, b)
        if found == T1 or found == T2:
            hit[i] = True
            take(tag, b)
            if found == T1:
                t1 -= 1
            else:
                t2 -= 1
            push(ring, ends, tag, T2, b)
            t2 += 1
            continue
        ghost = NO_GHOST
        if found == B1:
            p = min(p + max(b2 / b1, 1.0), float(capacity))
            ghost = B1
            b1 -= 1
        elif found == B2:
            p = max(p - max(b1 / b2, 1.0), 0.0)
            ghost = B2
            b2 -= 1
        if ghost != NO_GHOST:
            take(tag, b)
        while t1 + t2 + 1 > capacity:
            demote = T1 if (t1 > 0 and (t1 > p or (t1 == p and ghost == B2)) or t2 == 0) else T2  # REPLACE
            if ghost == NO_GHOST:  # case IV: first trim the ghosts
                if t1 + b1 + 1 > capacity:
                    if b1 == 0:
                        demote = NO_GHOST  # T1's oldest leaves outright
                    else:
                        pop_oldest(ring, ends, tag, B1)
                        b1 -= 1
                elif t1 + b1 + t2 + b2 >= 2 * capacity and b2 > 0:
                    pop_oldest(ring, ends, tag, B2)
                    b2 -= 1
            if demote == T2:
                victim = pop_oldest(ring, ends, tag, T2)
                t2 -= 1
                push(ring, ends, tag, B2, victim)
                b2 += 1
            else:
                victim = pop_oldest(ring, ends, tag, T1)
                t1 -= 1
                if demote == T1:
                    push(ring, ends, tag, B1, victim)
                    b1 += 1
        if ghost == NO_GHOST:
            push(ring, ends, tag, T1, b)
            t1 += 1
        else:
            push(ring, ends, tag, T2, b)
            t2 += 1
    return hit
