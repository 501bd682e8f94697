"""HiCache at trace scale: a radix cache in GPU memory (L1) over host DRAM (L2) and storage (L3).

Follows SGLang's HiRadixCache (``python/sglang/srt/mem_cache/hiradix_cache.py``) and its storage
tier (``hicache_storage``), both in sgl-project/sglang, as a compiled replay of a whole trace:

- **L1** is the prefix replay of :mod:`kvviz.prefix_cache.replay` exactly (the same radix tree
  steps of :mod:`kvviz.hiradix.tree`): whether a request's lower-tier blocks are loaded back
  or recomputed, its prompt ends up device-resident as HiCache's insert adopts them, so the GPU
  tier evolves as a plain RadixCache does, and the lower tiers follow its evictions;
- **write policies** (``--hicache-write-policy``): ``write_through`` copies a block to host
  memory when it enters L1; ``write_through_selective`` when its hit count reaches 2 (counted
  as SGLang 0.5.23 counts: once per request whose prompt walks it in L1, however many times the
  request inserts it, since ``_insert_helper`` counts only past the request's ``cache_inserted_len``);
  ``write_back`` only when L1 evicts it;
- a block L1 evicts that has a host copy stays in L2 and is found there by later requests;
- **L2** drops only host-only leaves (a block also in L1 keeps its copy, as ``evict_host``
  skips device-resident nodes), by the chosen policy; a write that finds L2 full evicts one
  such block or fails (the block stays GPU-only);
- **L3** receives every block written to L2 (HiCache backs the host copy up to storage) and
  evicts its leaves by the chosen policy (the blocks a request writes become candidates once its
  writes are done); an L3 hit is prefetched into L2;
- a request's hits are its L1 match, then the run of following blocks found in L2, then the run
  after that found in L3 — only when the last block matched so far has a host copy or nothing
  matched (when SGLang 0.5.23 prefetches from storage). Whether they are loaded or recomputed is
  decided afterwards from the hardware model (:mod:`kvviz.tiers.latency`): it does not change
  what the tiers hold.

Lower tiers work per block (HiCache's pages), so L2 and L3 keep prefix-closed sets of leaves
evicted leaf first: a block is a candidate only when no child block is in the same tier. A lower
tier is three arrays: ``rec``, rows of one value per block (``HELD``, ``KIDS``: its children in the tier,
``BORN``: the request that wrote it, ``CAND``: an eviction candidate); ``heap``, a lazy heap of
candidates; ``st``, its counters (``SIZE`` … ``FAILURES``). The heap's entries carry their keys, so
sifting reads one small array, and a key that rises with use is refreshed only when its entry
reaches the top.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel
from kvviz.hiradix.keys import FIFO, FILO, LFU, LRU, MRU
from kvviz.hiradix.tree import HEAD, NO_NODE, OWNER, by_first_use, evict_leaf, finish, match_length, new_tree, start

SELECTIVE_THRESHOLD = 2
"""SGLang's hit count at which write_through_selective copies a node to host memory."""
STATS = ("l2_writes", "l3_writes", "l2_evictions", "l3_evictions", "l2_write_failures")
WRITE_BACK = 2
"""``write_back``'s index in ``kvviz.tiers.config.WRITE_POLICIES``."""

SEEN, FREQ, COUNT = 0, 1, 2
"""The rows of ``use``, one value per block: the last request that read it, how many did, HiCache's hit count."""
HELD, KIDS, BORN, CAND = 0, 1, 2, 3
"""The rows of a lower tier's ``rec``."""
SIZE, USED, CAPACITY, WRITES, EVICTIONS, FAILURES = 0, 1, 2, 3, 4, 5
"""A lower tier's counters: heap entries, blocks held, blocks it holds at most, and what it did."""
_TOP = 2**30
"""Above every request index, block depth and use count (a replay takes fewer than 2^30 accesses)."""
_BLOCK = 2**31 - 1


