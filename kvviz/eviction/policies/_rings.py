"""Queues as ring buffers with lazy removal, for ARC and S3-FIFO.

A queue is a ring of block ids, oldest at ``START``, newest just before ``END`` (both running
sequence numbers; slot = sequence & ``mask``). Entering writes one slot; taking the oldest
reads one; both walk memory in order, where a linked list jumps between blocks' rows. A block
taken out of the middle (an LRU hit, a ghost hit) is only marked out: ``tag[b]`` packs which
queue holds ``b`` (its low ``QUEUE_BITS``, ``NOWHERE`` for none: ``queue_of``) with the
sequence number of its live entry (the rest), so an entry is live exactly when its block's tag
still names it, and older copies are skipped when they reach the oldest end. A full ring (live
and dead entries) is compacted in place, dropping the dead ones; ``new_rings`` sizes the ring
at least twice a queue's largest size, so a compaction reclaims at least as many slots as it
copies, O(1) per access overall.

How many live blocks each queue holds is the kernel's own business, in local variables: a size
kept in an array is read again after every store into the rings (the compiler cannot tell the
arrays apart), and with four sizes in a table ARC ran 2.7 times slower.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper

QUEUE_BITS = 3
NOWHERE = (1 << QUEUE_BITS) - 1  # queues are 0 .. NOWHERE-1
START, END = 0, 1


@helper
def new_rings(n_ids: int, n_queues: int, most: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ring, ends, tag)`` for empty queues ``0 .. n_queues-1`` of at most ``most`` blocks each."""
    slots = 1
    while slots < 2 * most + 2:
        slots *= 2
    ring = np.empty((n_queues, slots), np.int32)
    ends = np.zeros((n_queues, 2), np.int64)
    tag = np.full(n_ids, NOWHERE, np.int64)
    return ring, ends, tag


@helper
def queue_of(tag: np.ndarray, b: int) -> int:
    """The queue holding block ``b``, or ``NOWHERE``."""
    return tag[b] & NOWHERE


@helper
def _compact(ring: np.ndarray, ends: np.ndarray, tag: np.ndarray, queue: int) -> None:
    mask = ring.shape[1] - 1
    kept = ends[queue, START]
    for s in range(ends[queue, START], ends[queue, END]):
        b = ring[queue, s & mask]
        if tag[b] == (s << QUEUE_BITS) | queue:
            ring[queue, kept & mask] = b
            tag[b] = (kept << QUEUE_BITS) | queue
            kept += 1
    ends[queue, END] = kept


@helper
def push(ring: np.ndarray, ends: np.ndarray, tag: np.ndarray, queue: int, b: int) -> None:
    """Put block ``b`` (in no queue) at the newest end of ``queue``."""
    if ends[queue, END] - ends[queue, START] == ring.shape[1]:
        _compact(ring, ends, tag, queue)
    s = ends[queue, END]
    ring[queue, s & (ring.shape[1] - 1)] = b
    tag[b] = (s << QUEUE_BITS) | queue
    ends[queue, END] = s + 1


@helper
def take(tag: np.ndarray, b: int) -> None:
    """Take block ``b`` out of whichever queue holds it (its entry becomes dead)."""
    tag[b] = NOWHERE


@helper
def pop_oldest(ring: np.ndarray, ends: np.ndarray, tag: np.ndarray, queue: int) -> int:
    """Remove and return the oldest live block of ``queue`` (which must not be empty)."""
    mask = ring.shape[1] - 1
    while True:
        s = ends[queue, START]
        b = ring[queue, s & mask]
        ends[queue, START] = s + 1
        if tag[b] == (s << QUEUE_BITS) | queue:
            tag[b] = NOWHERE
            return b
