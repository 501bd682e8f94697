"""Prefix-cache replay: a trace cached the way a serving engine caches it (SGLang 0.5.23's RadixCache).

A block cache (``kvviz.eviction.replay``) sees a trace as a flat sequence of block accesses and evicts
any block; a serving engine keeps a *prefix tree* and can only reuse a request's KV up to the
first block it does not hold. This module replays a trace through SGLang's RadixCache
(RadixAttention, Zheng et al. arXiv 2312.07104 §3; release 0.5.23's
``python/sglang/srt/mem_cache/radix_cache.py`` and ``evict_policy.py``) with page size = the
trace's block size, request by request in arrival order:

1. **match** the longest cached prefix (hits = matched blocks; ``_match_prefix_helper``); a match
   that ends inside an edge splits it (``_split_node``), and every node on the walk is stamped with
   the walk's time;
2. **lock** the matched path and evict only the shortfall of free blocks for the rest of the
   prompt (``evict_from_tree_cache`` in ``mem_cache/common.py``, then ``evict``), whole leaves in
   the policy's order, cascading to parents that become leaves;
3. **insert** the prompt (``checkpoint_kv_cache`` after prefill): every node on the path gets the
   walk's time and ``hit_count + 1``, the uncached rest becomes one new leaf (``hit_count = 1``);
4. **insert again** when the request generates at least two tokens (``release_kv_cache`` at
   finish): the walk stamps the path again but counts nothing, because ``_insert_helper`` counts a
   node only past the request's ``cache_inserted_len``, which the first insert set to the prompt's
   length — a request counts each node once. A request that finishes at its first token is
   released at prefill (``process_batch_result_prefill``) and inserted once. Then the lock is
   released.

The count matters only for LFU and SLRU, whose keys read it; the second walk's time keeps every
node's order of last use, so every policy is as with one insert. Requests complete
instantly (a hit-ratio replay): no request holds a lock while the next one is served, and output
tokens are not inserted (a trace has no ids for them). A prompt longer than the free cache caches
only the blocks that fit after its matched prefix. Policies are SGLang's eviction keys (smallest evicted
first; ties to the older access): LRU ``last_access``, LFU ``(hit_count, last_access)``, FIFO
``creation``, MRU ``-last_access``, FILO ``-creation``, SLRU ``(hit_count >= 2, last_access)``.
SGLang's ``priority`` policy is left out: a trace carries no request priorities, so it is LRU.
A serving engine's run of a trace, with its scheduler's rounds, locks, HiCache and Strata's
deferral, is ``kvviz.radix.trace_replay``.

The tree is implicit in the block ids: node = distinct prefix (the block id, re-chained on
its parent so per-block hashes work too), parent = the request's previous block. A radix edge
of several blocks is named by its deepest block, which is also the node that keeps its id when
a split cuts the edge (SGLang's suffix keeps the id), so every per-node field lives in
per-block arrays. The replay is one compiled loop with an indexed heap of evictable leaves; the
tests check it hit for hit against ``kvviz.radix.radix_cache.RadixCache``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common.errors import InputError, quote, require
from kvviz.common.jit import helper, kernel
from kvviz.eviction.grid import INFINITE, parse_capacities, parse_capacity
from kvviz.eviction.policies._heap import ABSENT, SLOT, new_heap, pop, push, rekey
from kvviz.traces import Trace


class PrefixPolicy(Enum):
    """SGLang's radix eviction keys (``--radix-eviction-policy``); the value is the kernel's code."""

    LRU = 0
    LFU = 1
    FIFO = 2
    MRU = 3
    FILO = 4
    SLRU = 5

    @property
    def label(self) -> str:
        return self.name

    @property
    def rule(self) -> str:
        return RULES[self]


RULES: dict[PrefixPolicy, str] = {
    PrefixPolicy.LRU: "evict the leaf used least recently",
    PrefixPolicy.LFU: "evict the leaf inserted through fewest times; ties: least recently used",
    PrefixPolicy.FIFO: "evict the leaf created first (a split makes a new, younger prefix node)",
    PrefixPolicy.MRU: "evict the leaf used most recently",
    PrefixPolicy.FILO: "evict the leaf created last",
    PrefixPolicy.SLRU: "evict leaves inserted through once before those seen twice; LRU within each",
}
POLICY_NAMES: tuple[str, ...] = tuple(p.name.lower() for p in PrefixPolicy)
ENGINE_LABELS = {"vllm": "vLLM"}
"""Curves of another engine drawn beside the radix policies (kvviz.vllm), by their label."""
CURVE_COLUMNS = ("policy", "capacity", "hits", "accesses", "hit_ratio")


def label(policy: str) -> str:
    """How a curve is named on a page: a radix policy in capitals (LRU), another engine by its name (vLLM)."""
    return ENGINE_LABELS.get(str(policy), str(policy).upper())


def parse_policy(name: str) -> PrefixPolicy:
    key = str(name).strip().lower()
    if key not in POLICY_NAMES:
        raise InputError(
            f"unknown prefix-cache policy '{quote(str(name).strip())}'; choose from {', '.join(POLICY_NAMES)}",
            field="policies",
        )
    return PrefixPolicy[key.upper()]


def parse_policies(names: str | Iterable[str]) -> tuple[str, ...]:
    """Policy names from ``"lru,lfu"`` or a list: validated, duplicates dropped, order kept."""
    items = names.split(",") if isinstance(names, str) else list(names)
    out: list[str] = []
    for raw in items:
        if str(raw).strip():
            name = parse_policy(raw).name.lower()
            if name not in out:
                out.append(name)
    require(bool(out), "no policy given; choose from " + ", ".join(POLICY_NAMES), field="policies")
    return tuple(out)


@dataclass(frozen=True)
class PrefixReplay:
    """A trace as prefix-tree nodes, prepared once for every policy and capacity.

    ``nodes[i]`` is access i's node (its whole prefix, numbered densely), ``parent[n]`` the node
    before it (-1 at the root) and ``depth[n]`` its block index within every request holding it.
    ``inserts[r]`` is how many times SGLang's scheduler inserts request r's prompt: 2 when it
    generates at least two tokens, else 1 (None: 2 for every request, outputs unknown).
    """

    nodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    input_lengths: np.ndarray
    block_size: int
    inserts: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def accesses(self) -> int:
        return len(self.nodes)

    @property
    def n_requests(self) -> int:
        return len(self.offsets) - 1

    @cached_property
    def insert_counts(self) -> np.ndarray:
        """Prompt inserts per request (SGLang's serving flow): 2, or 1 for a one-token output."""
        if self.inserts is None:
            return np.full(self.n_requests, 2, np.int64)
        return np.asarray(self.inserts, dtype=np.int64)

    @cached_property
    def seen_before(self) -> np.ndarray:
        """The accesses an infinite prefix cache hits: every access but its prefix's first."""
        first = np.zeros(self.accesses, dtype=bool)
        first[np.unique(self.nodes, return_index=True)[1]] = True
        return ~first


def access_depths(offsets: np.ndarray) -> np.ndarray:
    """Each access's block index within its request."""
    counts = np.diff(offsets)
    return np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], counts)


