"""SGLang's HiRadixCache (HiCache): the radix tree over GPU (L1) and host (L2) memory.

Follows ``python/sglang/srt/mem_cache/hiradix_cache.py`` and the HiCache design doc
(``docs/advanced_features/hicache_design.md``), both in the sgl-project/sglang repository, as they
were before release 0.5.23 moved HiCache into ``mem_cache/unified_radix_cache.py``; hit counts
follow 0.5.23 (a request counts each node once, ``inserted_len``):

- a node is **D** (device only), **D+H** (both) or **H** (host only, ``value`` None);
- write policies: ``write_through`` backs a node up when its ``hit_count`` reaches 1,
  ``write_through_selective`` at 2 (legacy 3), ``write_back`` only when it is evicted;
  a backup sets ``host_value`` at once and locks the node until the write is acknowledged, and
  (outside write_back) happens only under a parent that has a host copy, so host copies are
  prefix-closed (invariant I4) and a deleted device-only node never strands host copies below it;
- ``insert`` stamps each visited node separately, counts hits only on device-resident nodes it
  walks through (never on match), and an H node on the path **adopts** the recomputed KV;
- ``evict`` turns unlocked device leaves D+H → H, deletes D-only ones (write-through policies)
  or writes them back first (write_back); ``evict_host`` deletes H leaves only, cascading up;
- ``init_load_back`` reloads a whole H chain (all or nothing), skipped under 10 tokens.

Transfers stay pending until ``ack()`` (SGLang's ``check_hicache_events`` in the next scheduler
step; spec §5). Strata's in-flight nodes (spec §4.2) are added by
``kvviz.radix.inflight.StrataHiRadixCache``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from kvviz.common.errors import quote, require
from kvviz.radix.events import EventKind
from kvviz.radix.radix_cache import RadixCache, Time, TreeNode

WRITE_POLICIES: tuple[str, ...] = ("write_through", "write_through_selective", "write_back")
LOAD_BACK_THRESHOLD = 10


class HiRadixCache(RadixCache):
    """SGLang's HiRadixCache: ``device_capacity`` and ``host_capacity`` are in tokens."""

    backup_root = True  # the root counts as backed up

    def __init__(
        self,
        device_capacity: int,
        host_capacity: int,
        write_policy: str = "write_through",
        page_size: int = 1,
        eviction_policy: str = "lru",
        *,
        selective_threshold: int = 2,
        load_back_threshold: int = LOAD_BACK_THRESHOLD,
        hit_count_rule: str = "upstream",
    ):
        require(
            write_policy in WRITE_POLICIES,
            f"unknown write policy '{quote(write_policy)}'; choose one of {', '.join(WRITE_POLICIES)}",
            field="write_policy",
        )
        require(device_capacity is not None, "HiRadixCache needs a device capacity", field="device_capacity")
        super().__init__(page_size, eviction_policy, device_capacity, hit_count_rule)
        require(
            host_capacity >= self.page_size,
            f"host capacity ({host_capacity} tokens) is smaller than one page ({self.page_size} tokens)",
            field="host_capacity",
        )
        require(
            selective_threshold >= 1, "the selective write-through threshold must be ≥ 1", field="selective_threshold"
        )
        require(load_back_threshold >= 0, "the load-back threshold cannot be negative", field="load_back_threshold")
        self.host_capacity = int(host_capacity)
        self.write_policy = write_policy
        self.write_through_threshold = {
            "write_through": 1,
            "write_through_selective": selective_threshold,
            "write_back": 0,
        }[write_policy]
        self.load_back_threshold = load_back_threshold
        self.host_tokens = 0
        self._next_host_slot = 0
        self.ongoing_write_through: dict[int, TreeNode] = {}
        self.ongoing_load_back: dict[int, TreeNode] = {}

    @property
    def host_free(self) -> int:
        return self.host_capacity - self.host_tokens

    # ---- backup -------------------------------------------------------------------------------
    def write_backup(self, node: TreeNode, write_back: bool = False) -> int:
        """Give ``node`` a host copy (evicting host leaves once if full); returns tokens written.

        Outside write-back, a node whose parent has no host copy is not backed up (SGLang's backup
        invariant): host copies stay prefix-closed, so a device-only node never has host-only
        children, and deleting it at eviction never cuts a host copy off from the root.
        """
        if not write_back and node.parent is not self.root and not node.parent.backuped:
            return 0
        n = len(node.key)
        if self.host_free < n:
            self.evict_host(n)
        if self.host_free < n:
            self._emit(EventKind.BACKUP_FAILED, node, n)
            return 0
        node.host_value = tuple(range(self._next_host_slot, self._next_host_slot + n))
        self._next_host_slot += n
        self.host_tokens += n
        self.ongoing_write_through[node.id] = node
        if not write_back:
            self.inc_lock_ref(node)
        self._emit(EventKind.BACKUP, node, n)
        return n

    def _inc_hit_count(self, node: TreeNode, chunked: bool, counted: bool = True) -> None:
        if self.write_policy == "write_back" or not self._counts(chunked) or not counted:
            return
        node.hit_count += 1
        if not node.backuped and node.hit_count >= self.write_through_threshold:
            self.write_backup(node)

    def ack(self) -> int:
        """Acknowledge every finished host write and load: their locks are released."""
        self._tick()
        done = 0
        for node in self.ongoing_write_through.values():
            if self.write_policy != "write_back" and node.lock_ref > 0:
                self.dec_lock_ref(node)
            done += 1
        for node in self.ongoing_load_back.values():
            self.dec_lock_ref(node)
            done += 1
        self.ongoing_write_through.clear()
        self.ongoing_load_back.clear()
        return done

    @property
    def pending_transfers(self) -> int:
        return len(self.ongoing_write_through) + len(self.ongoing_load_back)

    # ---- match and insert ----------------------------------------------------------------------
    def _walk_clock(self) -> Callable[[], Time]:
        """HiRadixCache stamps each node of a walk separately (deeper nodes are later); not the root."""
        return self._stamp

    def insert(
        self,
        key: Any,
        value: Any = None,
        *,
        extra_key: str | None = None,
        priority: int = 0,
        chunked: bool = False,
        inserted_len: int = 0,
    ) -> int:
        """Insert ``key``; returns the device-resident part that was already cached. A node ending
        within ``inserted_len`` (what the request inserted before) is not counted again."""
        tokens, extra = self._norm(key, extra_key)
        values = self._values(tokens, value)
        self._tick()
        if not tokens:
            return 0
        node, i, total = self.root, 0, 0
        for child, i, n in self._descend(tokens, extra, self._stamp):
            child.priority = max(child.priority, priority)
            if self._materialised(child, values[i : i + n]):
                self._inc_hit_count(child, chunked, i + n > inserted_len)
            elif child.evicted:
                child.value = values[i : i + n]
                self._add_device(child, n)
                self._emit(EventKind.ADOPT, child, n)
            else:
                total += n
                self._inc_hit_count(child, chunked, i + n > inserted_len)
            node, i = child, i + n
        if i < len(tokens):
            node = self._add_leaf(node, tokens[i:], values[i:], extra)
            node.priority = priority
            self._inc_hit_count(node, chunked, len(tokens) > inserted_len)
        self._inserted(node, total, len(tokens), i < len(tokens))
        return total

    # ---- eviction ----------------------------------------------------------------------------------
    def _device_leaf(self, node: TreeNode, pending: set[int] = frozenset()) -> bool:
        return (
            node.value is not None
            and not node.in_flight
            and node is not self.root
            and all((c.evicted and not c.in_flight) or c.id in pending for c in node.children.values())
        )

    def _device_leaves(self) -> list[TreeNode]:
        """Every node ``_device_leaf`` accepts, found by walking only the nodes that hold device KV
        (device residency is prefix-closed), so the host-only part of the tree is never visited."""
        out, stack = [], [c for c in self.root.children.values() if c.value is not None]
        while stack:
            node = stack.pop()
            below = [c for c in node.children.values() if c.value is not None or c.in_flight]
            if not below:
                out.append(node)
            stack.extend(c for c in below if c.value is not None)
        return out

    def evict(self, num_tokens: int) -> int:
        """Free device KV: D+H → H, D → deleted (write-through) or written back to H (write_back)."""
        require(num_tokens >= 0, f"cannot evict a negative number of tokens ({num_tokens})", field="evict")
        self._tick()
        heap = [self._heap_entry(n) for n in self._device_leaves()]
        heapq.heapify(heap)
        freed, write_back, pending, cascaded = 0, [], set(), set()
        while freed < num_tokens and heap:
            x = heapq.heappop(heap)[-1]
            if x.lock_ref > 0 or x.value is None:
                continue
            n, parent, cascade = len(x.key), x.parent, x.id in cascaded
            if x.backuped:
                self._drop_device(x)
                self._emit(EventKind.TO_HOST, x, n, cascade=cascade)
            elif self.write_policy == "write_back" and self.write_backup(x, write_back=True):
                write_back.append(x)
                pending.add(x.id)
            elif x.children:
                continue  # its write-back failed and its children's copies hang from it: it stays
            else:
                self._emit(EventKind.EVICT, x, n, cascade=cascade, parent=parent.id)
                self._drop_device(x)
                self._delete(x)
            freed += n
            if parent is not self.root and self._device_leaf(parent, pending):
                heapq.heappush(heap, self._heap_entry(parent))
                cascaded.add(parent.id)
        for x in write_back:  # the write-back copies are awaited, then the device copies dropped
            self.ongoing_write_through.pop(x.id, None)
            self._drop_device(x)
            self._emit(EventKind.WRITE_BACK, x, len(x.key))
        self._fell_short(num_tokens, freed)
        return freed

    def _gpu_leaves(self) -> list[TreeNode]:
        return self._device_leaves()

    def evict_host(self, num_tokens: int) -> int:
        """Free host KV by deleting unlocked host-only leaves (policy order), cascading through H parents."""
        require(num_tokens >= 0, f"cannot evict a negative number of tokens ({num_tokens})", field="evict_host")
        self._tick()
        heap = [self._heap_entry(n) for n in self.leaves() if n.evicted and not n.in_flight]
        heapq.heapify(heap)
        freed = 0
        while freed < num_tokens and heap:
            x = heapq.heappop(heap)[-1]
            if x.lock_ref > 0:  # a chain being loaded back keeps its host copy (SGLang protects it)
                continue
            n = len(x.host_value or ())
            self.host_tokens -= n
            freed += n
            x.host_value = None
            self._emit(EventKind.EVICT_HOST, x, n, parent=x.parent.id)
            parent = self._delete(x)
            if parent is not self.root and not parent.children and parent.evicted and not parent.in_flight:
                heapq.heappush(heap, self._heap_entry(parent))
        return freed

    # ---- load-back ---------------------------------------------------------------------------------
    def init_load_back(self, node: TreeNode) -> tuple[int, TreeNode]:
        """Load the host-only chain ending at ``node`` back to the device, all or nothing.

        Returns (tokens loaded, node): on success the deepest loaded node (locked until ``ack``);
        when the chain is under the threshold or the device is full, 0 and the first device
        ancestor — the caller recomputes those tokens.
        """
        self._tick()
        if not node.evicted or node is self.root:
            return 0, node
        chain, ancestor = [], node
        while ancestor.evicted:
            chain.append(ancestor)
            ancestor = ancestor.parent
        chain.reverse()
        length = sum(len(n.key) for n in chain)
        if length < self.load_back_threshold:
            self._emit(EventKind.LOAD_SKIPPED, node, length)
            return 0, ancestor
        self.inc_lock_ref(node)  # the chain too: a write-back eviction may evict host leaves meanwhile
        if self.device_free < length:
            self.evict(length)
        self.dec_lock_ref(node)
        if self.device_free < length:
            self._emit(EventKind.LOAD_FAILED, node, length)
            return 0, ancestor
        for n in chain:
            n.value = self._fresh_slots(len(n.key))
            self._add_device(n, len(n.key))
            self._emit(EventKind.LOAD_BACK, n, len(n.key))
        self.inc_lock_ref(node)
        self.ongoing_load_back[node.id] = node
        return length, node
