"""Reuse in a block-access sequence: LRU stack distances and the LRU hit curve they give.

The stack distance of an access is the number of *distinct other* blocks touched since the
previous access to the same block. An LRU cache of C blocks hits exactly the accesses whose stack
distance is below C, so one pass gives the whole LRU hit curve (Mattson, Gecsei, Slutz and
Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970). The pass
keeps a Fenwick tree over access positions that marks each block's latest access; the distance
is the number of marks strictly between the two accesses. The loop is compiled by numba, like
the eviction policies (``kvviz.policies``), whose LRU reads its curve from here.

``lru_hit_counts`` is the same pass for traces of any length (the exact LRU curve beside a SHARDS
sample, ``kvviz.shards``): it keeps only a histogram of the distances below the largest finite
capacity instead of one distance per access, 4-byte arrays, the trace's own ids when they are
already dense (a library entry's int32 ids), and a tree over about twice the distinct blocks
instead of one slot per access (compacted when full), so its memory is about 20 bytes per
distinct block, whatever the trace's length.
"""

from __future__ import annotations

import numpy as np

from kvviz.errors import require
from kvviz.policies._jit import kernel

FIRST = -1  # the distance given to an access with no earlier access to its block


@kernel
def _fenwick_add(tree: np.ndarray, pos: int, delta: int) -> None:
    pos += 1
    while pos < len(tree):
        tree[pos] += delta
        pos += pos & -pos


@kernel
def _fenwick_count(tree: np.ndarray, pos: int) -> int:
    """Marks at positions 0 .. pos-1."""
    total = 0
    while pos > 0:
        total += tree[pos]
        pos -= pos & -pos
    return total


@kernel
def stack_distances_of_ids(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """Stack distances of a sequence of dense ids (0 .. n_ids-1); ``FIRST`` for a first access."""
    n = len(ids)
    distance = np.full(n, FIRST, np.int64)
    latest = np.full(n_ids, -1, np.int64)
    tree = np.zeros(n + 1, np.int64)
    for i in range(n):
        b = ids[i]
        p = latest[b]
        if p >= 0:
            distance[i] = _fenwick_count(tree, i) - _fenwick_count(tree, p + 1)
            _fenwick_add(tree, p, -1)
        _fenwick_add(tree, i, 1)
        latest[b] = i
    return distance


@kernel
def _compact(latest: np.ndarray, owner: np.ndarray, tree: np.ndarray, used: int) -> int:
    """Move the live marks (each block's latest access) to slots 0 .. live-1 in the same order,
    rebuild the Fenwick tree over them, and return how many are live."""
    live = 0
    for s in range(used):
        b = owner[s]
        if b >= 0:
            owner[live] = b
            latest[b] = live
            live += 1
    owner[live:used] = -1
    tree[:] = 0
    tree[1:live + 1] = 1
    for k in range(1, len(tree)):            # linear-time Fenwick build
        parent = k + (k & -k)
        if parent < len(tree):
            tree[parent] += tree[k]
    return live


@kernel
def _distance_histogram(ids: np.ndarray, n_ids: int, limit: int, slots: int) -> tuple[np.ndarray, int]:
    """How many accesses have each stack distance below ``limit``, and how many reuse a block.

    All marks lie before access i, so the marks strictly after p are the blocks seen so far
    minus the marks up to p: one Fenwick query per access instead of two. The tree is over
    ``slots`` (> n_ids) slots, not one per access: when they run out the live marks are compacted
    to the front (order, hence every distance, unchanged), so its memory follows the distinct
    blocks and the tree stays small enough for the processor's caches.
    """
    counts = np.zeros(limit, np.int32)
    latest = np.full(n_ids, -1, np.int32)
    owner = np.full(slots, -1, np.int32)
    tree = np.zeros(slots + 1, np.int32)
    seen = 0
    reused = 0
    slot = 0
    for i in range(len(ids)):
        if slot == slots:
            slot = _compact(latest, owner, tree, slot)
        b = ids[i]
        p = latest[b]
        if p >= 0:
            d = seen - _fenwick_count(tree, p + 1)
            if d < limit:
                counts[d] += 1
            reused += 1
            _fenwick_add(tree, p, -1)
            owner[p] = -1
        else:
            seen += 1
        _fenwick_add(tree, slot, 1)
        owner[slot] = b
        latest[b] = slot
        slot += 1
    return counts, reused


def dense_ids(blocks: np.ndarray) -> tuple[np.ndarray, int]:
    """Block ids as dense array indices and their count: the ids themselves when they already are
    (0 ≤ id < len(blocks), as a library entry's renumbered int32 ids), without a copy; else
    renumbered 0 .. distinct-1 as int32."""
    blocks = np.asarray(blocks)
    if blocks.dtype in (np.int32, np.int64) and len(blocks) and 0 <= blocks.min() and blocks.max() < len(blocks):
        return blocks, int(blocks.max()) + 1
    distinct, ids = np.unique(blocks, return_inverse=True)
    return ids.astype(np.int32).reshape(-1), len(distinct)


def lru_hit_counts(ids: np.ndarray, n_ids: int, capacities: np.ndarray, *, slots: int | None = None) -> np.ndarray:
    """Hits of an LRU cache of each capacity over dense ``ids``: ``lru_curve`` of their stack
    distances, equal to it exactly, without holding a distance per access. ``slots`` (default
    2·n_ids + 1, at least n_ids + 1) sizes the pass's tree: its memory is 8 bytes a slot."""
    caps = np.asarray(capacities, dtype=float)
    require(len(ids) < 2**31, f"{len(ids):,} accesses do not fit the pass's 4-byte positions")
    finite = caps[np.isfinite(caps)]
    limit = int(min(max(np.ceil(finite.max()), 0), n_ids)) if len(finite) else 0
    slots = max(n_ids + 1, min(len(ids), 2 * n_ids + 1) if slots is None else slots)
    counts, reused = _distance_histogram(ids, n_ids, limit, slots)
    below = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
    hits = np.where(caps > 0, reused, 0).astype(np.int64)
    # distances are whole numbers, so "below c" means below ceil(c)
    hits[np.isfinite(caps)] = below[np.clip(np.ceil(finite), 0, limit).astype(np.int64)]
    return hits


def stack_distances(blocks: np.ndarray) -> np.ndarray:
    """LRU stack distance of every access (0 = no other block since), or -1 for a first access."""
    distinct, ids = np.unique(np.asarray(blocks), return_inverse=True)
    return stack_distances_of_ids(ids.astype(np.int64).ravel(), len(distinct))


def lru_curve(distances: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks), read off the stack distances: an access
    hits exactly when its distance is below the capacity."""
    reused = np.sort(distances[distances >= 0])
    return np.searchsorted(reused, np.asarray(capacities), side="left").astype(np.int64)


def lru_hits(blocks: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks) over the sequence, in one pass."""
    return lru_curve(stack_distances(blocks), capacities)
