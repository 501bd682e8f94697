"""vLLM's prefix caching (v1): a block pool with chained block hashes and one free queue, replayed over a trace.

vLLM does not keep a tree. Every full block of a request has a hash that covers its own tokens and
its parent's hash (``vllm/v1/core/kv_cache_utils.py``), so a hash names the block's whole prefix,
as a chained trace id does; ``kvviz.prefix_cache.replay.prepare`` gives exactly those prefixes
(its nodes). The pool (``vllm/v1/core/block_pool.py``, driven by ``kv_cache_manager.py``) serves a
request in four moves, which this replay follows request by request in arrival order:

1. **lookup**: walk the request's block hashes from the first; stop at the first hash no block
   holds (``find_longest_cache_hit``). A cached block after a miss is never reached.
2. **touch** the hit blocks: each gains a reference; a block nobody referenced leaves the free
   queue, so it cannot be evicted while the request runs.
3. **allocate** the rest from the *head* of the free queue (the block freed longest ago); a block
   that still held a hash drops it (``_maybe_evict_cached_block``), and the new block takes the
   request's hash. vLLM does not de-duplicate: when another block already holds that hash, both
   stay cached and a lookup takes the one cached first.
4. **free** at finish: the request's blocks go back to the *tail* of the free queue in reverse
   order, its last block first (``free_blocks(reversed(...))``), so the next allocation takes a
   request's tail before its head.

So vLLM evicts block by block, in the order blocks were freed, where SGLang's RadixCache frees a
whole radix edge (many blocks at once) chosen by a policy key. The conventions are those of the
SGLang replay beside it, so the two are comparable: every block id of the trace is a full block
(vLLM hashes only full blocks and never serves a prompt's last token from cache), requests
complete instantly (no request holds blocks while the next is served), output tokens are not
cached (a trace has no ids for them), and a prompt longer than the free pool caches only the
blocks that fit after its hit. ``capacity`` counts usable blocks (vLLM's pool also keeps one null
block, not counted).

Served one at a time, a pool never orphans a tail: a block is always freed after its children,
so it reaches the head of the queue after them. On a real server, blocks held by running
requests stay out of the queue, and a head can then be evicted while its tail stays cached,
unreachable by any lookup; ``orphans`` counts such blocks in a final state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common.jit import frozen, helper, kernel
from kvviz.eviction.grid import INFINITE, parse_capacities, parse_capacity
from kvviz.hiradix.lists import SIZE, TAIL, new_queues, pop_tail, push_head, unlink
from kvviz.prefix_cache.replay import PrefixReplay, curve_of_table, per_capacity, prepare
from kvviz.traces import Trace

POLICY = "vllm"
"""The name of vLLM's curve beside the radix policies (it has no policy to choose)."""
NONE = -1


FREE = 0
"""The pool's one free queue (index in its ``ends``)."""


