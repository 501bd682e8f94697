"""Reuse in a block-access sequence: previous accesses, reuse distances and LRU stack distances.

The stack distance of an access is the number of *distinct other* blocks touched since the
previous access to the same block. An LRU cache of C blocks hits exactly the accesses whose stack
distance is below C, so one pass gives the whole LRU hit curve (Mattson, Gecsei, Slutz and
Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970).
"""

from __future__ import annotations

import numpy as np

FIRST = -1  # the distance given to an access with no earlier access to its block


def previous_access(blocks: np.ndarray) -> np.ndarray:
    """For each access, the index of the previous access to the same block, or -1."""
    blocks = np.asarray(blocks)
    order = np.argsort(blocks, kind="stable")
    prev = np.full(len(blocks), FIRST, dtype=np.int64)
    same = blocks[order[1:]] == blocks[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def reuse_distances(blocks: np.ndarray) -> np.ndarray:
    """Accesses since the previous access to the same block (1 = immediately again), or -1."""
    prev = previous_access(blocks)
    idx = np.arange(len(prev), dtype=np.int64)
    return np.where(prev >= 0, idx - prev, FIRST)


def _count_greater_before(values: np.ndarray) -> np.ndarray:
    """counts[i] = #{j < i : values[j] > values[i]}, by a bottom-up merge sort in numpy.

    Each level merges sorted runs of width w pairwise; elements of a right run count the larger
    elements of their left run with one vectorised searchsorted over block-offset keys.
    """
    n = len(values)
    shift = int(values.min(initial=0))
    cur = values.astype(np.int64) - shift          # non-negative
    big = int(cur.max(initial=0)) + 1
    idx = np.arange(n, dtype=np.int64)             # idx[pos]: original index now at pos
    counts = np.zeros(n, dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    w = 1
    while w < n:
        block = pos // (2 * w)
        right = (pos % (2 * w)) >= w
        keys = block * big + cur
        left_keys = keys[~right]
        r_block = block[right]
        not_greater = np.searchsorted(left_keys, keys[right], side="right")
        block_end = np.searchsorted(left_keys, (r_block + 1) * big, side="left")
        counts[idx[right]] += block_end - not_greater
        order = np.argsort(keys, kind="stable")  # merges the sorted runs (timsort finds them)
        cur, idx = cur[order], idx[order]
        w *= 2
    return counts


def stack_distances(blocks: np.ndarray) -> np.ndarray:
    """LRU stack distance of every access (0 = no other block since), or -1 for a first access.

    For an access i whose previous access is p, the distinct blocks in between are the
    i - p - 1 accesses there minus those that repeat a block already seen in the window, and an
    access j in the window repeats one exactly when prev[j] > p.
    """
    prev = previous_access(blocks)
    idx = np.arange(len(prev), dtype=np.int64)
    repeats = _count_greater_before(prev)
    return np.where(prev >= 0, idx - prev - 1 - repeats, FIRST)


def lru_hits(blocks: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Hits of an LRU cache of each capacity (in blocks) over the sequence, in one pass."""
    sd = stack_distances(blocks)
    sd = np.sort(sd[sd >= 0])
    return np.searchsorted(sd, np.asarray(capacities), side="left").astype(np.int64)
