"""The compiled radix tree every replay runs: SGLang 0.5.23's RadixCache as arrays, one request at a time.

The tree is implicit in the block ids (numbered densely, :mod:`kvviz.hiradix.ids`): node = distinct
prefix, parent = the request's previous block. A radix edge of several blocks is named by its
deepest block, which is also the node that keeps its id when a split cuts the edge (SGLang's
``_split_node`` gives the suffix the old node), so every per-node field lives in per-block arrays:

- ``tree`` holds one record per block (the rows ``OWNER`` … ``CHILDREN`` below);
- ``keys, slots`` are the indexed heap (:mod:`kvviz.hiradix.heap`) of evictable leaves, keyed by
  the policy (:mod:`kvviz.hiradix.keys`), then last access;
- ``state`` holds the scalars the steps update (``SIZE`` … ``FREED``).

Plain arrays, not tuples of them (numba counts references to an array taken out of a tuple), and
a field's values side by side: a request's blocks are numbered in a row (:func:`by_first_use`), so
a walk over a path reads a few cache lines per field.

**Serving a request** (accesses ``lo .. hi`` of ``nodes``), as SGLang 0.5.23's scheduler drives
``mem_cache/radix_cache.py``: :func:`match_length` (how many leading blocks are cached), then
:func:`start` (``_match_prefix_helper``: stamp the walk, split the edge the match ends inside,
lock the path; and how many blocks to free), :func:`evict_leaf` until it returns ``NO_NODE``
(``evict``: whole leaves in key order, a parent left childless becomes a leaf), :func:`drop_edge`
for each evicted leaf, and :func:`finish` (``_insert_helper`` once or twice: a request counts each
node once, then unlock). :func:`serve` does all of it for a caller that does not watch the
evictions; a caller that does (the tiered replay moves evicted blocks to host memory) runs the
steps itself. Several independent caches are several ``new_tree`` results: nothing is global.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel
from kvviz.hiradix.heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.hiradix.keys import FIFO, FILO, LFU, LRU, MRU

NO_NODE = -1
_LOWEST = -(2**31)
OWNER, HEAD, LAST, CREATED, HITS, CHILDREN = range(6)
"""The rows of ``tree``, one value per block: the node holding it (``NO_NODE``: not cached); and when the block names a
node (its deepest block): the node's first block, last access, creation, SGLang's hit_count and
cached children."""
SIZE, USED, CLOCK, TARGET, FREED = range(5)
"""A replay's ``state``: the heap's size, blocks cached, the next time stamp; and an eviction under
way: blocks to free, blocks freed."""


@kernel
def by_first_use(
    nodes: np.ndarray, parent: np.ndarray, depth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same accesses and tree with blocks renumbered in order of first use, and the new number of
    every old one. A request's blocks then sit side by side in every per-block array, so a replay
    reads a few cache lines per request instead of one per block (the numbering level by level
    scatters a path); a replay's results do not depend on the numbering."""
    n = len(parent)
    local = np.full(n, NO_NODE, np.int64)
    renumbered = np.empty_like(nodes)
    k = 0
    for i in range(len(nodes)):
        b = nodes[i]
        if local[b] == NO_NODE:
            local[b] = k
            k += 1
        renumbered[i] = local[b]
    new_parent = np.empty(n, np.int64)
    new_depth = np.empty(n, np.int64)
    for b in range(n):
        new_parent[local[b]] = NO_NODE if parent[b] == NO_NODE else local[parent[b]]
        new_depth[local[b]] = depth[b]
    return renumbered, new_parent, new_depth, local


