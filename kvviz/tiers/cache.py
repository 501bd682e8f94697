"""HiCache at trace scale: a radix cache in GPU memory (L1) over host DRAM (L2) and storage (L3).

Follows SGLang's HiRadixCache (``python/sglang/srt/mem_cache/hiradix_cache.py``) and its storage
tier (``hicache_storage``), both in sgl-project/sglang, as a compiled replay of a whole trace:

- **L1** is the prefix replay of :mod:`kvviz.prefix_cache.replay` exactly (the same radix edges,
  eviction keys and splits): whether a request's lower-tier blocks are loaded back or recomputed,
  its prompt ends up device-resident as HiCache's insert adopts them, so the GPU tier evolves as
  a plain RadixCache does, and the lower tiers follow its evictions;
- **write policies** (``--hicache-write-policy``): ``write_through`` copies a block to host
  memory when it enters L1; ``write_through_selective`` when its hit count reaches 2 (counted
  as HiCache counts: once per insert of a prompt that walks it in L1, and a request inserts its
  prompt twice when it generates two tokens or more);
  ``write_back`` only when L1 evicts it;
- a block L1 evicts that has a host copy stays in L2 and is found there by later requests;
- **L2** drops only host-only leaves (a block also in L1 keeps its copy, as ``evict_host``
  skips device-resident nodes), by the chosen policy; a write that finds L2 full evicts one
  such block or fails (the block stays GPU-only);
- **L3** receives every block written to L2 (HiCache backs the host copy up to storage) and
  evicts its leaves by the chosen policy (the blocks a request writes become candidates once its
  writes are done); an L3 hit is prefetched into L2;
- a request's hits are its L1 match, then the run of following blocks found in L2 or L3
  (each counted in the fastest tier holding it). Whether they are loaded or recomputed is
  decided afterwards from the hardware model (:mod:`kvviz.tiers.latency`): it does not change
  what the tiers hold.

Lower tiers work per block (HiCache's pages), so L2 and L3 keep prefix-closed sets of leaves
evicted leaf first: a block is a candidate only when no child block is in the same tier.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import helper, kernel
from kvviz.eviction.policies._heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.prefix_cache.replay import NO_NODE, _remove, _set_key

SELECTIVE_THRESHOLD = 2
"""SGLang's hit count at which write_through_selective copies a node to host memory."""
STATS = ("l2_writes", "l3_writes", "l2_evictions", "l3_evictions", "l2_write_failures")


@helper
def _block_key(
    keys: np.ndarray, b: int, policy: int, seen: np.ndarray, born: np.ndarray, freq: np.ndarray, depth: np.ndarray
) -> None:
    """A lower-tier block's eviction key: the policy's key, then last use, then deeper first."""
    if policy == 0:
        keys[b, 0] = seen[b]
    elif policy == 1:
        keys[b, 0] = freq[b]
    elif policy == 2:
        keys[b, 0] = born[b]
    elif policy == 3:
        keys[b, 0] = -seen[b]
    elif policy == 4:
        keys[b, 0] = -born[b]
    else:
        keys[b, 0] = 1 if freq[b] >= 2 else 0
    keys[b, 1] = seen[b]
    keys[b, 2] = -depth[b]


