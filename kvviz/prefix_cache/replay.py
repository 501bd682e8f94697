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

The trace's blocks are re-chained on their prefix here (:func:`prepare`: node = distinct prefix,
so per-block hashes work too); the tree that caches them is the compiled engine
:mod:`kvviz.hiradix.tree`, which the tiered replay and per-instance caches share. The replay is
one compiled loop over it; the tests check it hit for hit against
``kvviz.radix.radix_cache.RadixCache``.
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
from kvviz.common.jit import frozen, kernel
from kvviz.eviction.grid import INFINITE, parse_capacities, parse_capacity
from kvviz.hiradix import keys
from kvviz.hiradix.ids import dense_block_ids
from kvviz.hiradix.tree import NO_NODE, OWNER, by_first_use, new_tree, serve
from kvviz.traces import Trace


class PrefixPolicy(Enum):
    """SGLang's radix eviction keys (``--radix-eviction-policy``); the value is the compiled tree's code."""

    LRU = keys.LRU
    LFU = keys.LFU
    FIFO = keys.FIFO
    MRU = keys.MRU
    FILO = keys.FILO
    SLRU = keys.SLRU

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
    generates at least two tokens, else 1 (None: 2 for every request, outputs unknown). Whatever made
    them, the arrays are kept as read-only int64 (``kvviz.common.jit.frozen``): numba compiles a kernel
    once per kind of array, and the replay's kernel compiles for a long time.
    """

    nodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    input_lengths: np.ndarray
    block_size: int
    inserts: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("nodes", "parent", "depth", "offsets", "inserts"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, frozen(getattr(self, name), np.int64))

    def __setstate__(self, state: dict) -> None:
        """Unpickled (a process pool's or Ray's worker), numpy's arrays come back writable: freeze them
        again, or the worker compiles every kernel afresh for the writable kind."""
        self.__dict__.update(state)
        self.__post_init__()

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
        return frozen(np.full(self.n_requests, 2, np.int64)) if self.inserts is None else self.inserts

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


def prefix_nodes(ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node per access, parent per node, depth per node): blocks re-chained on their prefix.

    Level by level, a node is the distinct pair (parent node, block id). With chained ids this is
    one node per distinct id; with per-block hashes equal ids under different prefixes differ.
    ``ids`` are small non-negative block ids, as :func:`dense_block_ids` numbers them.
    """
    depth = access_depths(offsets)
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    nodes = np.empty(len(ids), np.int64)
    parents, depths, base = [], [], 0
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    width = int(ids.max(initial=0)) + 1
    for d in range(len(bounds) - 1):
        idx = order[bounds[d] : bounds[d + 1]]
        prev = nodes[idx - 1] if d > 0 else np.full(len(idx), -1, np.int64)
        uniq, first, inverse = np.unique((prev + 1) * width + ids[idx], return_index=True, return_inverse=True)
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
    nodes, parent, depth = prefix_nodes(dense_block_ids(trace), offsets)
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
    (1 or 2); the steps are :func:`kvviz.hiradix.tree.serve`'s."""
    nodes, parent, depth, local = by_first_use(nodes, parent, depth)
    tree, heap, slots, state = new_tree(len(parent))
    matched = np.zeros(len(offsets) - 1, np.int64)
    for r in range(len(offsets) - 1):
        matched[r] = serve(
            tree, heap, slots, state, nodes, offsets[r], offsets[r + 1], capacity, parent, depth, inserts[r], policy
        )
    return matched, tree[OWNER][local] != NO_NODE


def final_state(replay: PrefixReplay, policy: str, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """(matched blocks per request, cached mask per node) after replaying the whole trace."""
    return _replayed(replay, min(int(capacity), replay.n_nodes), parse_policy(policy).value)


def request_hits(replay: PrefixReplay, policy: str, capacity: float | int) -> np.ndarray:
    """Matched (hit) blocks of every request for one policy and capacity (``INFINITE``: never evict)."""
    code = parse_policy(policy).value
    capacity = parse_capacity(capacity) if capacity != 0 else 0
    cap = replay.n_nodes if capacity == INFINITE else min(int(capacity), replay.n_nodes)
    return _replayed(replay, cap, code)[0]


def _replayed(replay: PrefixReplay, capacity: int, code: int) -> tuple[np.ndarray, np.ndarray]:
    arrays = (replay.nodes, replay.offsets, replay.parent, replay.depth, replay.insert_counts)
    return prefix_replay(*arrays, capacity, code)


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
    arrays = ([0, 1, 0, 2], [0, 2, 4], [-1, 0, 0], [0, 1, 1], [2, 1])
    prefix_replay(*(frozen(a, np.int64) for a in arrays), 2, 0)


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
