"""Doubly linked queues over dense block ids, for the queue-based policies.

A block is in at most one queue at a time, so all queues share one ``links`` table indexed by
block id, with columns ``PREV`` (toward the head), ``NEXT`` (toward the tail) and ``WHERE`` (the
queue holding the block, or ``NOWHERE``). ``ends`` has one row per queue: ``HEAD`` (newest end,
where blocks enter), ``TAIL`` (oldest end) and ``SIZE``. This is the layout of libCacheSim's
intrusive lists; keeping a block's three fields in one int32 row keeps an operation in one cache line.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper

NONE = -1  # no block
NOWHERE = -1  # in no queue
PREV, NEXT, WHERE = 0, 1, 2
HEAD, TAIL, SIZE = 0, 1, 2


@helper
def new_queues(n_ids: int, n_queues: int) -> tuple[np.ndarray, np.ndarray]:
    """``(links, ends)`` for empty queues ``0 .. n_queues-1`` over blocks ``0 .. n_ids-1``."""
    links = np.full((n_ids, 3), NONE, np.int32)
    ends = np.full((n_queues, 3), NONE, np.int64)
    ends[:, SIZE] = 0
    return links, ends


@helper
def push_head(links: np.ndarray, ends: np.ndarray, queue: int, b: int) -> None:
    """Put block ``b`` at the head (newest end) of ``queue``."""
    old = ends[queue, HEAD]
    links[b, PREV] = NONE
    links[b, NEXT] = old
    if old != NONE:
        links[old, PREV] = b
    else:
        ends[queue, TAIL] = b
    ends[queue, HEAD] = b
    ends[queue, SIZE] += 1
    links[b, WHERE] = queue


@helper
def unlink(links: np.ndarray, ends: np.ndarray, b: int) -> None:
    """Take block ``b`` out of whichever queue holds it."""
    queue = links[b, WHERE]
    before, after = links[b, PREV], links[b, NEXT]
    if before != NONE:
        links[before, NEXT] = after
    else:
        ends[queue, HEAD] = after
    if after != NONE:
        links[after, PREV] = before
    else:
        ends[queue, TAIL] = before
    ends[queue, SIZE] -= 1
    links[b, WHERE] = NOWHERE


@helper
def pop_tail(links: np.ndarray, ends: np.ndarray, queue: int) -> int:
    """Remove and return the oldest block of ``queue`` (which must not be empty)."""
    b = ends[queue, TAIL]
    unlink(links, ends, b)
    return b