@helper
def new_tier(n: int, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty lower tier of ``capacity`` blocks: ``(rec, heap, st)``. Its candidates are held blocks,
    so a heap of twice the capacity is at most half full after :func:`_compact` drops stale entries."""
    rec = np.zeros((4, n), np.int64)
    heap = np.zeros((2 * min(capacity, n) + 16, 2), np.int64)
    st = np.zeros(6, np.int64)
    st[CAPACITY] = capacity
    return rec, heap, st


@helper
def tier_key(b: int, policy: int, use: np.ndarray, rec: np.ndarray) -> int:
    """A lower-tier block's eviction key, then its last use, in one number (smallest evicted first)."""
    seen = use[SEEN, b]
    if policy == LRU:
        k = seen
    elif policy == LFU:
        k = use[FREQ, b]
    elif policy == FIFO:
        k = rec[BORN, b]
    elif policy == MRU:  # the one key that falls with use
        k = _TOP - seen
    elif policy == FILO:
        k = _TOP - rec[BORN, b]
    else:  # SLRU
        k = 1 if use[FREQ, b] >= 2 else 0
    return (k << 31) | seen


@helper
def _tie(b: int, depth: np.ndarray) -> int:
    """An entry's second word: deeper blocks first (a key and last use shared only along one path), then ``b``."""
    return ((_TOP - depth[b]) << 31) | b


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
def _compact(rec: np.ndarray, heap: np.ndarray, st: np.ndarray, policy: int, use: np.ndarray) -> None:
    """Rebuild a full heap from its candidates, one entry each with its current key.

    A call, not inlined: it runs once per heap-full of entries, and inlined into every path that offers a
    candidate it made the replay's compile (a fresh server's first replay) several times longer."""
    size = 0
    for i in range(st[SIZE]):
        b = heap[i, 1] & _BLOCK
        if rec[CAND, b] == 1:
            rec[CAND, b] = 2  # kept once
            heap[size, 0] = tier_key(b, policy, use, rec)
            heap[size, 1] = heap[i, 1]
            size += 1
    for i in range(size):
        rec[CAND, heap[i, 1] & _BLOCK] = 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i, heap[i, 0], heap[i, 1])
    st[SIZE] = size


@helper
def offer(
    rec: np.ndarray, heap: np.ndarray, st: np.ndarray, b: int, policy: int, use: np.ndarray, depth: np.ndarray
) -> None:
    """Make block ``b`` an eviction candidate with its current key (again, when the key fell)."""
    rec[CAND, b] = 1
    if st[SIZE] == len(heap):
        _compact(rec, heap, st, policy, use)
    _sift_up(heap, st[SIZE], tier_key(b, policy, use, rec), _tie(b, depth))
    st[SIZE] += 1


@kernel
def _pop_leaf(rec: np.ndarray, heap: np.ndarray, st: np.ndarray, policy: int, use: np.ndarray) -> int:
    """Take the candidate with the smallest current key out of the heap (``NO_NODE``: none left).

    An entry is stale when its block stopped being a candidate (dropped) or its key changed since:
    a key that rose takes its current value and sinks; one that fell (MRU) has a fresher entry.
    The top is taken when its key is current: every candidate has an entry at or below its current
    key, and keys are unique, so it is the smallest. A call, not inlined, for the same reason as
    ``_compact``: once per eviction, it costs little, and each inlined copy lengthened the compile."""
    while st[SIZE] > 0:
        k, s = heap[0, 0], heap[0, 1]
        b = s & _BLOCK
        current = tier_key(b, policy, use, rec)
        if rec[CAND, b] == 1 and k < current:
            _sift_down(heap, st[SIZE], 0, current, s)
            continue
        st[SIZE] -= 1
        _sift_down(heap, st[SIZE], 0, heap[st[SIZE], 0], heap[st[SIZE], 1])
        if rec[CAND, b] == 1 and k == current:
            rec[CAND, b] = 0
            return b
    return NO_NODE


