"""HiCache at trace scale: SGLang 0.5.23's HiCache as one compiled replay of a whole trace.

The release keeps GPU memory (L1) and host DRAM (L2) in one radix tree
(``mem_cache/unified_radix_cache.py``, ``mem_cache/unified_cache/unified_tree_core.py``): a node
holds a GPU copy, a host copy or both, and a node the GPU evicts stays in the tree while it has a
host copy. This replay keeps that tree as arrays (the naming of :mod:`kvviz.hiradix.tree`: a node
is named by its deepest block, and a split gives the suffix the old node) and serves each request
as the release's scheduler does, requests completing instantly, in one step (:func:`serve`) that the
whole-trace replay (:func:`tiered_replay`) runs in a loop and an instance behind a router
(:class:`kvviz.tiers.instance.TieredInstance`) runs per request:

1. **match** (``_match_prefix_helper``, ``_match_post_processor``): the longest prefix held on
   either tier, split where it ends inside a node (``_split_node`` stamps the suffix; the prefix
   inherits the hit count and creation time), then the deepest matched node and every ancestor
   stamped, deeper ones later. Hits on the GPU are the leading blocks with a GPU copy, hits on the
   host the rest of the match;
2. **prefetch** (``Scheduler._prefetch_kvcache``, ``prefetch_from_storage``): only when the
   deepest matched node has a host copy or nothing matched, and the rest of the prompt is at least
   the prefetch floor (``prefetch_threshold``, 256 tokens or a page, in blocks); storage answers
   the run of blocks it holds (``_storage_hit_query``), a run under the floor is dropped, and host
   memory is found for it (``allocate_storage_hit``: if the hit does not fit, host eviction for
   the hit's whole size, then whatever is free if at least the floor); the blocks become a
   host-only node under the matched one (``insert_host``). The release's cap on prefetches in
   flight (half the host pool) never binds: none is in flight when the next request asks;
3. **load back** (``load_back``): the matched host blocks (and the prefetched ones) go to the GPU,
   evicting the GPU's shortfall, unless they are under the load floor (``load_back_threshold``,
   10 tokens, in blocks) or the GPU cannot make room; then the rest of the prompt is allocated
   (evicting the shortfall, the matched path locked);
4. **insert** (``_insert_walk_step`` … ``_insert_tail_step``): every node on the prompt's path is
   stamped, split where the prompt leaves it, put back on the GPU if only the host held it, and
   counted (write-back counts nothing: ``_inc_hit_count_and_check``); the rest becomes a new leaf.
   Write-through (threshold 1) and selective write-through (2) back a node up when its count
   reaches the threshold, its unbacked ancestors first (``_build_backup_kv_action``). A request's
   second insert (at its finish) stamps the same path in the same order and counts nothing, so it
   is left out.

**The GPU** evicts device leaves (a GPU copy and no child with one) in key order, a parent joining
when it becomes one (``evict_device_next_node``): a leaf with a host copy is demoted and stays;
under write-back one without is backed up alone and then demoted, or dropped if the host has no
room (``drop_subtree_no_host``); under write-through it is deleted. **The host** frees only the
shortfall of a backup (``_execute_kv_backup``) by evicting whole host leaves (host-only, no
children, not locked) in key order, a parent joining when it becomes one
(``drive_host_eviction``); under write-back it first drops host copies of nodes also on the GPU,
oldest registered first, sparing device leaves on a first pass (``_reclaim_full_host_duplicates``,
duplicates registered as the release registers them). Keys are SGLang's eviction keys on the node
(:mod:`kvviz.hiradix.keys`) for both tiers. **Storage** receives every block written to the host
(``write_backup_storage`` after each acknowledgement), its own or one every instance shares
(:class:`kvviz.tiers.instance.Storage`, numbered as the trace, ``tree[NAME]`` giving each block's
number there); SGLang's file backend never evicts, and kvviz gives storage a capacity instead: it
evicts leaf blocks by the policy's key on the blocks' use (last reader, readers, the write that
stored it), a node's blocks joining the candidates once all are written.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel
from kvviz.hiradix.heap import ABSENT, SLOT, new_heap, push, rekey
from kvviz.hiradix.keys import FIFO, FILO, LFU, LRU, MRU
from kvviz.hiradix.lists import NONE, NOWHERE, PREV, TAIL, WHERE, new_queues, push_head, unlink
from kvviz.hiradix.tree import (
    CHILDREN,
    CREATED,
    HEAD,
    HITS,
    LAST,
    NO_NODE,
    OWNER,
    by_first_use,
    relink,
    remove,
    set_key,
)

SELECTIVE_THRESHOLD = 2
"""SGLang's hit count at which write_through_selective backs a node up (write_through: 1)."""
STATS = ("l2_writes", "l3_writes", "l2_evictions", "l3_evictions", "l2_write_failures")
WRITE_BACK = 2
"""``write_back``'s index in ``kvviz.tiers.config.WRITE_POLICIES``."""

