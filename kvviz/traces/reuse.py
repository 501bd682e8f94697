"""Reuse in a block-access sequence: LRU stack distances and the LRU hit curve they give.

The stack distance of an access is the number of *distinct other* blocks touched since the
previous access to the same block. An LRU cache of C blocks hits exactly the accesses whose stack
distance is below C, so one pass gives the whole LRU hit curve (Mattson, Gecsei, Slutz and
Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970). The pass
gives each access the next slot, marks the slots blocks have since left, and counts the marks
with a Fenwick tree: the distance is the slots after the previous access less the marks among
them (``_window_pass``). The loop is compiled by numba, like the eviction policies
(``kvviz.eviction.policies``), whose LRU reads its curve from here.

``lru_hit_counts`` is a pass for traces of any length (the exact LRU curve beside a SHARDS
sample, ``kvviz.eviction.shards``): it keeps only a histogram of the distances below the largest finite
capacity ``L`` instead of one distance per access, and tracks only the ``L`` most recently used
blocks (a *window*, since no other block can have a distance below ``L``), with a bit for each
of the slots they vacated (about 2·L slots, compacted when full) and a Fenwick tree over 64-slot
words of them, on the trace's own ids when they are already dense (a library entry's int32 ids).
Its memory is 4 bytes per distinct block plus about 4 per window slot, whatever the trace's
length; on the 164.6M-access library trace of docs/traces.md it took 4.1–4.7 CPU s (L = 100,000,
with a Fenwick tree over every slot) where the tree over every distinct block took 15.7.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.errors import require
from kvviz.common.jit import frozen, kernel

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


_M1, _M2, _M4, _H01 = (
    np.uint64(m) for m in (0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x0101010101010101)
)
_ONE = np.uint64(1)


@kernel
def _popcount(x: np.uint64) -> int:
    """Set bits of a 64-bit word (the SWAR sum, which the compiler turns into one instruction)."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> np.uint64(56))


@kernel
def _mark(bits: np.ndarray, words: np.ndarray, pos: int) -> None:
    """Mark slot ``pos``: its bit, and one more mark in its 64-slot word's Fenwick count."""
    w = pos >> 6
    bits[w] |= _ONE << np.uint64(pos & 63)
    _fenwick_add(words, w, 1)


@kernel
def _marked_before(bits: np.ndarray, words: np.ndarray, pos: int) -> int:
    """Marked slots among 0 .. pos-1: the whole words before ``pos``'s word, then its bits below ``pos``."""
    w = pos >> 6
    return _fenwick_count(words, w) + _popcount(bits[w] & ((_ONE << np.uint64(pos & 63)) - _ONE))


@kernel
def _compact(latest: np.ndarray, owner: np.ndarray, used: int) -> int:
    """Move the live slots (each block's latest access) to slots 0 .. live-1 in the same order
    and return how many are live."""
    live = 0
    for s in range(used):
        b = owner[s]
        if b >= 0:
            owner[live] = b
            latest[b] = live
            live += 1
    owner[live:used] = -1
    return live


SLOTS_PER_WINDOW = 2  # the pass's slots per block of its window (compaction every window's worth)
OUT = -2  # ``latest`` of a block seen before but pushed out of the window (distance >= limit)