@helper
def new_tree(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An empty radix cache over ``n`` blocks: ``(tree, keys, slots, state)``."""
    tree = np.zeros((6, n), np.int64)
    tree[OWNER] = NO_NODE
    tree[HEAD] = NO_NODE
    keys, slots = new_heap(n, max(n, 1))
    return tree, keys, slots, np.zeros(5, np.int64)


@helper
def tick(state: np.ndarray) -> int:
    """The next time stamp."""
    t = state[CLOCK]
    state[CLOCK] += 1
    return t


@helper
def set_key(keys: np.ndarray, x: int, policy: int, tree: np.ndarray) -> None:
    """Write node ``x``'s eviction key (policy key, then last access) into heap row ``x``."""
    last = tree[LAST, x]
    if policy == LRU:
        keys[x, 0] = last
    elif policy == LFU:
        keys[x, 0] = tree[HITS, x]
    elif policy == FIFO:
        keys[x, 0] = tree[CREATED, x]
    elif policy == MRU:
        keys[x, 0] = -last
    elif policy == FILO:
        keys[x, 0] = -tree[CREATED, x]
    else:  # SLRU
        keys[x, 0] = 1 if tree[HITS, x] >= 2 else 0
    keys[x, 1] = last
    keys[x, 2] = 0


@helper
def remove(keys: np.ndarray, slots: np.ndarray, size: int, x: int) -> int:
    """Take node ``x`` out of the heap if it is there; returns the new size."""
    if keys[x, SLOT] == ABSENT:
        return size
    keys[x, 0] = _LOWEST
    keys[x, 1] = _LOWEST
    rekey(keys, slots, size, x)
    return pop(keys, slots, size)


@helper
def relink(tree: np.ndarray, parent: np.ndarray, x: int, b: int) -> None:
    """The links of ``_split_node``: node ``x`` is cut after its block ``b``; ``b`` becomes the node of
    the prefix (from ``x``'s head down to ``b``), and ``x`` keeps the suffix, from the block below ``b``."""
    below = x
    while parent[below] != b:
        below = parent[below]
    tree[HEAD, b] = tree[HEAD, x]
    tree[HEAD, x] = below
    y = b
    while True:
        tree[OWNER, y] = b
        if y == tree[HEAD, b]:
            break
        y = parent[y]


@helper
def match_length(tree: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    """How many of accesses ``lo .. hi`` (one request) the cache holds from the first on."""
    m = 0
    while lo + m < hi and tree[OWNER, nodes[lo + m]] != NO_NODE:
        m += 1
    return m


@helper
def match(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    m: int,
    parent: np.ndarray,
    policy: int,
) -> int:
    """Step 1: stamp the walk over a request's ``m`` matched blocks, split the edge it ends inside at
    its last block, and lock the path. Returns that block (``NO_NODE`` when nothing matched)."""
    t = tick(state)
    if m == 0:
        return NO_NODE
    deepest = nodes[lo + m - 1]
    for i in range(lo, lo + m):
        b = nodes[i]
        if tree[OWNER, b] == b:
            tree[LAST, b] = t
    x = tree[OWNER, deepest]
    if x != deepest:  # split node x after block `deepest`
        tree[LAST, x] = t
        relink(tree, parent, x, deepest)
        c = tick(state)
        tree[CREATED, deepest] = c
        tree[LAST, deepest] = c
        tree[HITS, deepest] = tree[HITS, x]
        tree[CHILDREN, deepest] = 1
        if keys[x, SLOT] != ABSENT:
            set_key(keys, x, policy, tree)
            rekey(keys, slots, state[SIZE], x)
    state[SIZE] = remove(keys, slots, state[SIZE], deepest)
    return deepest


@helper
def evict_leaf(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    deepest: int,
    parent: np.ndarray,
    depth: np.ndarray,
    policy: int,
) -> int:
    """Step 2, one leaf at a time: take the next leaf of the eviction :func:`start` set up out of the
    heap and return it (``NO_NODE`` once ``state[TARGET]`` blocks are free or nothing can go); its
    parent, left childless, becomes a leaf (unless it is the locked ``deepest``). The caller drops
    the leaf's blocks, deepest first (:func:`drop_edge`), so a tier below sees each one leave."""
    if state[FREED] >= state[TARGET] or state[SIZE] == 0:
        return NO_NODE
    x = slots[0]
    state[SIZE] = pop(keys, slots, state[SIZE])
    h = tree[HEAD, x]
    gone = depth[x] - depth[h] + 1
    state[FREED] += gone
    state[USED] -= gone
    p = parent[h]
    if p != NO_NODE:
        tree[CHILDREN, p] -= 1
        if tree[CHILDREN, p] == 0 and p != deepest:
            set_key(keys, p, policy, tree)
            state[SIZE] = push(keys, slots, state[SIZE], p)
    return x


@helper
def drop_edge(tree: np.ndarray, parent: np.ndarray, x: int) -> None:
    """The blocks of evicted leaf ``x`` leave the cache."""
    b = x
    while True:
        tree[OWNER, b] = NO_NODE
        if b == tree[HEAD, x]:
            break
        b = parent[b]


@helper
def stamp_path(tree: np.ndarray, state: np.ndarray, nodes: np.ndarray, lo: int, hi: int, counts: bool) -> None:
    """An insert's walk over accesses ``lo .. hi``: each cached node on it gets a new time, and one
    more hit when ``counts`` (the request's first insert; SGLang 0.5.23's ``_insert_helper`` counts
    only past the request's ``cache_inserted_len``)."""
    t = tick(state)
    for i in range(lo, hi):
        b = nodes[i]
        if tree[OWNER, b] == b:
            tree[LAST, b] = t
            if counts:
                tree[HITS, b] += 1


@helper
def insert(tree: np.ndarray, state: np.ndarray, nodes: np.ndarray, lo: int, m: int, want: int, deepest: int) -> None:
    """Step 3: hang the ``want`` blocks after a request's match as one new leaf."""
    if want <= 0:
        return
    leaf = nodes[lo + m + want - 1]
    tree[HEAD, leaf] = nodes[lo + m]
    for i in range(lo + m, lo + m + want):
        tree[OWNER, nodes[i]] = leaf
    c = tick(state)
    tree[CREATED, leaf] = c
    tree[LAST, leaf] = c
    tree[HITS, leaf] = 1
    tree[CHILDREN, leaf] = 0
    state[USED] += want
    if deepest != NO_NODE:
        tree[CHILDREN, deepest] += 1


@helper
def unlock(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    m: int,
    want: int,
    deepest: int,
    policy: int,
) -> None:
    """Step 5: the request is done; its new leaf, or its matched node left without children, can go."""
    if want > 0:
        x = nodes[lo + m + want - 1]
    elif deepest != NO_NODE and tree[CHILDREN, deepest] == 0:
        x = deepest
    else:
        return
    set_key(keys, x, policy, tree)
    state[SIZE] = push(keys, slots, state[SIZE], x)


@helper
def start(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
    m: int,
    capacity: int,
    parent: np.ndarray,
    policy: int,
) -> tuple[int, int]:
    """A request (accesses ``lo .. hi``, ``m`` of them matched) up to its eviction: step 1, and how
    many blocks step 2 must free. Returns (the deepest matched block, blocks it will add)."""
    deepest = match(tree, keys, slots, state, nodes, lo, m, parent, policy)
    want = min(hi - lo - m, capacity - m)
    state[TARGET] = want - (capacity - state[USED])
    state[FREED] = 0
    return deepest, want


@helper
def finish(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    m: int,
    want: int,
    deepest: int,
    inserts: int,
    policy: int,
) -> None:
    """A request after its eviction: steps 3-5, its prompt inserted ``inserts`` times (1 or 2)."""
    stamp_path(tree, state, nodes, lo, lo + m, True)
    insert(tree, state, nodes, lo, m, want, deepest)
    if inserts == 2:  # step 4: the finished request's insert stamps the path again; it counts nothing
        stamp_path(tree, state, nodes, lo, lo + m + want, False)
    unlock(tree, keys, slots, state, nodes, lo, m, want, deepest, policy)


@helper
def serve(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
    capacity: int,
    parent: np.ndarray,
    depth: np.ndarray,
    inserts: int,
    policy: int,
) -> int:
    """One request (accesses ``lo .. hi``, its prompt inserted ``inserts`` times) through a cache of
    ``capacity`` blocks: match, evict the shortfall, insert, unlock. Returns its matched blocks."""
    m = match_length(tree, nodes, lo, hi)
    deepest, want = start(tree, keys, slots, state, nodes, lo, hi, m, capacity, parent, policy)
    x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
    while x != NO_NODE:
        drop_edge(tree, parent, x)
        x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
    finish(tree, keys, slots, state, nodes, lo, m, want, deepest, inserts, policy)
    return m