KIDS, FLAGS, NAME = 6, 7, 8
"""Rows of ``tree`` after :mod:`kvviz.hiradix.tree`'s six (whose ``CHILDREN`` counts children on the GPU
here): children in the tree, the node's flags, and the block's number in storage (the trace's)."""
DEV, HOST, LOCKED, PINNED, SKIPPED = 1, 2, 4, 8, 16
"""Flags: a GPU copy, a host copy, on the request's locked path, the prefetch's anchor (host-locked),
passed over by the eviction under way."""
D_SIZE, H_SIZE, CLOCK, DEV_USED, HOST_USED, GPU_CAP, HOST_CAP = range(7)
POLICY, BACK, THRESHOLD, H_WRITES, H_EVICTIONS, H_FAILURES = range(7, 13)
"""A replay's scalars: the two heaps' sizes, the clock, blocks held on each tier, the configuration and
the host's counters."""
HELD, BELOW, BORN, CAND, SEEN, FREQ, UP, DEPTH = range(8)
"""The rows of storage's ``rec``, one value per block of the trace: held, children held, the write that
stored it, an eviction candidate; the last request that read it and how many did; its parent and depth."""
SIZE, USED, CAPACITY, WRITES, EVICTIONS, FAILURES, BATCH = range(7)
"""Storage's counters: heap entries, blocks held, blocks it holds at most, what it did, and writes made."""
_TOP = 2**30
"""Above every request index, write number, block depth and use count."""
_BLOCK = 2**31 - 1


# ---- storage: blocks, leaves evicted through a lazy heap whose entries carry their keys ----


@helper
def new_tier(parent: np.ndarray, depth: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty storage tier of ``capacity`` blocks over the trace's tree: ``(rec, heap, st)``. Its
    candidates are held blocks, so a heap of twice the capacity is at most half full after
    :func:`_compact` drops stale entries. Without capacity it keeps no record of the blocks."""
    n = len(parent) if capacity > 0 else 0
    rec = np.zeros((8, n), np.int64)
    rec[UP] = parent[:n]
    rec[DEPTH] = depth[:n]
    heap = np.zeros((2 * min(capacity, n) + 16, 2), np.int64)
    st = np.zeros(7, np.int64)
    st[CAPACITY] = capacity
    return rec, heap, st


@helper
def tier_key(b: int, policy: int, rec: np.ndarray) -> int:
    """A stored block's eviction key, then its last use, in one number (smallest evicted first)."""
    seen = rec[SEEN, b]
    if policy == LRU:
        k = seen
    elif policy == LFU:
        k = rec[FREQ, b]
    elif policy == FIFO:
        k = rec[BORN, b]
    elif policy == MRU:  # the one key that falls with use
        k = _TOP - seen
    elif policy == FILO:
        k = _TOP - rec[BORN, b]
    else:  # SLRU
        k = 1 if rec[FREQ, b] >= 2 else 0
    return (k << 31) | seen


@helper
def _tie(b: int, rec: np.ndarray) -> int:
    """An entry's second word: deeper blocks first (a key and last use shared only along one path), then ``b``."""
    return ((_TOP - rec[DEPTH, b]) << 31) | b


@helper
def _sift_up(heap: np.ndarray, i: int, k: int, s: int) -> None:
    """Place entry ``(k, s)`` at slot ``i`` or above."""
    while i > 0:
        p = (i - 1) >> 1
        if heap[p, 0] < k or (heap[p, 0] == k and heap[p, 1] < s):
            break
        heap[i, 0] = heap[p, 0]
        heap[i, 1] = heap[p, 1]
        i = p
    heap[i, 0] = k
    heap[i, 1] = s


@helper
def _sift_down(heap: np.ndarray, size: int, i: int, k: int, s: int) -> None:
    """Place entry ``(k, s)`` at slot ``i`` or below, in a heap of ``size`` entries."""
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (
            heap[c + 1, 0] < heap[c, 0] or (heap[c + 1, 0] == heap[c, 0] and heap[c + 1, 1] < heap[c, 1])
        ):
            c += 1
        if k < heap[c, 0] or (k == heap[c, 0] and s < heap[c, 1]):
            break
        heap[i, 0] = heap[c, 0]
        heap[i, 1] = heap[c, 1]
        i = c
    heap[i, 0] = k
    heap[i, 1] = s


@kernel
def _compact(rec: np.ndarray, heap: np.ndarray, st: np.ndarray, policy: int) -> None:
    """Rebuild a full heap from its candidates, one entry each with its current key."""
    size = 0
    for i in range(st[SIZE]):
        b = heap[i, 1] & _BLOCK
        if rec[CAND, b] == 1:
            rec[CAND, b] = 2  # kept once
            heap[size, 0] = tier_key(b, policy, rec)
            heap[size, 1] = heap[i, 1]
            size += 1
    for i in range(size):
        rec[CAND, heap[i, 1] & _BLOCK] = 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i, heap[i, 0], heap[i, 1])
    st[SIZE] = size