def prefix_nodes(blocks: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node per access, parent per node, depth per node): blocks re-chained on their prefix.

    Level by level, a node is the distinct pair (parent node, block id). With chained ids this is
    one node per distinct id; with per-block hashes equal ids under different prefixes differ.
    """
    depth = access_depths(offsets)
    _, dense = np.unique(blocks, return_inverse=True)
    dense = dense.astype(np.int64).reshape(-1)
    nodes = np.empty(len(blocks), np.int64)
    parents, depths, base = [], [], 0
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    width = int(dense.max(initial=0)) + 1
    for d in range(len(bounds) - 1):
        idx = order[bounds[d] : bounds[d + 1]]
        prev = nodes[idx - 1] if d > 0 else np.full(len(idx), -1, np.int64)
        uniq, first, inverse = np.unique((prev + 1) * width + dense[idx], return_index=True, return_inverse=True)
        nodes[idx] = base + inverse.reshape(-1)
        parents.append(prev[first])
        depths.append(np.full(len(uniq), d, np.int64))
        base += len(uniq)
    if not parents:
        return nodes, np.empty(0, np.int64), np.empty(0, np.int64)
    return nodes, np.concatenate(parents), np.concatenate(depths)


def prepare(trace: Trace) -> PrefixReplay:
    """Prepare a trace for prefix replay; a trace without block ids or accesses is an InputError."""
    require(
        trace.has_block_ids, "this trace has no block ids (hash_ids): prefix-cache replay needs them", field="hash_ids"
    )
    require(len(trace.blocks) > 0, "this trace has no block accesses: it is empty")
    require(len(trace.blocks) < 2**30, f"{len(trace.blocks):,} block accesses; the replay takes fewer than 2^30")
    offsets = np.asarray(trace.offsets, dtype=np.int64)
    nodes, parent, depth = prefix_nodes(np.asarray(trace.blocks), offsets)
    return PrefixReplay(
        nodes,
        parent,
        depth,
        offsets,
        trace.requests["timestamp"].to_numpy(np.int64),
        trace.requests["input_length"].to_numpy(np.int64),
        trace.block_size,
        inserts_of(trace.requests["output_length"].to_numpy(np.int64)),
    )


def inserts_of(output_lengths: np.ndarray) -> np.ndarray:
    """SGLang's prompt inserts per request: two (after prefill, at finish) when the output has at
    least two tokens; one when the request finishes at its first token."""
    return np.where(np.asarray(output_lengths) >= 2, 2, 1).astype(np.int64)


# ---- the compiled replay ------------------------------------------------------------------------
# A radix cache as the replays share it (this one and kvviz.tiers.cache's HiCache): ``tree`` holds
# one record per block (the fields below), ``keys, slots`` the indexed heap of evictable leaves and
# ``state`` the scalars the steps update. Plain arrays, not tuples of them (numba counts references
# to an array taken out of a tuple), and a field's values side by side: a request's blocks are
# numbered in a row (``by_first_use``), so a walk over a path reads a few cache lines per field.

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
    if policy == 0:
        keys[x, 0] = last
    elif policy == 1:
        keys[x, 0] = tree[HITS, x]
    elif policy == 2:
        keys[x, 0] = tree[CREATED, x]
    elif policy == 3:
        keys[x, 0] = -last
    elif policy == 4:
        keys[x, 0] = -tree[CREATED, x]
    else:
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
        below = x
        while parent[below] != deepest:
            below = parent[below]
        tree[HEAD, deepest] = tree[HEAD, x]
        tree[HEAD, x] = below
        b = deepest
        while True:
            tree[OWNER, b] = deepest
            if b == tree[HEAD, deepest]:
                break
            b = parent[b]
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


@kernel
def prefix_replay(
    nodes: np.ndarray,
    offsets: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    inserts: np.ndarray,
    capacity: int,
    policy: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Matched blocks of every request replayed through a RadixCache of ``capacity`` blocks, and
    which blocks the cache holds at the end. Request r's prompt is inserted ``inserts[r]`` times
    (1 or 2). A radix node is named by its deepest block; evictable leaves sit in an indexed heap
    keyed by the policy."""
    nodes, parent, depth, local = by_first_use(nodes, parent, depth)
    tree, keys, slots, state = new_tree(len(parent))
    matched = np.zeros(len(offsets) - 1, np.int64)
    for r in range(len(offsets) - 1):
        lo, hi = offsets[r], offsets[r + 1]
        m = match_length(tree, nodes, lo, hi)
        matched[r] = m
        deepest, want = start(tree, keys, slots, state, nodes, lo, hi, m, capacity, parent, policy)
        x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
        while x != NO_NODE:
            drop_edge(tree, parent, x)
            x = evict_leaf(tree, keys, slots, state, deepest, parent, depth, policy)
        finish(tree, keys, slots, state, nodes, lo, m, want, deepest, inserts[r], policy)
    return matched, tree[OWNER][local] != NO_NODE