@helper
def _drop(keys: np.ndarray, slots: np.ndarray, size: int, b: int) -> int:
    """Take block ``b`` out of a lower tier's heap if it is there; returns the new size."""
    if keys[b, SLOT] == ABSENT:
        return size
    keys[b, 0] = -(2**31)
    keys[b, 1] = -(2**31)
    keys[b, 2] = -(2**31)
    rekey(keys, slots, size, b)
    return pop(keys, slots, size)


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
    prefix replay). Capacities are in blocks; ``policy`` is :class:`kvviz.prefix_cache.replay.PrefixPolicy`'s
    code, ``write_policy`` an index into ``kvviz.tiers.config.WRITE_POLICIES``. Each lower tier keeps, per block,
    ``held`` (in the tier), ``kids`` (children in the tier), ``born`` (the request that wrote it)
    and a heap of its evictable leaves.
    """
    threshold = 1 if write_policy == 0 else SELECTIVE_THRESHOLD
    n = len(parent)
    n_req = len(offsets) - 1
    # L1: the prefix replay's radix edges (named by their deepest block)
    owner = np.full(n, NO_NODE, np.int64)
    head = np.full(n, NO_NODE, np.int64)
    last = np.zeros(n, np.int64)
    created = np.zeros(n, np.int64)
    hits = np.zeros(n, np.int64)
    children = np.zeros(n, np.int64)
    keys, slots = new_heap(n, max(n, 1))
    size = 0
    used = 0
    clock = 0
    # per block, for the lower tiers: last request, requests seen, L1 hit count (HiCache's)
    seen = np.zeros(n, np.int64)
    freq = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    held2 = np.zeros(n, np.bool_)
    kids2 = np.zeros(n, np.int64)
    born2 = np.zeros(n, np.int64)
    keys2, slots2 = new_heap(n, max(n, 1))
    size2 = 0
    used2 = 0
    held3 = np.zeros(n, np.bool_)
    kids3 = np.zeros(n, np.int64)
    born3 = np.zeros(n, np.int64)
    keys3, slots3 = new_heap(n, max(n, 1))
    size3 = 0
    used3 = 0
    stats = np.zeros(len(STATS), np.int64)
    out1 = np.zeros(n_req, np.int64)
    out2 = np.zeros(n_req, np.int64)
    out3 = np.zeros(n_req, np.int64)
    for r in range(n_req):
        lo, hi = offsets[r], offsets[r + 1]
        m = 0
        while lo + m < hi and owner[nodes[lo + m]] != NO_NODE:
            m += 1
        run = m
        while lo + run < hi and (held2[nodes[lo + run]] or held3[nodes[lo + run]]):
            b = nodes[lo + run]
            if held2[b]:
                out2[r] += 1
            else:
                out3[r] += 1
            run += 1
        out1[r] = m
        for i in range(lo, hi):
            b = nodes[i]
            seen[b] = r
            freq[b] += 1
            if policy == 3:  # MRU's key falls with use: re-sort at once (the others' keys are refreshed lazily)
                if keys2[b, SLOT] != ABSENT:
                    _block_key(keys2, b, policy, seen, born2, freq, depth)
                    rekey(keys2, slots2, size2, b)
                if keys3[b, SLOT] != ABSENT:
                    _block_key(keys3, b, policy, seen, born3, freq, depth)
                    rekey(keys3, slots3, size3, b)
        # 1. match: stamp the walk; a match ending inside an edge splits it at the last matched block
        t = clock
        clock += 1
        deepest = NO_NODE
        if m > 0:
            deepest = nodes[lo + m - 1]
            for i in range(lo, lo + m):
                b = nodes[i]
                if owner[b] == b:
                    last[b] = t
            x = owner[deepest]
            if x != deepest:
                last[x] = t
                below = x
                while parent[below] != deepest:
                    below = parent[below]
                head[deepest] = head[x]
                head[x] = below
                b = deepest
                while True:
                    owner[b] = deepest
                    if b == head[deepest]:
                        break
                    b = parent[b]
                created[deepest] = clock
                last[deepest] = clock
                clock += 1
                hits[deepest] = hits[x]
                children[deepest] = 1
                if keys[x, SLOT] != ABSENT:
                    _set_key(keys, x, policy, last, created, hits)
                    rekey(keys, slots, size, x)
            size = _remove(keys, slots, size, deepest)
        # 2. evict the shortfall from L1; an evicted block with a host copy stays in L2
        want = min(hi - lo - m, capacity - m)
        if capacity - used < want:
            target = want - (capacity - used)
            freed = 0
            while freed < target and size > 0:
                x = slots[0]
                size = pop(keys, slots, size)
                h = head[x]
                b = x
                while True:
                    owner[b] = NO_NODE
                    if write_policy == 2 and not held2[b]:
                        size2, used2, size3, used3 = _write(
                            b, r, policy, host_capacity, storage_capacity, parent, depth, owner, seen, freq,
                            held2, kids2, born2, keys2, slots2, size2, used2,
                            held3, kids3, born3, keys3, slots3, size3, used3, stats, False,
                        )  # fmt: skip
                    elif held2[b] and kids2[b] == 0:
                        _block_key(keys2, b, policy, seen, born2, freq, depth)
                        size2 = push(keys2, slots2, size2, b)
                    if b == h:
                        break
                    b = parent[b]
                gone = depth[x] - depth[h] + 1
                freed += gone
                used -= gone
                p = parent[h]
                if p != NO_NODE:
                    children[p] -= 1
                    if children[p] == 0 and p != deepest:
                        _set_key(keys, p, policy, last, created, hits)
                        size = push(keys, slots, size, p)
        # 3. insert: stamp and count the path, hang the rest as one leaf
        t = clock
        clock += 1
        for i in range(lo, lo + m):
            b = nodes[i]
            count[b] += 1
            if owner[b] == b:
                last[b] = t
                hits[b] += 1
        if want > 0:
            leaf = nodes[lo + m + want - 1]
            head[leaf] = nodes[lo + m]
            for i in range(lo + m, lo + m + want):
                b = nodes[i]
                owner[b] = leaf
                count[b] = 1
                size2 = _drop(keys2, slots2, size2, b)
            created[leaf] = clock
            last[leaf] = clock
            clock += 1
            hits[leaf] = 1
            children[leaf] = 0
            used += want
            if deepest != NO_NODE:
                children[deepest] += 1
        # 4. the finished request's insert: the same path, stamped and counted again
        if inserts[r] == 2:
            t = clock
            clock += 1
            for i in range(lo, lo + m + want):
                b = nodes[i]
                count[b] += 1
                if owner[b] == b:
                    last[b] = t
                    hits[b] += 1
        # 5. host copies: by the write policy's hit count, and every block prefetched from storage
        for i in range(lo, lo + m + want):
            b = nodes[i]
            due = write_policy != 2 and count[b] >= threshold
            if not held2[b] and (due or (i >= lo + m and i < lo + run and held3[b])):
                size2, used2, size3, used3 = _write(
                    b, r, policy, host_capacity, storage_capacity, parent, depth, owner, seen, freq,
                    held2, kids2, born2, keys2, slots2, size2, used2,
                    held3, kids3, born3, keys3, slots3, size3, used3, stats, True,
                )  # fmt: skip
        for i in range(lo, lo + m + want):  # the path's new storage leaves become candidates
            b = nodes[i]
            if held3[b] and kids3[b] == 0 and keys3[b, SLOT] == ABSENT:
                _block_key(keys3, b, policy, seen, born3, freq, depth)
                size3 = push(keys3, slots3, size3, b)
        # then unlock
        if want > 0:
            leaf = nodes[lo + m + want - 1]
            _set_key(keys, leaf, policy, last, created, hits)
            size = push(keys, slots, size, leaf)
        elif deepest != NO_NODE and children[deepest] == 0:
            _set_key(keys, deepest, policy, last, created, hits)
            size = push(keys, slots, size, deepest)
    return out1, out2, out3, stats


@kernel
def _write(
    b, r, policy, host_capacity, storage_capacity, parent, depth, owner, seen, freq,
    held2, kids2, born2, keys2, slots2, size2, used2,
    held3, kids3, born3, keys3, slots3, size3, used3, stats, defer,
):  # fmt: skip
    """Copy block ``b`` to host memory (evicting one host-only leaf if full), then to storage.

    Returns the two tiers' heap sizes and occupancies. A failed host write leaves ``b`` GPU-only.
    With ``defer`` the block joins storage's candidates after its request's writes (a path is
    written top down, so each block would otherwise be pushed and then dropped for its child).
    """
    if used2 >= host_capacity:
        if size2 == 0:
            stats[4] += 1
            return size2, used2, size3, used3
        x, size2 = _pop_current(keys2, slots2, size2, policy, seen, born2, freq, depth)
        held2[x] = False
        used2 -= 1
        stats[2] += 1
        p = parent[x]
        if p != NO_NODE:
            kids2[p] -= 1
            if kids2[p] == 0 and held2[p] and owner[p] == NO_NODE:
                _block_key(keys2, p, policy, seen, born2, freq, depth)
                size2 = push(keys2, slots2, size2, p)
    held2[b] = True
    born2[b] = r
    used2 += 1
    stats[0] += 1
    p = parent[b]
    if p != NO_NODE:
        kids2[p] += 1
        size2 = _drop(keys2, slots2, size2, p)
    if owner[b] == NO_NODE and kids2[b] == 0:
        _block_key(keys2, b, policy, seen, born2, freq, depth)
        size2 = push(keys2, slots2, size2, b)
    if held3[b] or storage_capacity == 0:
        return size2, used2, size3, used3
    if used3 >= storage_capacity:
        if size3 == 0:
            return size2, used2, size3, used3
        x, size3 = _pop_current(keys3, slots3, size3, policy, seen, born3, freq, depth)
        held3[x] = False
        used3 -= 1
        stats[3] += 1
        p = parent[x]
        if p != NO_NODE:
            kids3[p] -= 1
            if kids3[p] == 0 and held3[p]:
                _block_key(keys3, p, policy, seen, born3, freq, depth)
                size3 = push(keys3, slots3, size3, p)
    held3[b] = True
    born3[b] = r
    used3 += 1
    stats[1] += 1
    p = parent[b]
    if p != NO_NODE:
        kids3[p] += 1
        size3 = _drop(keys3, slots3, size3, p)
    if kids3[b] == 0 and not defer:
        _block_key(keys3, b, policy, seen, born3, freq, depth)
        size3 = push(keys3, slots3, size3, b)
    return size2, used2, size3, used3


@kernel
def _pop_current(keys, slots, size, policy, seen, born, freq, depth):  # fmt: skip
    """Pop the lower-tier leaf with the smallest current key; returns it and the heap's new size.

    Keys are refreshed lazily: a use only raises a block's key (except MRU's, kept current at
    every use), so a root whose stored key is stale takes its current key and sinks, until the
    root's key is current: then it is the smallest of all current keys.
    """
    while True:
        x = slots[0]
        k0, k1, k2 = keys[x, 0], keys[x, 1], keys[x, 2]
        _block_key(keys, x, policy, seen, born, freq, depth)
        if keys[x, 0] == k0 and keys[x, 1] == k1 and keys[x, 2] == k2:
            return x, pop(keys, slots, size)
        rekey(keys, slots, size, x)
