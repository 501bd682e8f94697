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

from kvviz.policies._jit import helper, kernel
from kvviz.policies._lists import SIZE, WHERE, new_queues, pop_tail, push_head, unlink

T1, B1, T2, B2 = 0, 1, 2, 3
NO_GHOST = -1


@helper
def _replace(links: np.ndarray, ends: np.ndarray, p: float, hit_in_b2: bool) -> None:
    """The paper's REPLACE: demote T1's or T2's tail to its ghost list."""
    t1 = ends[T1, SIZE]
    if (t1 > 0 and (t1 > p or (t1 == p and hit_in_b2))) or ends[T2, SIZE] == 0:
        push_head(links, ends, B1, pop_tail(links, ends, T1))
    else:
        push_head(links, ends, B2, pop_tail(links, ends, T2))


@helper
def _make_room(links: np.ndarray, ends: np.ndarray, capacity: int, p: float, ghost: int) -> None:
    """Evict one block (into a ghost list, or outright) before inserting a missed block."""
    if ghost != NO_GHOST:
        _replace(links, ends, p, ghost == B2)
    elif ends[T1, SIZE] + ends[B1, SIZE] + 1 > capacity:
        if ends[B1, SIZE] > 0:
            pop_tail(links, ends, B1)
            _replace(links, ends, p, False)
        else:
            pop_tail(links, ends, T1)
    else:
        ghosts_and_data = ends[T1, SIZE] + ends[B1, SIZE] + ends[T2, SIZE] + ends[B2, SIZE]
        if ghosts_and_data >= 2 * capacity and ends[B2, SIZE] > 0:
            pop_tail(links, ends, B2)
        _replace(links, ends, p, False)


@kernel
def arc_hits(ids: np.ndarray, n_ids: int, capacity: int) -> np.ndarray:
    """Per-access hits of an ARC cache of ``capacity`` blocks."""
    hit = np.zeros(len(ids), np.bool_)
    links, ends = new_queues(n_ids, 4)
    p = 0.0
    for i in range(len(ids)):
        b = ids[i]
        where = links[b, WHERE]
        if where == T1 or where == T2:
            hit[i] = True
            unlink(links, ends, b)
            push_head(links, ends, T2, b)
            continue
        ghost = NO_GHOST
        if where == B1:
            p = min(p + max(ends[B2, SIZE] / ends[B1, SIZE], 1.0), float(capacity))
            ghost = B1
        elif where == B2:
            p = max(p - max(ends[B1, SIZE] / ends[B2, SIZE], 1.0), 0.0)
            ghost = B2
        if ghost != NO_GHOST:
            unlink(links, ends, b)
        while ends[T1, SIZE] + ends[T2, SIZE] + 1 > capacity:
            _make_room(links, ends, capacity, p, ghost)
        push_head(links, ends, T1 if ghost == NO_GHOST else T2, b)
    return hit