@helper
def _make_room(
    rec: np.ndarray,
    heap: np.ndarray,
    st: np.ndarray,
    policy: int,
    use: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    tree: np.ndarray,
    host: bool,
) -> bool:
    """Evict one leaf from a full tier; False when it is full and has none. A parent left without
    children in the tier becomes a candidate (on the host, only when it is not also on the GPU)."""
    if st[USED] < st[CAPACITY]:
        return True
    x = _pop_leaf(rec, heap, st, policy, use)
    if x == NO_NODE:
        st[FAILURES] += 1
        return False
    rec[HELD, x] = 0
    st[USED] -= 1
    st[EVICTIONS] += 1
    p = parent[x]
    if p != NO_NODE:
        rec[KIDS, p] -= 1
        if rec[KIDS, p] == 0 and rec[HELD, p] == 1 and (not host or tree[OWNER, p] == NO_NODE):
            offer(rec, heap, st, p, policy, use, depth)
    return True


@helper
def _hold(
    rec: np.ndarray,
    heap: np.ndarray,
    st: np.ndarray,
    b: int,
    r: int,
    policy: int,
    use: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    candidate: bool,
) -> None:
    """Block ``b`` enters the tier (written for request ``r``); its parent is no longer a leaf there."""
    rec[HELD, b] = 1
    rec[BORN, b] = r
    st[USED] += 1
    st[WRITES] += 1
    p = parent[b]
    if p != NO_NODE:
        rec[KIDS, p] += 1
        rec[CAND, p] = 0
    if candidate and rec[KIDS, b] == 0:
        offer(rec, heap, st, b, policy, use, depth)


@kernel
def _write(
    b: int,
    r: int,
    defer: bool,
    policy: int,
    use: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    tree: np.ndarray,
    h_rec: np.ndarray,
    h_heap: np.ndarray,
    h_st: np.ndarray,
    s_rec: np.ndarray,
    s_heap: np.ndarray,
    s_st: np.ndarray,
) -> None:
    """Copy block ``b`` to host memory (``h_*``, evicting one host-only leaf if full), then to
    storage (``s_*``).

    A failed host write leaves ``b`` GPU-only. With ``defer`` the block joins storage's candidates
    after its request's writes (a path is written top down, so each block would otherwise be
    offered and then dropped for its child).
    """
    if not _make_room(h_rec, h_heap, h_st, policy, use, parent, depth, tree, True):
        return
    _hold(h_rec, h_heap, h_st, b, r, policy, use, parent, depth, tree[OWNER, b] == NO_NODE)
    if s_rec[HELD, b] == 1 or s_st[CAPACITY] == 0:
        return
    if _make_room(s_rec, s_heap, s_st, policy, use, parent, depth, tree, False):
        _hold(s_rec, s_heap, s_st, b, r, policy, use, parent, depth, not defer)


@helper
def _lower_hits(
    nodes: np.ndarray, lo: int, hi: int, m: int, h_rec: np.ndarray, s_rec: np.ndarray, out: np.ndarray, r: int
) -> int:
    """Count the run of blocks after the L1 match found on the host (``out[1, r]``), then the run after
    it found in storage (``out[2, r]``); returns where the run ends.

    Storage is asked only when the match's deepest block has a host copy or nothing matched, as SGLang
    0.5.23's scheduler gates a prefetch (``Scheduler._prefetch_kvcache``: ``is_backuped(last_host_node)
    or is_root(last_host_node)``): a match that ends on a block held only on the GPU (write-back keeps
    no host copy of it) prefetches nothing, and the blocks after it are recomputed."""
    run = m
    while lo + run < hi and h_rec[HELD, nodes[lo + run]] == 1:
        out[1, r] += 1
        run += 1
    if run > 0 and h_rec[HELD, nodes[lo + run - 1]] == 0:
        return run
    while lo + run < hi and s_rec[HELD, nodes[lo + run]] == 1:
        out[2, r] += 1
        run += 1
    return run