@kernel
def offer(rec: np.ndarray, heap: np.ndarray, st: np.ndarray, b: int, policy: int) -> None:
    """Make block ``b`` an eviction candidate with its current key (again, when the key fell)."""
    rec[CAND, b] = 1
    if st[SIZE] == len(heap):
        _compact(rec, heap, st, policy)
    _sift_up(heap, st[SIZE], tier_key(b, policy, rec), _tie(b, rec))
    st[SIZE] += 1


@kernel
def _pop_leaf(rec: np.ndarray, heap: np.ndarray, st: np.ndarray, policy: int) -> int:
    """Take the candidate with the smallest current key out of the heap (``NO_NODE``: none left).

    An entry is stale when its block stopped being a candidate or its key changed since: a key that
    rose takes its current value and sinks; one that fell (MRU) has a fresher entry. The top is taken
    when its key is current: every candidate has an entry at or below its current key, and keys are
    unique, so it is the smallest."""
    while st[SIZE] > 0:
        k, s = heap[0, 0], heap[0, 1]
        b = s & _BLOCK
        current = tier_key(b, policy, rec)
        if rec[CAND, b] == 1 and k < current:
            _sift_down(heap, st[SIZE], 0, current, s)
            continue
        st[SIZE] -= 1
        _sift_down(heap, st[SIZE], 0, heap[st[SIZE], 0], heap[st[SIZE], 1])
        if rec[CAND, b] == 1 and k == current:
            rec[CAND, b] = 0
            return b
    return NO_NODE


@kernel
def store(blocks: np.ndarray, k: int, policy: int, rec: np.ndarray, heap: np.ndarray, st: np.ndarray) -> None:
    """Write ``blocks[k-1]``, …, ``blocks[0]`` (a node's blocks, top down) to storage as its next write:
    each one not held takes a free block or evicts a leaf block (none of this write's), or is not written.
    The write's leaf blocks become candidates at its end."""
    st[BATCH] += 1
    batch = st[BATCH]
    for i in range(k - 1, -1, -1):
        b = blocks[i]
        if rec[HELD, b] == 1:
            continue
        if st[USED] >= st[CAPACITY]:
            x = _pop_leaf(rec, heap, st, policy)
            if x == NO_NODE:
                st[FAILURES] += 1
                continue
            rec[HELD, x] = 0
            st[USED] -= 1
            st[EVICTIONS] += 1
            p = rec[UP, x]
            if p != NO_NODE:
                rec[BELOW, p] -= 1
                if rec[BELOW, p] == 0 and rec[HELD, p] == 1 and rec[BORN, p] != batch:
                    offer(rec, heap, st, p, policy)
        rec[HELD, b] = 1
        rec[BORN, b] = batch
        st[USED] += 1
        st[WRITES] += 1
        p = rec[UP, b]
        if p != NO_NODE:
            rec[BELOW, p] += 1
            rec[CAND, p] = 0
    for i in range(k):
        b = blocks[i]
        if rec[HELD, b] == 1 and rec[BORN, b] == batch and rec[BELOW, b] == 0 and rec[CAND, b] == 0:
            offer(rec, heap, st, b, policy)


# ---- the tree: nodes on the GPU, on the host, or both ----


@helper
def tick(st: np.ndarray) -> int:
    t = st[CLOCK]
    st[CLOCK] += 1
    return t


@helper
def length(tree: np.ndarray, depth: np.ndarray, x: int) -> int:
    return depth[x] - depth[tree[HEAD, x]] + 1


@helper
def up(tree: np.ndarray, parent: np.ndarray, x: int) -> int:
    """Node ``x``'s parent (``NO_NODE``: the root): its first block's parent is the parent's deepest block."""
    return parent[tree[HEAD, x]]


