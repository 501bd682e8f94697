"""One serving instance's own radix cache, served request by request.

The cluster's routers and Mooncake's Conductor keep one per instance (the only place either touches
the compiled radix engine): each instance keeps
SGLang's RadixCache (``python/sglang/srt/mem_cache/radix_cache.py``: ``match_prefix``, ``evict``,
``insert``, ``inc_lock_ref``/``dec_lock_ref``) over the trace's prefix nodes, and a router asks it
two things: how many leading blocks of a request it holds (:meth:`InstanceCache.match`, which
changes nothing), and to serve a request (:meth:`InstanceCache.serve`: match and lock, evict the
shortfall, insert the prompt as the scheduler does after prefill and at finish, unlock). The steps
are the engine's (:func:`kvviz.hiradix.tree.serve`, which the prefix replay runs), one request at a
time, so an instance fed a sub-trace hits exactly what the prefix replay of that sub-trace hits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.common.jit import frozen, kernel
from kvviz.hiradix.tree import NO_NODE, OWNER, USED, by_first_use, new_tree, serve
from kvviz.prefix_cache.replay import PrefixReplay, inserts_of, parse_policy, prefix_nodes


@dataclass(frozen=True)
class Nodes:
    """A trace's requests as prefix nodes, numbered once for every instance: ``nodes[offsets[r]:offsets[r + 1]]``
    are request r's blocks, ``parent``/``depth`` the tree they form, ``inserts[r]`` how often SGLang
    inserts r's prompt (2, or 1 for a one-token output). The arrays are kept read-only int64, the kind the
    kernels are compiled for (``kvviz.common.jit.frozen``)."""

    nodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    offsets: np.ndarray
    inserts: np.ndarray

    def __post_init__(self) -> None:
        for name in ("nodes", "parent", "depth", "offsets", "inserts"):
            object.__setattr__(self, name, frozen(getattr(self, name), np.int64))

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    def blocks(self, r: int) -> np.ndarray:
        return self.nodes[self.offsets[r] : self.offsets[r + 1]]


def numbered(replay: PrefixReplay) -> Nodes:
    """The replay's nodes renumbered in first-use order (a request's blocks side by side)."""
    nodes, parent, depth, _ = by_first_use(replay.nodes, replay.parent, replay.depth)
    return Nodes(nodes, parent, depth, replay.offsets, replay.insert_counts)


@kernel
def _serve(
    tree: np.ndarray,
    keys: np.ndarray,
    slots: np.ndarray,
    state: np.ndarray,
    nodes: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    hi: int,
    inserts: int,
    capacity: int,
    policy: int,
) -> int:
    """One request through the cache (the body of the prefix replay's loop); returns its matched blocks."""
    return serve(tree, keys, slots, state, nodes, 0, hi, capacity, parent, depth, inserts, policy)


@kernel
def _match(tree: np.ndarray, local: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    """Leading blocks of ``nodes[lo:hi]`` (the trace's numbering) cached; a block never seen here is not."""
    m = 0
    while lo + m < hi:
        x = local[nodes[lo + m]]
        if x == NO_NODE or tree[OWNER, x] == NO_NODE:
            break
        m += 1
    return m


@kernel
def localize(
    local: np.ndarray,
    shape_parent: np.ndarray,
    shape_depth: np.ndarray,
    nodes: np.ndarray,
    lo: int,
    hi: int,
    parent: np.ndarray,
    depth: np.ndarray,
    out: np.ndarray,
    count: int,
) -> int:
    """Request ``nodes[lo:hi]`` in the instance's numbering (into ``out``); a block new here gets the next
    number, with its parent (seen before it: it is the request's previous block) and depth. Returns the count."""
    for k in range(hi - lo):
        g = nodes[lo + k]
        x = local[g]
        if x == NO_NODE:
            x = count
            count += 1
            local[g] = x
            p = shape_parent[g]
            parent[x] = NO_NODE if p == NO_NODE else local[p]
            depth[x] = shape_depth[g]
        out[k] = x
    return count


class InstanceCache:
    """One instance's GPU radix cache of ``capacity`` blocks, evicting by ``policy`` (SGLang's keys).

    The cache numbers the blocks it has seen in the order it first sees them (``local``: the trace's
    number to its own), and its arrays grow with them, so an instance that meets an eighth of a trace
    takes about an eighth of the memory of one cache over all of it; a replay's result does not depend
    on the numbering (:func:`kvviz.hiradix.tree.by_first_use`)."""

    def __init__(self, shape: Nodes, capacity: int, policy: str = "lru"):
        self.shape = shape
        self.capacity = min(int(capacity), shape.n_nodes)
        self.policy = parse_policy(policy).value
        self.local = np.full(shape.n_nodes, NO_NODE, np.int32)
        self.count = 0
        self.room = 0
        self.tree, self.keys, self.slots, self.state = new_tree(0)
        self.parent = self.depth = np.empty(0, np.int64)
        self.request = np.empty(max(int(np.diff(shape.offsets).max(initial=0)), 1), np.int64)

    def grow(self, need: int) -> None:
        """Room for ``need`` blocks: every array twice as long (at most the trace's blocks), contents kept."""
        if need <= self.room:
            return
        room = min(max(need, 2 * self.room, 1024), self.shape.n_nodes)
        tree, keys, slots, _ = new_tree(room)
        n = self.room
        tree[:, :n], keys[:n], slots[:n] = self.tree, self.keys, self.slots[:n]
        parent, depth = np.empty(room, np.int64), np.empty(room, np.int64)
        parent[:n], depth[:n] = self.parent, self.depth
        self.tree, self.keys, self.slots, self.parent, self.depth, self.room = tree, keys, slots, parent, depth, room

    def match(self, r: int) -> int:
        """Leading blocks of request ``r`` cached here now (nothing changes)."""
        s = self.shape
        return int(_match(self.tree, self.local, s.nodes, s.offsets[r], s.offsets[r + 1]))

    def serve(self, r: int) -> int:
        """Serve request ``r`` here: its matched blocks; its prompt is cached afterwards (room permitting)."""
        s = self.shape
        lo, hi = s.offsets[r], s.offsets[r + 1]
        self.grow(self.count + int(hi - lo))
        args = (s.nodes, lo, hi, self.parent, self.depth, self.request, self.count)
        self.count = int(localize(self.local, s.parent, s.depth, *args))
        tree = (self.tree, self.keys, self.slots, self.state)
        return int(
            _serve(*tree, self.request, self.parent, self.depth, hi - lo, s.inserts[r], self.capacity, self.policy)
        )

    @property
    def used(self) -> int:
        """Blocks cached."""
        return int(self.state[USED])


def nodes_of(blocks: np.ndarray, offsets: np.ndarray, output_lengths: np.ndarray) -> Nodes:
    """Requests given by their block ids (request r's are ``blocks[offsets[r]:offsets[r + 1]]``) as prefix
    nodes, as :func:`kvviz.prefix_cache.replay.prepare` numbers a trace's."""
    offsets = np.asarray(offsets, np.int64)
    ids = np.unique(np.asarray(blocks), return_inverse=True)[1].reshape(-1)
    nodes, parent, depth, _ = by_first_use(*(frozen(a) for a in prefix_nodes(ids, offsets)))  # as ``numbered``
    return Nodes(nodes, parent, depth, offsets, inserts_of(output_lengths))


class TimedCache:
    """An instance's cache (:class:`InstanceCache`) that also knows when each block's KV exists, for
    Mooncake's Conductor: a request's blocks enter the cache when it is dispatched and exist from the
    end of its prefill (KV is causal); a block already cached keeps its time."""

    def __init__(self, shape: Nodes, capacity: int, policy: str = "lru"):
        self.cache = InstanceCache(shape, capacity, policy)
        self.ready = np.zeros(0)  # per block in the cache's numbering: when its KV exists

    def match(self, r: int) -> tuple[int, float]:
        """Leading blocks of request ``r`` cached here, and when the last of them exists."""
        m = self.cache.match(r)
        if not m:
            return 0, 0.0
        return m, float(self.ready[self.cache.local[self.cache.shape.blocks(r)[:m]]].max())

    def store(self, r: int, ready_at: float) -> None:
        """Dispatch request ``r`` here: its blocks not cached yet exist from ``ready_at``."""
        cache = self.cache
        m = cache.serve(r)
        if len(self.ready) < cache.room:
            self.ready = np.concatenate([self.ready, np.zeros(cache.room - len(self.ready))])
        self.ready[cache.local[cache.shape.blocks(r)[m:]]] = ready_at