@kernel
def _window_pass(ids: np.ndarray, n_ids: int, limit: int, slots: int, distance: np.ndarray) -> tuple[np.ndarray, int]:
    """How many accesses have each stack distance below ``limit``, and how many reuse a block; or,
    given a ``distance`` array as long as ``ids``, each access's distance instead of the histogram
    (``FIRST`` for a block's first access, ``limit`` for one at ``limit`` or more).

    Only the ``limit`` most recently used blocks can have a distance below ``limit``, so only
    theirs are tracked (the *window*): when a new block makes ``limit + 1`` of them, the least
    recently used one leaves, remembered as ``OUT`` (a reuse at a distance of ``limit`` or more).
    Each access takes the next slot, so a block in the window at slot ``p`` has a distance of
    the slots after ``p`` minus the *vacated* ones among them (every more recent block is in the
    window too). Vacated slots are bits, and a Fenwick tree counts them per 64-slot word (a tree a
    64th the size, held in the processor's caches); all of them lie before the current slot, so
    one prefix query gives those after ``p``, and a new mark needs no update. When the slots
    run out the live ones are compacted to the front (order, hence every distance, unchanged).
    The tree is about twice ``limit`` entries whatever the trace's length: with ``limit`` the
    distinct blocks, every distance is exact at one query and one update an access, over a tree
    a third the size of one over every access.
    """
    record = len(distance) > 0
    counts = np.zeros(0 if record else limit, np.int32)
    latest = np.full(n_ids, -1, np.int32)
    owner = np.full(slots, -1, np.int32)
    bits = np.zeros(slots // 64 + 1, np.uint64)
    words = np.zeros(slots // 64 + 2, np.int32)
    live = 0
    n_vacated = 0
    reused = 0
    slot = 0
    oldest = 0  # no live slot before this one
    for i in range(len(ids)):
        if slot == slots:
            slot = live = _compact(latest, owner, slot)
            bits[:] = 0
            words[:] = 0
            n_vacated = oldest = 0
        b = ids[i]
        p = latest[b]
        if p >= 0:
            d = slot - p - 1 - n_vacated + _marked_before(bits, words, p + 1)
            if record:
                distance[i] = d
            else:
                counts[d] += 1
            reused += 1
            _mark(bits, words, p)
            n_vacated += 1
            owner[p] = -1
            live -= 1
        elif p == OUT:
            reused += 1
            if record:
                distance[i] = limit
        elif record:
            distance[i] = FIRST
        owner[slot] = b
        latest[b] = slot
        slot += 1
        live += 1
        if live > limit:
            while owner[oldest] < 0:
                oldest += 1
            latest[owner[oldest]] = OUT
            _mark(bits, words, oldest)
            n_vacated += 1
            owner[oldest] = -1
            live -= 1
    return counts, reused


def stack_distances_of_ids(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """Stack distances (int32) of a sequence of dense ids (0 .. n_ids-1); ``FIRST`` for a first
    access: the window pass with every distinct block in the window."""
    ids = frozen(ids, np.int32)  # the kind the pass is compiled for (dense ids fit)
    distance = np.empty(len(ids), np.int32)
    _window_pass(ids, n_ids, n_ids, min(len(ids), SLOTS_PER_WINDOW * n_ids) + 1, distance)
    return distance


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
    distances, equal to it exactly, without holding a distance per access. The window is the
    largest finite capacity (at most ``n_ids``); ``slots`` (default twice the window, at least the
    window + 1) sizes the pass's tree: its memory is 8 bytes a slot, plus 4 bytes per id."""
    caps = np.asarray(capacities, dtype=float)
    require(len(ids) < 2**31, f"{len(ids):,} accesses do not fit the pass's 4-byte positions")
    finite = caps[np.isfinite(caps)]
    limit = int(min(max(np.ceil(finite.max()), 0), n_ids)) if len(finite) else 0
    slots = max(limit + 1, min(len(ids), SLOTS_PER_WINDOW * limit + 1) if slots is None else slots)
    # the ids read-only as they are (int32 or int64, both precompiled): a copy would cost 4 bytes an access
    counts, reused = _window_pass(frozen(ids), n_ids, limit, slots, np.empty(0, np.int32))
    below = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
    hits = np.where(caps > 0, reused, 0).astype(np.int64)
    # distances are whole numbers, so "below c" means below ceil(c)
    hits[np.isfinite(caps)] = below[np.clip(np.ceil(finite), 0, limit).astype(np.int64)]
    return hits


def stack_distances(blocks: np.ndarray) -> np.ndarray:
    """LRU stack distance of every access (0 = no other block since), or -1 for a first access."""
    distinct, ids = np.unique(np.asarray(blocks), return_inverse=True)
    return stack_distances_of_ids(ids.reshape(-1), len(distinct))


def lru_curve(distances: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks), read off the stack distances: an access
    hits exactly when its distance is below the capacity."""
    reused = np.sort(distances[distances >= 0])
    return np.searchsorted(reused, np.asarray(capacities), side="left").astype(np.int64)


def lru_hits(blocks: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks) over the sequence, in one pass."""
    return lru_curve(stack_distances(blocks), capacities)