@helper
def device_leaf(tree: np.ndarray, x: int) -> bool:
    """``_is_device_leaf``: a GPU copy, unlocked, no child on the GPU."""
    f = tree[FLAGS, x]
    return (f & DEV) != 0 and (f & LOCKED) == 0 and tree[CHILDREN, x] == 0


@helper
def host_leaf(tree: np.ndarray, x: int) -> bool:
    """``_is_host_leaf``: a host copy only, no children, unlocked on both tiers."""
    f = tree[FLAGS, x]
    return (f & HOST) != 0 and (f & (DEV | LOCKED | PINNED)) == 0 and tree[KIDS, x] == 0


@kernel
def refresh(
    tree: np.ndarray, dk: np.ndarray, ds: np.ndarray, hk: np.ndarray, hs: np.ndarray, st: np.ndarray, x: int
) -> None:
    """Put node ``x`` in the heap of device leaves and the heap of host leaves exactly when it is one."""
    want = device_leaf(tree, x) and (tree[FLAGS, x] & SKIPPED) == 0
    if want and dk[x, SLOT] == ABSENT:
        set_key(dk, x, st[POLICY], tree)
        st[D_SIZE] = push(dk, ds, st[D_SIZE], x)
    elif not want and dk[x, SLOT] != ABSENT:
        st[D_SIZE] = remove(dk, ds, st[D_SIZE], x)
    want = host_leaf(tree, x)
    if want and hk[x, SLOT] == ABSENT:
        set_key(hk, x, st[POLICY], tree)
        st[H_SIZE] = push(hk, hs, st[H_SIZE], x)
    elif not want and hk[x, SLOT] != ABSENT:
        st[H_SIZE] = remove(hk, hs, st[H_SIZE], x)


@kernel
def rekeyed(
    tree: np.ndarray, dk: np.ndarray, ds: np.ndarray, hk: np.ndarray, hs: np.ndarray, st: np.ndarray, x: int
) -> None:
    """Node ``x``'s key changed: move it in whichever heap holds it."""
    if dk[x, SLOT] != ABSENT:
        set_key(dk, x, st[POLICY], tree)
        rekey(dk, ds, st[D_SIZE], x)
    if hk[x, SLOT] != ABSENT:
        set_key(hk, x, st[POLICY], tree)
        rekey(hk, hs, st[H_SIZE], x)


@helper
def stamp(
    tree: np.ndarray, dk: np.ndarray, ds: np.ndarray, hk: np.ndarray, hs: np.ndarray, st: np.ndarray, x: int, t: int
) -> None:
    tree[LAST, x] = t
    rekeyed(tree, dk, ds, hk, hs, st, x)


@helper
def track(tree: np.ndarray, links: np.ndarray, ends: np.ndarray, st: np.ndarray, x: int) -> None:
    """``_update_duplicate_tracking``: a node on both tiers is registered (keeping its first place), any
    other unregistered. Only write-back reclaims duplicates, so only it tracks them."""
    if st[BACK] == 0:
        return
    f = tree[FLAGS, x]
    dup = (f & DEV) != 0 and (f & HOST) != 0
    if dup and links[x, WHERE] == NOWHERE:
        push_head(links, ends, 0, x)
    elif not dup and links[x, WHERE] != NOWHERE:
        unlink(links, ends, x)


@kernel
def set_dev(
    tree: np.ndarray,
    parent: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    st: np.ndarray,
    x: int,
    on: bool,
) -> None:
    """Give node ``x`` a GPU copy or take it away; its parent's count of children on the GPU follows."""
    if on:
        tree[FLAGS, x] |= DEV
    else:
        tree[FLAGS, x] &= ~DEV
    p = up(tree, parent, x)
    if p != NO_NODE:
        tree[CHILDREN, p] += 1 if on else -1
        refresh(tree, dk, ds, hk, hs, st, p)
    refresh(tree, dk, ds, hk, hs, st, x)


@kernel
def delete(
    tree: np.ndarray,
    parent: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    x: int,
) -> None:
    """Node ``x`` (without children) leaves the tree (``_remove_leaf_from_parent``)."""
    b = x
    while True:
        tree[OWNER, b] = NO_NODE
        if b == tree[HEAD, x]:
            break
        b = parent[b]
    p = up(tree, parent, x)
    if p != NO_NODE:
        tree[KIDS, p] -= 1
        if tree[FLAGS, x] & DEV:
            tree[CHILDREN, p] -= 1
    tree[FLAGS, x] = 0
    refresh(tree, dk, ds, hk, hs, st, x)
    if links[x, WHERE] != NOWHERE:
        unlink(links, ends, x)
    if p != NO_NODE:
        refresh(tree, dk, ds, hk, hs, st, p)