@kernel
def tiered_replay(
    nodes: np.ndarray,
    offsets: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    inserts: np.ndarray,
    capacity: int,
    host_capacity: int,
    storage_capacity: int,
    policy: int,
    write_policy: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per request, the blocks hit in L1, L2 and L3, and the tier counters (``STATS``).

    ``inserts[r]`` is how often request r's prompt is inserted (SGLang's serving flow, as in the
    prefix replay). Capacities are in blocks; ``policy`` is a code of :mod:`kvviz.hiradix.keys`,
    ``write_policy`` an index into ``kvviz.tiers.config.WRITE_POLICIES``. A request reads its
    blocks (last use and use count: MRU's key falls with use, so a candidate gets a fresh entry at
    once; the other keys rise and are refreshed lazily), goes through L1 (whose evictions write back
    or leave host copies as candidates), and then writes host copies and offers storage leaves.
    """
    nodes, parent, depth, _ = by_first_use(nodes, parent, depth)
    threshold = 1 if write_policy == 0 else SELECTIVE_THRESHOLD
    n = len(parent)
    tree, keys, slots, state = new_tree(n)
    use = np.zeros((3, n), np.int64)
    h_rec, h_heap, h_st = new_tier(n, host_capacity)
    s_rec, s_heap, s_st = new_tier(n, storage_capacity)
    out = np.zeros((3, len(offsets) - 1), np.int64)
    for r in range(len(offsets) - 1):
        lo, hi = offsets[r], offsets[r + 1]
        m = match_length(tree, nodes, lo, hi)
        out[0, r] = m
        run = _lower_hits(nodes, lo, hi, m, h_rec, s_rec, out, r)
        for i in range(lo, hi):
            b = nodes[i]
            use[SEEN, b] = r
            use[FREQ, b] += 1
            if policy == MRU and h_rec[CAND, b] == 1:
                offer(h_rec, h_heap, h_st, b, policy, use, depth)
            if policy == MRU and s_rec[CAND, b] == 1:
                offer(s_rec, s_heap, s_st, b, policy, use, depth)
        deepest, want = start(tree, keys, slots, state, nodes, lo, hi, m, capacity, parent, policy)
        x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
        while x != NO_NODE:  # the leaf's blocks leave the GPU one by one, deepest first
            b = x
            while True:
                tree[OWNER, b] = NO_NODE
                if write_policy == WRITE_BACK and h_rec[HELD, b] == 0:
                    _write(b, r, False, policy, use, parent, depth, tree, h_rec, h_heap, h_st, s_rec, s_heap, s_st)
                elif h_rec[HELD, b] == 1 and h_rec[KIDS, b] == 0:  # a host copy left alone
                    offer(h_rec, h_heap, h_st, b, policy, use, depth)
                if b == tree[HEAD, x]:
                    break
                b = parent[b]
            x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
        finish(tree, keys, slots, state, nodes, lo, m, want, deepest, inserts[r], policy)
        end = lo + m + want
        for i in range(lo, end):  # HiCache's hit count; blocks now on the GPU leave the host's candidates
            b = nodes[i]
            if i < lo + m:
                use[COUNT, b] += 1
            else:
                use[COUNT, b] = 1
                h_rec[CAND, b] = 0
        # host copies: by the write policy's hit count, and every block prefetched from storage
        for i in range(lo, end):
            b = nodes[i]
            due = write_policy != WRITE_BACK and use[COUNT, b] >= threshold
            if h_rec[HELD, b] == 0 and (due or (lo + m <= i < lo + run and s_rec[HELD, b] == 1)):
                _write(b, r, True, policy, use, parent, depth, tree, h_rec, h_heap, h_st, s_rec, s_heap, s_st)
        for i in range(lo, end):  # the path's new storage leaves become candidates
            b = nodes[i]
            if s_rec[HELD, b] == 1 and s_rec[KIDS, b] == 0 and s_rec[CAND, b] == 0:
                offer(s_rec, s_heap, s_st, b, policy, use, depth)
    stats = np.array([h_st[WRITES], s_st[WRITES], h_st[EVICTIONS], s_st[EVICTIONS], h_st[FAILURES]], np.int64)
    return out[0], out[1], out[2], stats
