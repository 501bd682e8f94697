"""SGLang 0.5.23's HiCache in plain Python, node by node: the reference the compiled tiered replay is
checked against.

Each rule is read in the release (``mem_cache/unified_radix_cache.py``,
``mem_cache/unified_cache/unified_tree_core.py``, ``.../components/full.py``,
``managers/cache_controller.py``, ``mem_cache/hybrid_cache/hybrid_cache_controller.py``,
``managers/scheduler.py``) and named where it is used. One tree holds both tiers: a node has a GPU
copy, a host copy or both; a node the GPU evicts stays while it has a host copy. Requests complete
instantly and write acknowledgements arrive at once, as in the compiled replay. Storage is the
compiled replay's own model (the release's file backend never evicts): blocks, a capacity, leaf
blocks evicted by the policy's key on the blocks' use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class Node:
    blocks: list[int]
    parent: Node | None
    children: dict[int, Node] = field(default_factory=dict)
    dev: bool = False
    host: bool = False
    last: float = 0.0
    created: float = 0.0
    hits: int = 0
    lock: int = 0
    host_lock: int = 0


class Storage:
    """Storage by block (pages keyed by their prefix hash): leaf blocks evicted smallest key first, the key
    read from the blocks' use (last reader, readers, writer); a node's blocks join the candidates once all
    of them are written."""

    def __init__(self, policy: str, capacity: int, parent: np.ndarray, depth: np.ndarray):
        self.policy, self.capacity, self.parent, self.depth = policy, capacity, parent, depth
        self.held: set[int] = set()
        self.born: dict[int, int] = {}
        self.seen: dict[int, int] = {}
        self.freq: dict[int, int] = {}
        self.writes = self.evictions = self.batch = 0

    def read(self, b: int, r: int) -> None:
        self.seen[b] = r
        self.freq[b] = self.freq.get(b, 0) + 1

    def key(self, b: int) -> tuple:
        seen, freq, born = self.seen[b], self.freq[b], self.born[b]
        first = {"lru": seen, "lfu": freq, "fifo": born, "mru": -seen, "filo": -born, "slru": int(freq >= 2)}
        return first[self.policy], seen, -int(self.depth[b])

    def write(self, blocks: list[int]) -> None:
        """A node's blocks, top down; each write numbered (FIFO's key), the ones of this write not evictable
        until it ends."""
        self.batch += 1
        for b in blocks:
            if b in self.held or self.capacity == 0:
                continue
            if len(self.held) >= self.capacity:
                parents = {int(self.parent[x]) for x in self.held}
                leaves = [x for x in self.held if x not in parents and self.born[x] != self.batch]
                if not leaves:
                    continue
                self.held.remove(min(leaves, key=self.key))
                self.evictions += 1
            self.held.add(b)
            self.born[b] = self.batch
            self.writes += 1

    def run(self, path: list[int], start: int) -> int:
        """``_storage_hit_query``: the pages found in a row from ``start``."""
        n = 0
        while start + n < len(path) and path[start + n] in self.held:
            n += 1
        return n


class HiCache:
    """One request at a time through GPU (``gpu`` blocks), host (``host``) and storage (``storage``)."""

    def __init__(self, prepared, policy: str, gpu: int, host: int, storage: int, write_policy: str, floors=(1, 1)):
        self.policy, self.gpu, self.host_cap = policy, gpu, host
        self.write_back = write_policy == "write_back"
        self.threshold = 1 if write_policy == "write_through" else 2
        self.prefetch_floor, self.load_floor = floors
        self.storage = Storage(policy, storage, prepared.parent, prepared.depth)
        self.root = Node([], None, dev=True)
        self.clock = 0.0
        self.dev_used = self.host_used = 0
        self.dups: dict[int, Node] = {}
        self.host_writes = self.host_evictions = self.failures = 0

    # ---- time, keys, leaves ----
    def tick(self) -> float:
        """``get_and_increase_time_counter``."""
        t = self.clock
        self.clock += 1.0
        return t

    def key(self, x: Node) -> tuple:
        """``evict_policy.py``'s priority, then the node (``__lt__``: last access)."""
        first = {
            "lru": x.last,
            "lfu": (x.hits, x.last),
            "fifo": x.created,
            "mru": -x.last,
            "filo": -x.created,
            "slru": (int(x.hits >= 2), x.last),
        }[self.policy]
        return first, x.last

    def nodes(self) -> list[Node]:
        out, stack = [], list(self.root.children.values())
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(x.children.values())
        return out

    def device_leaf(self, x: Node) -> bool:
        """``_is_device_leaf``."""
        return x.dev and x.lock == 0 and not any(c.dev for c in x.children.values())

    def host_leaf(self, x: Node) -> bool:
        """``_is_host_leaf``."""
        return not x.dev and x.host and x.lock == 0 and x.host_lock == 0 and not x.children

    def track(self, x: Node) -> None:
        """``_update_duplicate_tracking`` (write-back only reclaims, so only it tracks)."""
        if not self.write_back:
            return
        if x is not self.root and x.dev and x.host:
            self.dups.setdefault(id(x), x)
        else:
            self.dups.pop(id(x), None)

    def remove(self, x: Node) -> None:
        """``_remove_leaf_from_parent``."""
        del x.parent.children[x.blocks[0]]
        self.dups.pop(id(x), None)

    # ---- the tree ----
    def split(self, child: Node, k: int) -> Node:
        """``_split_node``: the prefix is a new node (the suffix keeps its identity); it inherits the
        hit count and creation time; the suffix is stamped."""
        new = Node(child.blocks[:k], child.parent)
        new.last, new.created = self.tick(), self.tick()
        new.created, new.hits = child.created, child.hits
        new.dev, new.host, new.lock, new.host_lock = child.dev, child.host, child.lock, 0
        child.parent.children[new.blocks[0]] = new
        child.blocks = child.blocks[k:]
        child.parent = new
        new.children = {child.blocks[0]: child}
        child.last = self.tick()
        self.track(new)
        return new

    def match(self, path: list[int]) -> tuple[Node, int, int]:
        """``_match_prefix_helper`` and ``_match_post_processor``: the deepest node matched, the blocks on
        the GPU, the blocks matched; the walk stamps the deepest node and every ancestor."""
        node, i = self.root, 0
        while i < len(path) and path[i] in node.children:
            child = node.children[path[i]]
            k = 0
            while k < len(child.blocks) and i + k < len(path) and child.blocks[k] == path[i + k]:
                k += 1
            i += k
            if k < len(child.blocks):
                node = self.split(child, k)
                break
            node = child
        t = self.tick()
        x = node
        while x is not None:
            x.last = t
            t -= 0.00001
            x = x.parent
        d = 0
        for c in self.path_nodes(node):
            if not c.dev:
                break
            d += len(c.blocks)
        return node, d, i

    def path_nodes(self, node: Node) -> list[Node]:
        out = []
        while node is not self.root:
            out.append(node)
            node = node.parent
        return out[::-1]

    # ---- host memory ----
    def evict_host(self, num: int) -> int:
        """``drive_host_eviction``: under write-back, duplicates first (``_reclaim_full_host_duplicates``);
        then whole host leaves in key order until ``num`` blocks are free."""
        freed = 0
        if self.write_back:
            for spare in (True, False):
                for x in list(self.dups.values()):
                    if freed >= num:
                        break
                    if not (x.dev and x.host):
                        self.dups.pop(id(x), None)
                        continue
                    if spare and self.device_leaf(x):
                        continue
                    if x.host_lock:
                        continue
                    x.host = False
                    self.host_used -= len(x.blocks)
                    self.host_evictions += len(x.blocks)
                    freed += len(x.blocks)
                    self.dups.pop(id(x), None)
        while freed < num:
            leaves = [x for x in self.nodes() if self.host_leaf(x)]
            if not leaves:
                break
            x = min(leaves, key=self.key)
            self.remove(x)
            self.host_used -= len(x.blocks)
            self.host_evictions += len(x.blocks)
            freed += len(x.blocks)
        return freed

    def backup(self, x: Node) -> bool:
        """``_execute_kv_backup``: room for the node (evicting the host's shortfall), its copy, then
        ``write_backup_storage``; the acknowledgement tracks it as a duplicate."""
        need = len(x.blocks)
        free = self.host_cap - self.host_used
        if free < need and self.evict_host(need - free) < need - free:
            self.failures += 1
            return False
        x.host = True
        self.host_used += need
        self.host_writes += need
        self.storage.write(x.blocks)
        self.track(x)
        return True

    def backup_chain(self, x: Node) -> None:
        """``_build_backup_kv_action`` (write-through): the node and its unbacked ancestors, top down,
        stopping at the first that fails."""
        chain = []
        while x is not self.root and not x.host:
            chain.append(x)
            x = x.parent
        for y in reversed(chain):
            if not self.backup(y):
                return

    # ---- the GPU ----
    def evict_device(self, num: int) -> None:
        """``_evict_components`` over ``evict_device_next_node``: device leaves in key order, a parent
        pushed when it becomes one; each leaf demoted (host copy), backed up alone then demoted
        (write-back), dropped with its host-only subtree when that fails, or deleted."""
        freed = 0
        declined: set[int] = set()
        while freed < num:
            leaves = [x for x in self.nodes() if self.device_leaf(x) and id(x) not in declined]
            if not leaves:
                return
            x = min(leaves, key=self.key)
            n = len(x.blocks)
            if not x.host and self.write_back and not self.backup(x):
                if self.locked_below(x):
                    declined.add(id(x))
                    continue
                for y in self.subtree(x):
                    self.host_used -= len(y.blocks)
                    self.host_evictions += len(y.blocks)
                    self.remove(y)
                x.dev = False
                self.remove(x)
            elif x.host:
                x.dev = False
            else:
                x.dev = False
                self.remove(x)
            self.dev_used -= n
            freed += n

    def subtree(self, x: Node) -> list[Node]:
        out, stack = [], list(x.children.values())
        while stack:
            y = stack.pop()
            out.append(y)
            stack.extend(y.children.values())
        return out

    def locked_below(self, x: Node) -> bool:
        """``drop_subtree_no_host`` declines when the node or a descendant is locked."""
        return any(y.lock or y.host_lock for y in [x, *self.subtree(x)])

    # ---- storage to host ----
    def allocate_storage_hit(self, hit: int) -> int:
        """``allocate_storage_hit``: the whole hit, after evicting the hit's size from the host if it does
        not fit; else what is free, when at least the prefetch floor."""
        if self.host_cap - self.host_used < hit:
            self.evict_host(hit)
        free = self.host_cap - self.host_used
        if free >= hit:
            return hit
        return free if free >= self.prefetch_floor else 0

    def insert_host(self, anchor: Node, blocks: list[int]) -> Node:
        """``insert_host``: the prefetched pages become a host-only node under the anchor."""
        anchor.last = self.tick()
        new = Node(blocks, anchor, host=True)
        new.last, new.created = self.tick(), self.tick()
        anchor.children[blocks[0]] = new
        self.host_used += len(blocks)
        return new

    # ---- a request ----
    def insert(self, path: list[int]) -> None:
        """``begin_insert`` … ``_insert_tail_step``, the request's first insert: each node walked is
        stamped, split where the prompt ends inside it, put back on the GPU if it was not there, and
        counted (write-back counts nothing); the rest becomes a new leaf; a node whose count reaches the
        threshold without a host copy is backed up with its unbacked ancestors."""
        self.tick()
        node, i = self.root, 0
        while i < len(path) and path[i] in node.children:
            child = node.children[path[i]]
            child.last = self.tick()
            k = 0
            while k < len(child.blocks) and i + k < len(path) and child.blocks[k] == path[i + k]:
                k += 1
            if k < len(child.blocks):
                child = self.split(child, k)
            if not child.dev:
                child.dev = True
                self.dev_used += len(child.blocks)
                self.track(child)
            self.count(child)
            node, i = child, i + k
        if i < len(path):
            new = Node(path[i:], node, dev=True)
            new.last, new.created = self.tick(), self.tick()
            node.children[path[i]] = new
            self.dev_used += len(new.blocks)
            self.count(new)

    def count(self, x: Node) -> None:
        """``_inc_hit_count_and_check``."""
        if self.write_back:
            return
        x.hits += 1
        if x.hits >= self.threshold and not x.host:
            self.backup_chain(x)

    def lock(self, node: Node, delta: int) -> list[Node]:
        nodes = self.path_nodes(node)
        for x in nodes:
            x.lock += delta
        return nodes

    def serve(self, path: list[int], r: int) -> tuple[int, int, int]:
        """One request: (blocks on the GPU, on the host, from storage)."""
        for b in path:
            self.storage.read(b, r)
        best, d, m = self.match(path)
        stored = 0
        # Scheduler._prefetch_kvcache: only past a host copy or at the root; prefetch_from_storage's floor
        if self.storage.capacity and (best is self.root or best.host) and len(path) - m >= self.prefetch_floor:
            hit = self.storage.run(path, m)
            if hit >= self.prefetch_floor:
                best.host_lock += 1
                stored = self.allocate_storage_hit(hit)
                best.host_lock -= 1
                if stored:
                    best = self.insert_host(best, path[m : m + stored])
        held = self.lock(best, 1)
        h = m + stored - d
        loaded = d
        if h > 0 and h >= self.load_floor:  # load_back
            free = self.gpu - self.dev_used
            if free < h:
                self.evict_device(h - free)
            if self.gpu - self.dev_used >= h:
                for x in reversed(held):
                    if not x.dev:
                        x.dev = True
                        self.dev_used += len(x.blocks)
                        self.track(x)
                loaded = m + stored
        want = min(len(path) - loaded, self.gpu - loaded)
        free = self.gpu - self.dev_used
        if want > free:
            self.evict_device(want - free)
        self.insert(path[: loaded + want])
        self.lock(best, -1)
        return d, m - d, stored


def reference(prepared, policy: str, caps, write_policy: str, floors=(1, 1)):
    """Per request: blocks found on the GPU, on the host and in storage; and the tier counters."""
    cache = HiCache(prepared, policy, caps.gpu, caps.dram, caps.storage, write_policy, floors)
    nodes, offsets = prepared.nodes, prepared.offsets
    out = [cache.serve([int(b) for b in nodes[lo:hi]], r) for r, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:]))]
    stats = {
        "l2_writes": cache.host_writes,
        "l3_writes": cache.storage.writes,
        "l2_evictions": cache.host_evictions,
        "l3_evictions": cache.storage.evictions,
        "l2_write_failures": cache.failures,
    }
    return [o[0] for o in out], [o[1] for o in out], [o[2] for o in out], stats