@kernel
def split(
    tree: np.ndarray,
    parent: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    x: int,
    b: int,
) -> None:
    """``_split_node``: cut node ``x`` after its block ``b``; the prefix becomes node ``b`` (the same
    copies, hit count and creation), the suffix keeps ``x`` and is stamped."""
    relink(tree, parent, x, b)
    tree[LAST, b] = tick(st)
    tick(st)  # the new node's creation time, replaced by the suffix's
    tree[CREATED, b] = tree[CREATED, x]
    tree[HITS, b] = tree[HITS, x]
    tree[FLAGS, b] = tree[FLAGS, x] & (DEV | HOST | LOCKED)
    tree[KIDS, b] = 1
    tree[CHILDREN, b] = 1 if tree[FLAGS, x] & DEV else 0
    stamp(tree, dk, ds, hk, hs, st, x, tick(st))
    refresh(tree, dk, ds, hk, hs, st, b)
    track(tree, links, ends, st, b)


@helper
def new_node(tree: np.ndarray, st: np.ndarray, nodes: np.ndarray, i: int, j: int, flags: int) -> int:
    """Accesses ``i .. j`` become a new node (``_add_new_node``, ``insert_host``); returns it."""
    x = nodes[j - 1]
    tree[HEAD, x] = nodes[i]
    for a in range(i, j):
        tree[OWNER, nodes[a]] = x
    tree[LAST, x] = tick(st)
    tree[CREATED, x] = tick(st)
    tree[HITS, x] = 0
    tree[FLAGS, x] = flags
    tree[KIDS, x] = 0
    tree[CHILDREN, x] = 0
    return x


# ---- the host ----


@kernel
def evict_host(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    num: int,
) -> int:
    """``drive_host_eviction``: free at least ``num`` host blocks; returns how many were freed.

    Under write-back, host copies of nodes also on the GPU go first, in the order they were registered,
    sparing device leaves on the first pass (``_reclaim_full_host_duplicates``); then whole host leaves,
    smallest key first, a parent joining when it becomes one."""
    freed = 0
    if st[BACK] == 1:
        for sparing in (True, False):
            y = ends[0, TAIL]
            while y != NONE and freed < num:
                newer = links[y, PREV]
                f = tree[FLAGS, y]
                if (f & DEV) == 0 or (f & HOST) == 0:
                    unlink(links, ends, y)
                elif not (sparing and device_leaf(tree, y)) and (f & PINNED) == 0:
                    tree[FLAGS, y] &= ~HOST
                    n = length(tree, depth, y)
                    st[HOST_USED] -= n
                    st[H_EVICTIONS] += n
                    freed += n
                    unlink(links, ends, y)
                y = newer
    while freed < num and st[H_SIZE] > 0:
        x = hs[0]
        n = length(tree, depth, x)
        delete(tree, parent, dk, ds, hk, hs, links, ends, st, x)
        st[HOST_USED] -= n
        st[H_EVICTIONS] += n
        freed += n
    return freed


@kernel
def backup(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    x: int,
    blocks: np.ndarray,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
) -> bool:
    """``_execute_kv_backup``: a host copy of node ``x``, evicting the host's shortfall first (False when
    that frees too little); then ``write_backup_storage``, and the acknowledgement registers a duplicate."""
    need = length(tree, depth, x)
    free = st[HOST_CAP] - st[HOST_USED]
    if free < need and evict_host(tree, parent, depth, dk, ds, hk, hs, links, ends, st, need - free) < need - free:
        st[H_FAILURES] += 1
        return False
    tree[FLAGS, x] |= HOST
    st[HOST_USED] += need
    st[H_WRITES] += need
    if s_st[CAPACITY] > 0:
        k = 0
        b = x
        while True:
            blocks[k] = tree[NAME, b]
            k += 1
            if b == tree[HEAD, x]:
                break
            b = parent[b]
        store(blocks, k, st[POLICY], s_rec, s_heap, s_st)
    track(tree, links, ends, st, x)
    return True


# ---- the GPU ----


