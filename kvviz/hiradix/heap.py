"""An indexed binary min-heap of cached blocks: the radix tree's evictable leaves and HiCache's tiers.

``nodes`` has one int32 row per block id: a key of three numbers compared lexicographically
(columns 0-2) and the block's heap slot (column ``SLOT``, ``ABSENT`` when not cached). ``slots``
holds the cached blocks in heap order and ``size`` how many there are, passed by value and
returned by the operations that change it. The root, ``slots[0]``, is the block to evict; a
block whose key changed moves in O(log size), and "is it cached?" is one read.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper

ABSENT = -1
SLOT = 3


@helper
def new_heap(n_ids: int, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, slots)`` of an empty heap for up to ``capacity`` of blocks ``0 .. n_ids-1``."""
    nodes = np.zeros((n_ids, 4), np.int32)
    nodes[:, SLOT] = ABSENT
    return nodes, np.empty(capacity, np.int32)


@helper
def _before(nodes: np.ndarray, a: int, b: int) -> bool:
    if nodes[a, 0] != nodes[b, 0]:
        return nodes[a, 0] < nodes[b, 0]
    if nodes[a, 1] != nodes[b, 1]:
        return nodes[a, 1] < nodes[b, 1]
    return nodes[a, 2] < nodes[b, 2]


@helper
def _place(nodes: np.ndarray, slots: np.ndarray, slot: int, b: int) -> None:
    slots[slot] = b
    nodes[b, SLOT] = slot


@helper
def _sift_up(nodes: np.ndarray, slots: np.ndarray, slot: int) -> None:
    b = slots[slot]
    while slot > 0:
        parent = (slot - 1) >> 1
        if not _before(nodes, b, slots[parent]):
            break
        _place(nodes, slots, slot, slots[parent])
        slot = parent
    _place(nodes, slots, slot, b)


@helper
def _sift_down(nodes: np.ndarray, slots: np.ndarray, size: int, slot: int) -> None:
    b = slots[slot]
    while True:
        child = 2 * slot + 1
        if child >= size:
            break
        if child + 1 < size and _before(nodes, slots[child + 1], slots[child]):
            child += 1
        if not _before(nodes, slots[child], b):
            break
        _place(nodes, slots, slot, slots[child])
        slot = child
    _place(nodes, slots, slot, b)


@helper
def push(nodes: np.ndarray, slots: np.ndarray, size: int, b: int) -> int:
    """Add block ``b`` (its key already written in ``nodes[b]``); returns the new size."""
    _place(nodes, slots, size, b)
    _sift_up(nodes, slots, size)
    return size + 1


@helper
def pop(nodes: np.ndarray, slots: np.ndarray, size: int) -> int:
    """Remove the block with the smallest key; returns the new size."""
    nodes[slots[0], SLOT] = ABSENT
    size -= 1
    if size > 0:
        _place(nodes, slots, 0, slots[size])
        _sift_down(nodes, slots, size, 0)
    return size


@helper
def rekey(nodes: np.ndarray, slots: np.ndarray, size: int, b: int) -> None:
    """Restore the heap order after the key of cached block ``b`` changed."""
    _sift_up(nodes, slots, nodes[b, SLOT])
    _sift_down(nodes, slots, size, nodes[b, SLOT])
