"""One HiCache instance served request by request, and the storage tier it writes to: its own, or one
pool for the cluster.

:class:`TieredInstance` is :class:`kvviz.prefix_cache.instance.InstanceCache` with SGLang 0.5.23's
host memory under the GPU: each request goes through :func:`kvviz.tiers.cache.serve`, the step the
whole-trace replay (:func:`kvviz.tiers.cache.tiered_replay`) runs in its loop, so an instance fed a
sub-trace finds exactly what the tiered replay of that sub-trace finds. Like ``InstanceCache`` it
numbers the blocks it has seen in the order it first sees them, its arrays growing with them.

:class:`Storage` is HiCache's storage backend (``mem_cache/hicache_storage.py``, ``HiCacheStorage``).
Its keys are the pages' prefix hashes (``get_hash_str``), the same on every instance, so a backend
every instance reaches is one pool: Mooncake Store (``storage/mooncake_store/mooncake_store.py``,
``MooncakeStore.batch_set_v1`` puts what a host write backs up, ``batch_exists`` answers the
prefetch's query for every instance alike) or 3FS. One :class:`Storage` handed to every instance is
that pool: an instance's host writes go on to it and any instance prefetches from it. A
:class:`Storage` per instance is the file backend on the instance's own disk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.common.jit import kernel
from kvviz.hiradix.tree import NO_NODE, OWNER
from kvviz.prefix_cache.instance import Nodes, localize
from kvviz.prefix_cache.replay import parse_policy
from kvviz.tiers.cache import DEV, DEV_USED, FLAGS, HOST_USED, NAME, STATS, USED, new_state, new_tier, serve, tier_stats
from kvviz.tiers.config import WRITE_POLICIES


class Storage:
    """A storage tier of ``capacity`` blocks over a trace's blocks (0: none), evicting by ``policy``."""

    def __init__(self, shape: Nodes, capacity: int):
        self.rec, self.heap, self.st = new_tier(shape.parent, shape.depth, min(int(capacity), shape.n_nodes))

    @property
    def used(self) -> int:
        return int(self.st[USED])


@dataclass(frozen=True)
class Found:
    """Blocks of one request found on the GPU, on the host and in storage."""

    gpu: int
    host: int
    storage: int


@kernel
def gpu_prefix(tree: np.ndarray, local: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    """Leading blocks of ``nodes[lo:hi]`` (the trace's numbering) held with a GPU copy."""
    m = 0
    while lo + m < hi:
        x = local[nodes[lo + m]]
        if x == NO_NODE or tree[OWNER, x] == NO_NODE or (tree[FLAGS, tree[OWNER, x]] & DEV) == 0:
            break
        m += 1
    return m


class TieredInstance:
    """One instance's HiCache: ``capacity`` GPU blocks and ``host_capacity`` host blocks, evicting by
    ``policy``, backing up by ``write_policy``, over ``storage`` (its own or shared; none: no storage);
    ``floors`` are the prefetch and load-back floors in blocks (:func:`kvviz.tiers.replay.floors`)."""

    def __init__(
        self,
        shape: Nodes,
        capacity: int,
        host_capacity: int,
        floors: tuple[int, int],
        policy: str = "lru",
        write_policy: str = "write_through",
        storage: Storage | None = None,
    ):
        self.shape = shape
        n = shape.n_nodes
        self.config = (min(int(capacity), n), min(int(host_capacity), n), parse_policy(policy).value)
        self.write = WRITE_POLICIES.index(write_policy)
        self.floors = floors
        self.storage = storage if storage is not None else Storage(shape, 0)
        self.local = np.full(n, NO_NODE, np.int32)
        self.count = self.room = 0
        self.state = new_state(0, *self.config, self.write)
        self.parent = self.depth = self.passed = np.empty(0, np.int64)
        longest = max(int(np.diff(shape.offsets).max(initial=0)), 1)
        self.request = np.empty(longest, np.int64)
        self.blocks, self.chain = np.empty(longest + 1, np.int64), np.empty(longest + 1, np.int64)

    def grow(self, need: int) -> None:
        """Room for ``need`` blocks: every array twice as long (at most the trace's blocks), contents kept."""
        if need <= self.room:
            return
        room = min(max(need, 2 * self.room, 1024), self.shape.n_nodes)
        n = self.room
        fresh = new_state(room, *self.config, self.write)
        tree, dk, ds, hk, hs, links, ends, st = self.state
        fresh[0][:, :n], fresh[1][:n], fresh[2][:n], fresh[3][:n], fresh[4][:n], fresh[5][:n] = (
            tree,
            dk,
            ds[:n],
            hk,
            hs[:n],
            links,
        )
        fresh[6][:], fresh[7][:] = ends, st
        parent, depth = np.empty(room, np.int64), np.empty(room, np.int64)
        parent[:n], depth[:n] = self.parent, self.depth
        self.state, self.parent, self.depth = fresh, parent, depth
        self.passed = np.empty(room, np.int64)
        self.room = room

    def match(self, r: int) -> int:
        """Leading blocks of request ``r`` held on the GPU now (nothing changes): what a router reading
        the instance's GPU tree sees."""
        s = self.shape
        return int(gpu_prefix(self.state[0], self.local, s.nodes, s.offsets[r], s.offsets[r + 1]))

    def serve(self, r: int) -> Found:
        """Serve request ``r`` here: the blocks it found on each tier; its prompt is cached afterwards."""
        s = self.shape
        lo, hi = int(s.offsets[r]), int(s.offsets[r + 1])
        self.grow(self.count + hi - lo)
        args = (s.nodes, lo, hi, self.parent, self.depth, self.request, self.count)
        self.count = int(localize(self.local, s.parent, s.depth, *args))
        store = self.storage
        if store.rec.shape[1]:  # its blocks' numbers in storage, the trace's
            self.state[0][NAME, self.request[: hi - lo]] = s.nodes[lo:hi]
        g, h, k = serve(
            *self.state,
            self.parent,
            self.depth,
            self.passed,
            self.request,
            0,
            hi - lo,
            r,
            store.rec,
            store.heap,
            store.st,
            self.blocks,
            self.chain,
            *self.floors,
        )
        return Found(int(g), int(h), int(k))

    @property
    def used(self) -> int:
        """Blocks held on the GPU."""
        return int(self.state[7][DEV_USED])

    @property
    def host_used(self) -> int:
        """Blocks held in host memory."""
        return int(self.state[7][HOST_USED])

    def stats(self) -> dict[str, int]:
        """The tier counters (``STATS``): this instance's host tier and its storage (shared: the pool's)."""
        return dict(zip(STATS, map(int, tier_stats(self.state[7], self.storage.st))))