@kernel
def evict_device(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    num: int,
    blocks: np.ndarray,
    passed: np.ndarray,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
) -> None:
    """``_evict_components``: free at least ``num`` GPU blocks, device leaves smallest key first, a parent
    joining when it becomes one. A leaf with a host copy is demoted; under write-back one without is
    backed up alone (``_build_backup_kv_action(write_back=True)``) and demoted, or, when the host has no
    room, dropped (``drop_subtree_no_host``: a failed host eviction has freed every host-only node below
    it that is not locked, so one with children left is passed over); under write-through it is deleted."""
    freed = 0
    n_passed = 0
    while freed < num and st[D_SIZE] > 0:
        x = ds[0]
        n = length(tree, depth, x)
        if (tree[FLAGS, x] & HOST) == 0 and st[BACK] == 1:
            if not backup(tree, parent, depth, dk, ds, hk, hs, links, ends, st, x, blocks, s_rec, s_heap, s_st):
                if tree[KIDS, x] > 0:
                    tree[FLAGS, x] |= SKIPPED
                    refresh(tree, dk, ds, hk, hs, st, x)
                    passed[n_passed] = x
                    n_passed += 1
                    continue
        if tree[FLAGS, x] & HOST:
            set_dev(tree, parent, dk, ds, hk, hs, st, x, False)
        else:
            delete(tree, parent, dk, ds, hk, hs, links, ends, st, x)
        st[DEV_USED] -= n
        freed += n
    for i in range(n_passed):
        tree[FLAGS, passed[i]] &= ~SKIPPED
        refresh(tree, dk, ds, hk, hs, st, passed[i])


@kernel
def lock(
    tree: np.ndarray,
    parent: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    st: np.ndarray,
    x: int,
    on: bool,
) -> None:
    """``inc_lock_ref`` / ``dec_lock_ref``: node ``x`` and its ancestors, whichever tier holds them."""
    while x != NO_NODE:
        if on:
            tree[FLAGS, x] |= LOCKED
        else:
            tree[FLAGS, x] &= ~LOCKED
        refresh(tree, dk, ds, hk, hs, st, x)
        x = up(tree, parent, x)


@kernel
def match(
    tree: np.ndarray,
    parent: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
) -> tuple[int, int, int]:
    """Step 1: (the deepest matched node, blocks matched with a GPU copy, blocks matched). The walk's
    stamps (``_match_post_processor``) fall from the deepest node up, all after every earlier time."""
    m = 0
    while lo + m < hi and tree[OWNER, nodes[lo + m]] != NO_NODE:
        m += 1
    best = NO_NODE
    if m > 0:
        best = nodes[lo + m - 1]
        if tree[OWNER, best] != best:
            split(tree, parent, dk, ds, hk, hs, links, ends, st, tree[OWNER, best], best)
    k = 0
    x = best
    while x != NO_NODE:
        k += 1
        x = up(tree, parent, x)
    t = st[CLOCK] + k  # the root's stamp, the deepest node's just below it
    st[CLOCK] += k + 1
    x = best
    while x != NO_NODE:
        t -= 1
        stamp(tree, dk, ds, hk, hs, st, x, t)
        x = up(tree, parent, x)
    d = 0
    while d < m and tree[FLAGS, tree[OWNER, nodes[lo + d]]] & DEV:
        d += 1
    return best, d, m


@kernel
def insert(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    end: int,
    blocks: np.ndarray,
    chain: np.ndarray,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
) -> None:
    """Step 4, the prompt's accesses ``lo .. end``: stamp, split, put back on the GPU and count each node
    on the path, then hang the rest as a new leaf."""
    tick(st)  # the root's touch
    i = lo
    while i < end and tree[OWNER, nodes[i]] != NO_NODE:
        x = tree[OWNER, nodes[i]]
        stamp(tree, dk, ds, hk, hs, st, x, tick(st))
        j = i + 1
        while j < end and tree[OWNER, nodes[j]] == x:
            j += 1
        if nodes[j - 1] != x:
            split(tree, parent, dk, ds, hk, hs, links, ends, st, x, nodes[j - 1])
            x = nodes[j - 1]
        if (tree[FLAGS, x] & DEV) == 0:
            set_dev(tree, parent, dk, ds, hk, hs, st, x, True)
            st[DEV_USED] += j - i
            track(tree, links, ends, st, x)
        count(tree, parent, depth, dk, ds, hk, hs, links, ends, st, x, blocks, chain, s_rec, s_heap, s_st)
        i = j
    if i < end:
        x = new_node(tree, st, nodes, i, end, DEV)
        p = parent[nodes[i]]
        if p != NO_NODE:
            tree[KIDS, p] += 1
            tree[CHILDREN, p] += 1
            refresh(tree, dk, ds, hk, hs, st, p)
        st[DEV_USED] += end - i
        count(tree, parent, depth, dk, ds, hk, hs, links, ends, st, x, blocks, chain, s_rec, s_heap, s_st)
        refresh(tree, dk, ds, hk, hs, st, x)