def final_state(replay: PrefixReplay, policy: str, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """(matched blocks per request, cached mask per node) after replaying the whole trace."""
    return prefix_replay(
        replay.nodes,
        replay.offsets,
        replay.parent,
        replay.depth,
        replay.insert_counts,
        min(int(capacity), replay.n_nodes),
        parse_policy(policy).value,
    )


def request_hits(replay: PrefixReplay, policy: str, capacity: float | int) -> np.ndarray:
    """Matched (hit) blocks of every request for one policy and capacity (``INFINITE``: never evict)."""
    code = parse_policy(policy).value
    capacity = parse_capacity(capacity) if capacity != 0 else 0
    cap = replay.n_nodes if capacity == INFINITE else min(int(capacity), replay.n_nodes)
    return prefix_replay(replay.nodes, replay.offsets, replay.parent, replay.depth, replay.insert_counts, cap, code)[0]


def cached_tokens(replay: PrefixReplay, hits: np.ndarray) -> np.ndarray:
    """Tokens each request found cached: hit blocks × block size, at most its prompt."""
    return np.minimum(hits * replay.block_size, replay.input_lengths)


def hits_table(
    replay: PrefixReplay, policy: str, capacities: Sequence[float | int], *, workers: int | None = None
) -> np.ndarray:
    """Matched blocks per (capacity, request): one replay per capacity, on ``workers`` threads
    (default one per core; the kernel releases the GIL)."""
    return per_capacity(lambda c: request_hits(replay, policy, c), replay.n_requests, capacities, workers)


def per_capacity(
    run: Callable[[float | int], np.ndarray], n_requests: int, capacities: Sequence[float | int], workers: int | None
) -> np.ndarray:
    """``run(capacity)`` (one row of hits per request) for every capacity, on ``workers`` threads (default
    one per core, at most one per capacity): the rows of a hits table."""
    caps = list(capacities)
    out = np.zeros((len(caps), n_requests), np.int64)
    with ThreadPoolExecutor(max_workers=workers or min(max(len(caps), 1), os.cpu_count() or 1)) as pool:
        futures = {pool.submit(run, c): k for k, c in enumerate(caps)}
        for future in as_completed(futures):
            out[futures[future]] = future.result()
    return out


def curve_of_table(policy: str, capacities: Sequence[float | int], table: np.ndarray, accesses: int) -> pd.DataFrame:
    """One policy's hit curve (``policy, capacity, hits, accesses, hit_ratio``) from its hits table."""
    hits = table.sum(axis=1)
    return pd.DataFrame(
        {
            "policy": policy,
            "capacity": np.array(capacities, dtype=float),
            "hits": hits,
            "accesses": accesses,
            "hit_ratio": hits / accesses,
        }
    )


def sweep(
    source: Trace | PrefixReplay,
    policies: Iterable[str],
    capacities: Iterable[float | int],
    *,
    progress: Callable[[float], None] | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """Prefix hits for every (policy, capacity): columns ``policy, capacity, hits, accesses, hit_ratio``.

    ``progress(fraction_done)`` is called after each policy.
    """
    replay = source if isinstance(source, PrefixReplay) else prepare(source)
    names = parse_policies(policies)
    caps = parse_capacities(capacities)
    parts = []
    for done, name in enumerate(names, start=1):
        parts.append(curve_of_table(name, caps, hits_table(replay, name, caps, workers=workers), replay.accesses))
        if progress is not None:
            progress(done / len(names))
    return pd.concat(parts, ignore_index=True)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the replay kernel on a tiny trace."""
    nodes = np.array([0, 1, 0, 2], dtype=np.int64)
    prefix_replay(
        nodes,
        np.array([0, 2, 4], dtype=np.int64),
        np.array([-1, 0, 0], dtype=np.int64),
        np.array([0, 1, 1], dtype=np.int64),
        np.array([2, 1], dtype=np.int64),
        2,
        0,
    )


REPLAY_ACCESSES_PER_S = 12e6
"""Block accesses one core replays per CPU second (bench_prefix_cache: 292k accesses × 60 runs in ~1.15 s)."""


def cost(replay: PrefixReplay, runs: int) -> budget.Cost:
    """The work of ``runs`` replays (policies × capacities) of this trace, before it starts."""
    return budget.cost(
        "prefix-cache replay",
        replay.accesses * runs,
        "block accesses",
        REPLAY_ACCESSES_PER_S,
        "the number of policies or points on the curve",
    )