@helper
def new_pool(capacity: int, n_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An empty pool of ``capacity`` blocks over ``n_nodes`` prefixes: ``(free, free_ends, held,
    holders, holder_ends)``.

    Two sets of queues of :mod:`kvviz.hiradix.lists` over blocks ``0 .. capacity-1``: the free queue
    (vLLM appends at its tail, the lists' newest end, and allocates from its head, the oldest), and
    one queue per prefix of the blocks holding it in caching order, whose oldest block is the one a
    lookup gets. ``held`` is the prefix each block holds (-1: none).
    """
    free, free_ends = new_queues(capacity, 1)
    for b in range(capacity):
        push_head(free, free_ends, FREE, b)
    held = np.full(capacity, NONE, np.int64)
    holders, holder_ends = new_queues(capacity, n_nodes)
    return free, free_ends, held, holders, holder_ends


@kernel
def pool_match(holder_ends: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    """Leading blocks of the request ``nodes[lo:hi]`` the pool holds (``find_longest_cache_hit``; nothing changes)."""
    m = 0
    while lo + m < hi and holder_ends[nodes[lo + m], SIZE] > 0:
        m += 1
    return m


@kernel
def pool_serve(
    free: np.ndarray,
    free_ends: np.ndarray,
    held: np.ndarray,
    holders: np.ndarray,
    holder_ends: np.ndarray,
    table: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
) -> int:
    """One request ``nodes[lo:hi]`` through the pool, in vLLM's four moves; returns its hit blocks.
    ``table`` is scratch room for the request's blocks (at least ``hi - lo``)."""
    capacity = len(held)
    m = pool_match(holder_ends, nodes, lo, hi)  # 1. lookup, stopping at the first prefix no block holds
    for i in range(m):  # 2. touch: a hit block leaves the free queue while the request runs
        table[i] = holder_ends[nodes[lo + i], TAIL]
        unlink(free, free_ends, table[i])
    k = min(hi - lo - m, capacity - m)
    for j in range(k):  # 3. allocate from the head, dropping the hash a block held
        b = pop_tail(free, free_ends, FREE)
        if held[b] != NONE:
            unlink(holders, holder_ends, b)
        n = nodes[lo + m + j]
        held[b] = n
        push_head(holders, holder_ends, n, b)
        table[m + j] = b
    for i in range(m + k - 1, -1, -1):  # 4. free at finish, the last block first
        push_head(free, free_ends, FREE, table[i])
    return m


@kernel
def pool_replay(nodes: np.ndarray, offsets: np.ndarray, n_nodes: int, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Hit blocks of every request through a vLLM block pool of ``capacity`` blocks, served one by one
    (:func:`pool_serve`), and the final ``held`` array (the prefix each block holds, -1: none)."""
    free, free_ends, held, holders, holder_ends = new_pool(capacity, n_nodes)
    table = np.empty(max(longest_request(offsets), 1), np.int64)
    hits = np.zeros(len(offsets) - 1, np.int64)
    for r in range(len(offsets) - 1):
        hits[r] = pool_serve(free, free_ends, held, holders, holder_ends, table, nodes, offsets[r], offsets[r + 1])
    return hits, held


@helper
def longest_request(offsets: np.ndarray) -> int:
    longest = 0
    for r in range(len(offsets) - 1):
        longest = max(longest, offsets[r + 1] - offsets[r])
    return longest


class BlockPool:
    """One vLLM block pool of ``capacity`` blocks (``INFINITE``: never evict), served request by request:
    the steps of :func:`pool_replay`, so a pool fed a sub-trace hits exactly what the replay of that sub-trace hits.
    ``nodes[offsets[r]:offsets[r + 1]]`` are request r's prefixes, numbered below ``n_nodes``."""

    def __init__(self, nodes: np.ndarray, offsets: np.ndarray, n_nodes: int, capacity: float | int):
        self.nodes, self.offsets = frozen(nodes, np.int64), frozen(offsets, np.int64)  # the kernels' one kind
        blocks = pool_blocks(int(n_nodes), capacity)
        self.free, self.free_ends, self.held, self.holders, self.holder_ends = new_pool(blocks, int(n_nodes))
        self.table = np.empty(max(int(longest_request(self.offsets)), 1), np.int64)

    def match(self, r: int) -> int:
        """Leading blocks of request ``r`` cached here now (nothing changes)."""
        return int(pool_match(self.holder_ends, self.nodes, self.offsets[r], self.offsets[r + 1]))

    def serve(self, r: int) -> int:
        """Serve request ``r``: its hit blocks; its blocks are cached afterwards (room permitting)."""
        state = (self.free, self.free_ends, self.held, self.holders, self.holder_ends, self.table)
        return int(pool_serve(*state, self.nodes, self.offsets[r], self.offsets[r + 1]))

    @property
    def used(self) -> int:
        """Blocks holding a prefix."""
        return int((self.held != NONE).sum())


def pool_blocks(n_nodes: int, capacity: float | int) -> int:
    """The blocks a pool of ``capacity`` (``INFINITE``: never evict) needs over ``n_nodes`` prefixes (one each)."""
    capacity = parse_capacity(capacity) if capacity != 0 else 0
    return n_nodes if capacity == INFINITE else min(int(capacity), n_nodes)


def _capacity(replay: PrefixReplay, capacity: float | int) -> int:
    return pool_blocks(replay.n_nodes, capacity)


def request_hits(replay: PrefixReplay, capacity: float | int) -> np.ndarray:
    """Hit blocks of every request through a pool of ``capacity`` blocks (``INFINITE``: never evict)."""
    return pool_replay(replay.nodes, replay.offsets, replay.n_nodes, _capacity(replay, capacity))[0]


@dataclass(frozen=True)
class PoolState:
    """A pool after the whole trace: each request's hits, the prefixes a lookup reaches, the orphans."""

    hits: np.ndarray
    cached: np.ndarray  # per prefix node: some block holds it
    orphans: int  # cached blocks whose parent prefix no block holds (no lookup reaches them)


def final_state(replay: PrefixReplay, capacity: float | int) -> PoolState:
    hits, held = pool_replay(replay.nodes, replay.offsets, replay.n_nodes, _capacity(replay, capacity))
    cached = np.zeros(replay.n_nodes, dtype=bool)
    cached[held[held >= 0]] = True
    parents = replay.parent[held[held >= 0]]
    orphans = int(((parents >= 0) & ~cached[np.maximum(parents, 0)]).sum())
    return PoolState(hits, cached, orphans)


def hits_table(replay: PrefixReplay, capacities: Sequence[float | int], *, workers: int | None = None) -> np.ndarray:
    """Hit blocks per (capacity, request): one replay per capacity, on ``workers`` threads (default
    one per core; the kernel releases the GIL)."""
    return per_capacity(lambda c: request_hits(replay, c), replay.n_requests, capacities, workers)


def sweep(
    source: Trace | PrefixReplay,
    capacities: Iterable[float | int],
    *,
    progress: Callable[[float], None] | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """vLLM's hit curve: columns ``policy`` (``vllm``), ``capacity, hits, accesses, hit_ratio``."""
    replay = source if isinstance(source, PrefixReplay) else prepare(source)
    caps = parse_capacities(capacities)
    curve = curve_of_table(POLICY, caps, hits_table(replay, caps, workers=workers), replay.accesses)
    if progress is not None:
        progress(1.0)
    return curve


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the pool kernel on a tiny trace."""
    pool_replay(frozen([0, 1, 0, 2], np.int64), frozen([0, 2, 4], np.int64), 3, 2)