@kernel
def count(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    x: int,
    blocks: np.ndarray,
    chain: np.ndarray,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
) -> None:
    """``_inc_hit_count_and_check``: one more hit for node ``x`` (none under write-back); at the threshold
    without a host copy, ``x`` and its unbacked ancestors are backed up, top down, until one fails."""
    if st[BACK] == 1:
        return
    tree[HITS, x] += 1
    rekeyed(tree, dk, ds, hk, hs, st, x)
    if tree[HITS, x] < st[THRESHOLD] or tree[FLAGS, x] & HOST:
        return
    k = 0
    y = x
    while y != NO_NODE and (tree[FLAGS, y] & HOST) == 0:
        chain[k] = y
        k += 1
        y = up(tree, parent, y)
    for i in range(k - 1, -1, -1):
        if not backup(tree, parent, depth, dk, ds, hk, hs, links, ends, st, chain[i], blocks, s_rec, s_heap, s_st):
            return


@helper
def new_state(
    n: int, capacity: int, host_capacity: int, policy: int, write_policy: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One instance's empty GPU and host tiers over ``n`` blocks: ``(tree, dk, ds, hk, hs, links, ends, st)``
    (the tree, the heaps of device and host leaves, the duplicates' queue and the scalars)."""
    tree = np.zeros((9, n), np.int64)
    tree[OWNER] = NO_NODE
    tree[HEAD] = NO_NODE
    dk, ds = new_heap(n, max(n, 1))
    hk, hs = new_heap(n, max(n, 1))
    links, ends = new_queues(n, 1)
    st = np.zeros(13, np.int64)
    st[GPU_CAP], st[HOST_CAP], st[POLICY] = capacity, host_capacity, policy
    st[BACK] = 1 if write_policy == WRITE_BACK else 0
    st[THRESHOLD] = 1 if write_policy == 0 else SELECTIVE_THRESHOLD
    return tree, dk, ds, hk, hs, links, ends, st


@kernel
def serve(
    tree: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    passed: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
    r: int,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
    blocks: np.ndarray,
    chain: np.ndarray,
    prefetch_floor: int,
    load_floor: int,
) -> tuple[int, int, int]:
    """Request ``r`` (blocks ``nodes[lo:hi]``) served by one instance (its tiers made by :func:`new_state`,
    numbered as ``parent``/``depth`` number its blocks, ``tree[NAME]`` their numbers in storage) over a
    storage tier (:func:`new_tier`, its own or shared): steps 1 to 4 of the module's docstring. Returns
    the blocks found on the GPU, on the host and in storage. ``passed`` holds a block per block of the
    instance, ``blocks`` and ``chain`` one more than the request's."""
    policy, capacity = st[POLICY], st[GPU_CAP]
    if s_st[CAPACITY] > 0:
        for i in range(lo, hi):
            b = tree[NAME, nodes[i]]
            s_rec[SEEN, b] = r
            s_rec[FREQ, b] += 1
            if policy == MRU and s_rec[CAND, b] == 1:
                offer(s_rec, s_heap, s_st, b, policy)
    best, d, m = match(tree, parent, dk, ds, hk, hs, links, ends, st, nodes, lo, hi)
    stored = 0
    if s_st[CAPACITY] > 0 and (best == NO_NODE or tree[FLAGS, best] & HOST) and hi - lo - m >= prefetch_floor:
        hit = 0
        while lo + m + hit < hi and s_rec[HELD, tree[NAME, nodes[lo + m + hit]]] == 1:
            hit += 1
        if hit >= prefetch_floor:
            stored = _storage_hit(tree, parent, depth, dk, ds, hk, hs, links, ends, st, best, hit, prefetch_floor)
            if stored > 0:
                best = _insert_host(tree, dk, ds, hk, hs, st, nodes, lo + m, lo + m + stored, best)
    lock(tree, parent, dk, ds, hk, hs, st, best, True)
    state = (tree, parent, depth, dk, ds, hk, hs, links, ends, st)
    loaded = d
    h = m + stored - d
    if h > 0 and h >= load_floor:
        free = capacity - st[DEV_USED]
        if free < h:
            evict_device(*state, h - free, blocks, passed, s_rec, s_heap, s_st)
        if capacity - st[DEV_USED] >= h:
            _load_back(*state, best)
            loaded = m + stored
    want = min(hi - lo - loaded, capacity - loaded)
    free = capacity - st[DEV_USED]
    if want > free:
        evict_device(*state, want - free, blocks, passed, s_rec, s_heap, s_st)
    insert(*state, nodes, lo, lo + loaded + want, blocks, chain, s_rec, s_heap, s_st)
    lock(tree, parent, dk, ds, hk, hs, st, best, False)
    return d, m - d, stored


@kernel
def tiered_replay(
    nodes: np.ndarray,
    offsets: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    capacity: int,
    host_capacity: int,
    storage_capacity: int,
    policy: int,
    write_policy: int,
    prefetch_floor: int,
    load_floor: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per request, the blocks found on the GPU, on the host and in storage, and the tier counters
    (``STATS``): :func:`serve` for every request of the trace in turn, on one instance with its own
    storage. Capacities and floors are in blocks; ``policy`` is a code of :mod:`kvviz.hiradix.keys`,
    ``write_policy`` an index into ``kvviz.tiers.config.WRITE_POLICIES``."""
    nodes, parent, depth, _ = by_first_use(nodes, parent, depth)
    n = len(parent)
    tree, dk, ds, hk, hs, links, ends, st = new_state(n, capacity, host_capacity, policy, write_policy)
    tree[NAME] = np.arange(n)
    s_rec, s_heap, s_st = new_tier(parent, depth, storage_capacity)
    longest = 1
    for r in range(len(offsets) - 1):
        longest = max(longest, offsets[r + 1] - offsets[r])
    blocks = np.empty(longest + 1, np.int64)
    chain = np.empty(longest + 1, np.int64)
    passed = np.empty(n, np.int64)
    out = np.zeros((3, len(offsets) - 1), np.int64)
    for r in range(len(offsets) - 1):
        g, h, s = serve(
            tree,
            dk,
            ds,
            hk,
            hs,
            links,
            ends,
            st,
            parent,
            depth,
            passed,
            nodes,
            offsets[r],
            offsets[r + 1],
            r,
            s_rec,
            s_heap,
            s_st,
            blocks,
            chain,
            prefetch_floor,
            load_floor,
        )
        out[0, r], out[1, r], out[2, r] = g, h, s
    return out[0], out[1], out[2], tier_stats(st, s_st)


@helper
def tier_stats(st: np.ndarray, s_st: np.ndarray) -> np.ndarray:
    """An instance's tier counters (``STATS``) with its storage's."""
    return np.array([st[H_WRITES], s_st[WRITES], st[H_EVICTIONS], s_st[EVICTIONS], st[H_FAILURES]], np.int64)


@kernel
def _storage_hit(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    anchor: int,
    hit: int,
    floor: int,
) -> int:
    """``allocate_storage_hit``, the anchor host-locked: the whole hit, evicting the hit's size from the
    host when it does not fit; else what is free, if at least the floor; else nothing."""
    if anchor != NO_NODE:
        tree[FLAGS, anchor] |= PINNED
        refresh(tree, dk, ds, hk, hs, st, anchor)
    if st[HOST_CAP] - st[HOST_USED] < hit:
        evict_host(tree, parent, depth, dk, ds, hk, hs, links, ends, st, hit)
    if anchor != NO_NODE:
        tree[FLAGS, anchor] &= ~PINNED
        refresh(tree, dk, ds, hk, hs, st, anchor)
    free = st[HOST_CAP] - st[HOST_USED]
    if free >= hit:
        return hit
    return free if free >= floor else 0


@kernel
def _insert_host(
    tree: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    st: np.ndarray,
    nodes: np.ndarray,
    i: int,
    j: int,
    anchor: int,
) -> int:
    """``insert_host``: accesses ``i .. j``, fetched from storage, become a host-only node under the anchor."""
    t = tick(st)
    if anchor != NO_NODE:
        stamp(tree, dk, ds, hk, hs, st, anchor, t)
    x = new_node(tree, st, nodes, i, j, HOST)
    if anchor != NO_NODE:
        tree[KIDS, anchor] += 1
        refresh(tree, dk, ds, hk, hs, st, anchor)
    st[HOST_USED] += j - i
    refresh(tree, dk, ds, hk, hs, st, x)
    return x


@kernel
def _load_back(
    tree: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    dk: np.ndarray,
    ds: np.ndarray,
    hk: np.ndarray,
    hs: np.ndarray,
    links: np.ndarray,
    ends: np.ndarray,
    st: np.ndarray,
    x: int,
) -> None:
    """``load_back`` and ``finish_load_back``: the host-only nodes from ``x`` up get GPU copies, deepest
    registered first."""
    while x != NO_NODE and (tree[FLAGS, x] & DEV) == 0:
        set_dev(tree, parent, dk, ds, hk, hs, st, x, True)
        st[DEV_USED] += length(tree, depth, x)
        track(tree, links, ends, st, x)
        x = up(tree, parent, x)
