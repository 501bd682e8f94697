"""SGLang's RadixCache: the device-only prefix tree of RadixAttention.

Follows the SGLang paper (Zheng et al., arXiv 2312.07104, §3 "RadixAttention") as implemented in
``python/sglang/srt/mem_cache/radix_cache.py`` and ``evict_policy.py`` (sgl-project/sglang):

- edges hold tokens, a match that ends mid-edge **splits** it (the new node is the prefix, the old
  node keeps its id and becomes the suffix), and a match never changes ``hit_count``;
- ``insert`` returns how many tokens were already cached; the first copy of a value wins;
- with ``page_size`` P > 1 matches advance in whole pages and child keys are whole pages;
- ``inc_lock_ref``/``dec_lock_ref`` walk up to (not including) the root; only 0↔1 moves sizes;
- ``evict`` frees whole unlocked leaves in the policy's order and cascades to parents that became
  leaves, only while more tokens are still needed.

Every operation records what it did in ``events`` (``kvviz.radix.events``: a match and its length,
each split, each evicted leaf, an eviction that fell short and why), tagged with ``actor`` (the
request it runs for, set by the scheduler); ``take_events`` hands them over and clears the log.

Modelling conventions (spec §5): a logical clock ``(k, s)`` — every public operation increments
``k``; nodes touched by it get ``(k, 0)`` and nodes it creates get ``(k, s)`` with ``s`` rising —
and ties between equal policy keys fall to the older access, then the lower node id.

Strata's temporary **in-flight** nodes (spec §4.2) are not SGLang's: they live in
``kvviz.radix.inflight``, a subclass beside Strata's deferral rule, which fills the hooks left here
(``_materialised``, ``_in_flight_run``, ``_split_off``). An SGLang node is never in flight.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kvviz.common.errors import InputError, quote, require
from kvviz.radix.events import Event, EventKind

Time = tuple[int, int]
Key = tuple[int, ...]

POLICIES: tuple[str, ...] = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru")
HIT_COUNT_RULES: tuple[str, ...] = ("upstream", "legacy")
MAX_TOKEN = 2**62


def _neg(t: Time) -> Time:
    return (-t[0], -t[1])


# evict_policy.py: the smallest key is evicted first.
STRATEGY: dict[str, Callable[[TreeNode], Any]] = {
    "lru": lambda n: n.last_access_time,
    "lfu": lambda n: (n.hit_count, n.last_access_time),
    "fifo": lambda n: n.creation_time,
    "mru": lambda n: _neg(n.last_access_time),
    "filo": lambda n: _neg(n.creation_time),
    "priority": lambda n: (n.priority, n.last_access_time),
    "slru": lambda n: (1 if n.hit_count >= 2 else 0, n.last_access_time),
}


class TreeNode:
    """One node of the tree: ``key`` is the token run on the edge into it (SGLang's TreeNode)."""

    __slots__ = (
        "id",
        "key",
        "value",
        "host_value",
        "children",
        "parent",
        "lock_ref",
        "last_access_time",
        "creation_time",
        "hit_count",
        "priority",
        "extra_key",
    )
    # Strata's fields (kvviz.radix.inflight.StrataNode has them as slots): an SGLang node never has them.
    in_flight = False
    owners: frozenset[str] = frozenset()
    waiting = 0

    def __init__(self, node_id: int, key: Key = (), extra_key: str | None = None, time: Time = (0, 0)):
        self.id = node_id
        self.key: Key = key
        self.value: tuple[int, ...] | None = None  # device (GPU) slots; None = evicted
        self.host_value: tuple[int, ...] | None = None  # host (CPU) slots; None = no host copy
        self.children: dict[Any, TreeNode] = {}
        self.parent: TreeNode | None = None
        self.lock_ref = 0
        self.last_access_time: Time = time
        self.creation_time: Time = time
        self.hit_count = 0
        self.priority = 0
        self.extra_key = extra_key

    @property
    def evicted(self) -> bool:
        return self.value is None

    @property
    def backuped(self) -> bool:
        return self.host_value is not None

    @property
    def state(self) -> str:
        """ "D" (device only), "H" (host only) or "D+H" (both)."""
        if self.value is not None:
            return "D+H" if self.host_value is not None else "D"
        return "H"

    def __len__(self) -> int:
        return len(self.key)

    def __repr__(self) -> str:
        return f"TreeNode(id={self.id}, key={_short(self.key)}, state={self.state}, lock={self.lock_ref})"


@dataclass(frozen=True)
class RadixKey:
    """A lookup key: the token ids and an optional namespace (LoRA id, cache salt)."""

    token_ids: Sequence[int]
    extra_key: str | None = None


@dataclass(frozen=True)
class MatchResult:
    """What ``match_prefix`` reports: the device hit, the host hit, Strata's in-flight run.

    ``last_node`` is SGLang's ``last_device_node``: the deepest matched node that holds device KV.
    ``deepest`` is the deepest matched node of any kind (it may be host-only or in flight).
    """

    device_indices: tuple[int, ...]
    last_node: TreeNode
    last_host_node: TreeNode
    host_len: int = 0
    in_flight_len: int = 0
    deepest: TreeNode | None = None

    @property
    def device_len(self) -> int:
        return len(self.device_indices)

    @property
    def last_device_node(self) -> TreeNode:
        return self.last_node


def _short(tokens: Sequence[int], n: int = 10) -> str:
    """Tokens as text, runs of consecutive ids written a..b: [1..300, 901]."""
    parts, i = [], 0
    while i < len(tokens) and len(parts) < n:
        j = i
        while j + 1 < len(tokens) and tokens[j + 1] == tokens[j] + 1:
            j += 1
        parts.append(f"{tokens[i]}..{tokens[j]}" if j - i >= 2 else str(tokens[i]))
        i = j + 1 if j - i >= 2 else i + 1
    return f"[{', '.join(parts)}{', …' if i < len(tokens) else ''}]"


def as_tokens(key: Any, what: str = "key") -> Key:
    """Validate a token sequence: integers in [0, 2^62], else InputError naming the position."""
    if type(key) is tuple and all(type(t) is int for t in key) and (not key or 0 <= min(key) <= max(key) <= MAX_TOKEN):
        return key  # already a valid key: the scheduler passes these on every insert
    if isinstance(key, (str, bytes)):
        raise InputError(f"expected a list of integer token ids, got text {key[:20]!r}", field=what)
    try:
        items = list(key)
    except TypeError:
        raise InputError(f"expected a list of integer token ids, got {type(key).__name__}", field=what) from None
    out = []
    for i, t in enumerate(items):
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise InputError(f"token {i + 1} is {t!r}, not an integer", field=what)
        require(0 <= int(t) <= MAX_TOKEN, f"token {i + 1} ({t}) is outside 0…2^62", field=what)
        out.append(int(t))
    return tuple(out)


class RadixCache:
    """SGLang's RadixCache (device only).

    ``capacity`` is the device KV pool in tokens (None = unbounded). The tree never allocates by
    itself: like SGLang's allocator, ``alloc_device`` evicts the shortfall before a request's
    KV is allocated, and ``insert`` stores values the caller already holds (fresh slot ids are
    made up when ``value`` is None).
    """

    backup_root = False  # a device-only cache reports last_host_node = last_node
    node_class = TreeNode

    def __init__(
        self,
        page_size: int = 1,
        eviction_policy: str = "lru",
        capacity: int | None = None,
        hit_count_rule: str = "upstream",
    ):
        require(
            isinstance(page_size, (int, np.integer)) and page_size >= 1,
            f"page size must be a whole number ≥ 1, got {page_size!r}",
            field="page_size",
        )
        require(
            eviction_policy in STRATEGY,
            f"unknown eviction policy '{quote(eviction_policy)}'; choose one of {', '.join(POLICIES)}",
            field="eviction_policy",
        )
        require(
            hit_count_rule in HIT_COUNT_RULES,
            f"hit_count_rule must be one of {HIT_COUNT_RULES}, got {hit_count_rule!r}",
            field="hit_count_rule",
        )
        if capacity is not None:
            require(
                capacity >= page_size,
                f"device capacity ({capacity} tokens) is smaller than one page ({page_size} tokens)",
                field="device_capacity",
            )
        self.page_size = int(page_size)
        self.eviction_policy = eviction_policy
        self.capacity = None if capacity is None else int(capacity)
        self.hit_count_rule = hit_count_rule
        self._strategy = STRATEGY[eviction_policy]
        self._k = 0
        self._s = 0
        self._next_id = 1
        self._next_slot = 0
        self.root = TreeNode(0)
        self.root.value = ()
        self.root.host_value = ()
        self.root.lock_ref = 1
        self.root.priority = -sys.maxsize
        self.evictable_size_ = 0
        self.protected_size_ = 0
        self.device_tokens = 0  # device KV held by the tree
        self.reserved = 0  # device KV held by running requests, not yet in the tree
        self.events: list[Event] = []
        self.actor = ""  # the request the next operations run for (tags their events)
        self.n_nodes = 0  # nodes in the tree, root excluded
        self._leaves: dict[int, TreeNode] = {}  # nodes without children: eviction's candidates

    # ---- the event log ----------------------------------------------------------------------
    def _emit(self, kind: EventKind, node: TreeNode, tokens: int, **detail: Any) -> None:
        detail.setdefault("key", node.key)
        self.events.append(Event(kind, node.id, tokens, who=self.actor, **detail))

    def take_events(self) -> list[Event]:
        """The events recorded since the last call, oldest first; the log is cleared."""
        out, self.events = self.events, []
        return out

    # ---- clock, ids, keys -------------------------------------------------------------------
    def _tick(self) -> None:
        self._k += 1
        self._s = 0

    def _stamp(self) -> Time:
        t = (self._k, self._s)
        self._s += 1
        return t

    @property
    def clock(self) -> int:
        """The logical clock: how many public operations have run."""
        return self._k

    def _new_node(self, key: Key, extra_key: str | None) -> TreeNode:
        node = self.node_class(self._next_id, key, extra_key, self._stamp())
        self._next_id += 1
        self.n_nodes += 1
        return node

    def _fresh_slots(self, n: int) -> tuple[int, ...]:
        start = self._next_slot
        self._next_slot += n
        return tuple(range(start, start + n))

    def _norm(self, key: Any, extra_key: str | None) -> tuple[Key, str | None]:
        if isinstance(key, RadixKey):
            return as_tokens(key.token_ids), key.extra_key
        return as_tokens(key), extra_key

    def _child_key(self, extra_key: str | None, tokens: Key) -> Any:
        first = tokens[0] if self.page_size == 1 else tuple(tokens[: self.page_size])
        return first if extra_key is None else (extra_key, first)

    def _match_len(self, a: Key, b: Key) -> int:
        n = min(len(a), len(b))
        i = 0
        while i < n and a[i] == b[i]:
            i += 1
        return i - i % self.page_size

    def page_align(self, n: int) -> int:
        """``n`` floored to a whole number of pages."""
        return n - n % self.page_size

    # ---- sizes ------------------------------------------------------------------------------
    def evictable_size(self) -> int:
        return self.evictable_size_

    def protected_size(self) -> int:
        return self.protected_size_

    def total_size(self) -> int:
        """Device tokens in the tree (evicted and in-flight nodes count 0)."""
        return self.device_tokens

    @property
    def device_free(self) -> int | None:
        if self.capacity is None:
            return None
        return self.capacity - self.device_tokens - self.reserved

    def _add_device(self, node: TreeNode, n: int) -> None:
        self.device_tokens += n
        if node.lock_ref > 0:
            self.protected_size_ += n
        else:
            self.evictable_size_ += n

    def _drop_device(self, node: TreeNode) -> int:
        n = len(node.value or ())
        self.device_tokens -= n
        if node.lock_ref > 0:
            self.protected_size_ -= n
        else:
            self.evictable_size_ -= n
        node.value = None
        return n

    # ---- walking ----------------------------------------------------------------------------
    def _split(self, child: TreeNode, n: int) -> TreeNode:
        """Split ``child`` after ``n`` tokens; the new node is the prefix, ``child`` the suffix."""
        new = self._new_node(child.key[:n], child.extra_key)
        self._emit(EventKind.SPLIT, new, n, key=child.key, at=n)
        new.value = None if child.value is None else child.value[:n]
        new.host_value = None if child.host_value is None else child.host_value[:n]
        new.lock_ref, new.priority, new.hit_count = child.lock_ref, child.priority, child.hit_count
        self._split_off(new, child)
        parent = child.parent
        assert parent is not None
        child.key = child.key[n:]
        child.value = None if child.value is None else child.value[n:]
        child.host_value = None if child.host_value is None else child.host_value[n:]
        new.parent = parent
        new.children = {self._child_key(child.extra_key, child.key): child}
        child.parent = new
        parent.children[self._child_key(new.extra_key, new.key)] = new
        return new

    def _split_off(self, new: TreeNode, child: TreeNode) -> None:
        """Hook: ``new`` was split off the front of ``child`` (a subclass copies its own state)."""

    def _materialised(self, node: TreeNode, values: tuple[int, ...]) -> bool:
        """Hook: an insert reached ``node``; True if it was waiting for these values (in flight)."""
        return False

    def _in_flight_run(self, deepest: TreeNode) -> tuple[TreeNode, int]:
        """Hook: the deepest matched node not in flight, and the in-flight tokens below it."""
        return deepest, 0

    def _descend(
        self, tokens: Key, extra_key: str | None, touch: Callable[[], Time] | None = None
    ) -> Iterator[tuple[TreeNode, int, int]]:
        """Walk the cached path of ``tokens`` from the root, splitting an edge matched only in part.

        Yields (node, offset, matched length) per node; ``touch`` stamps each node as it is reached.
        A split ends the walk: the rest of the key differs from the split-off suffix.
        """
        node, i = self.root, 0
        while i < len(tokens):
            child = node.children.get(self._child_key(extra_key, tokens[i:]))
            if child is None:
                return
            if touch is not None:
                child.last_access_time = touch()
            n = self._match_len(child.key, tokens[i:])
            if n == 0:
                return
            if n < len(child.key):
                child = self._split(child, n)
            yield child, i, n
            node, i = child, i + n

    def _walk_clock(self) -> Callable[[], Time]:
        """RadixCache stamps a whole walk, root included, with one time (SGLang captures it once)."""
        t = self._stamp()
        self.root.last_access_time = t
        return lambda: t

    def _result(self, path: list[TreeNode]) -> MatchResult:
        deepest = path[-1] if path else self.root
        node, in_flight = self._in_flight_run(deepest)
        host_len, dev = 0, node
        while dev.value is None:
            host_len += len(dev.host_value or ())
            dev = dev.parent
        host_node = node
        if self.backup_root:
            while host_node.host_value is None:
                host_node = host_node.parent
        else:
            host_node = dev
        indices = tuple(t for n in path if n.value is not None for t in n.value)
        return MatchResult(indices, dev, host_node, host_len, in_flight, deepest)

    def _empty_result(self) -> MatchResult:
        return MatchResult((), self.root, self.root, 0, 0, self.root)

    # ---- the public API ---------------------------------------------------------------------
    def match_prefix(self, key: Any, extra_key: str | None = None) -> MatchResult:
        """The longest cached prefix of ``key`` (page-floored); may split an edge, never counts hits."""
        tokens, extra = self._norm(key, extra_key)
        self._tick()
        tokens = tokens[: self.page_align(len(tokens))]
        result = (
            self._empty_result()
            if not tokens
            else self._result([node for node, _, _ in self._descend(tokens, extra, self._walk_clock())])
        )
        self._emit(
            EventKind.MATCH,
            result.last_node,
            result.device_len,
            key=tokens,
            of=len(tokens),
            host=result.host_len,
            in_flight=result.in_flight_len,
        )
        return result

    def _counts(self, chunked: bool) -> bool:
        return self.hit_count_rule == "upstream" and not chunked

    def _values(self, tokens: Key, value: Any) -> tuple[int, ...]:
        if value is None:
            return self._fresh_slots(len(tokens))
        value = as_tokens(value, "value")
        require(len(value) == len(tokens), f"{len(value)} values for {len(tokens)} tokens", field="value")
        return value

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
        """Insert ``key`` (with its KV slots ``value``); returns the number of tokens already cached.

        ``inserted_len`` is how much of ``key`` the same request inserted before (SGLang 0.5.23's
        ``req.kv.cache_inserted_len``): a node whose end lies within it is not counted again, so a
        request counts each node once (``_insert_helper``)."""
        tokens, extra = self._norm(key, extra_key)
        values = self._values(tokens, value)
        self._tick()
        touch = self._walk_clock()
        self.root.priority = max(self.root.priority, priority)
        if not tokens:
            return 0
        count = self._counts(chunked)
        node, i, total = self.root, 0, 0
        for child, i, n in self._descend(tokens, extra, touch):
            if not self._materialised(child, values[i : i + n]):
                total += n
            child.priority = max(child.priority, priority)
            child.hit_count += count and i + n > inserted_len
            node, i = child, i + n
        if i < len(tokens):
            node = self._add_leaf(node, tokens[i:], values[i:], extra)
            node.priority = priority
            node.hit_count = int(count and len(tokens) > inserted_len)
        self._inserted(node, total, len(tokens), i < len(tokens))
        return total

    def _inserted(self, node: TreeNode, cached: int, length: int, new_leaf: bool) -> None:
        self._emit(EventKind.INSERT, node, cached, key=node.key if new_leaf else (), of=length)

    def _add_leaf(
        self, parent: TreeNode, tokens: Key, values: tuple[int, ...] | None, extra_key: str | None
    ) -> TreeNode:
        leaf = self._new_node(tokens, extra_key)
        leaf.parent = parent
        parent.children[self._child_key(extra_key, tokens)] = leaf
        self._leaves.pop(parent.id, None)
        self._leaves[leaf.id] = leaf
        if values is not None:
            leaf.value = values
            self._add_device(leaf, len(values))
        return leaf

    def inc_lock_ref(self, node: TreeNode) -> int:
        """Protect ``node`` and its ancestors from eviction; returns the change in evictable size."""
        delta = 0
        while node is not self.root:
            if node.lock_ref == 0:
                n = len(node.key) if node.value is not None else 0
                self.evictable_size_ -= n
                self.protected_size_ += n
                delta -= n
            node.lock_ref += 1
            node = node.parent
        return delta

    def dec_lock_ref(self, node: TreeNode) -> int:
        """Release one lock on ``node`` and its ancestors; unlocking an unlocked node is an error."""
        walk = node
        while walk is not self.root:
            if walk.lock_ref <= 0:
                raise InputError(f"node {walk.id} {_short(walk.key)} holds no lock to release", field="unlock")
            walk = walk.parent
        delta = 0
        while node is not self.root:
            if node.lock_ref == 1:
                n = len(node.key) if node.value is not None else 0
                self.evictable_size_ += n
                self.protected_size_ -= n
                delta += n
            node.lock_ref -= 1
            node = node.parent
        return delta

    def _heap_entry(self, node: TreeNode) -> tuple:
        return (self._strategy(node), node.last_access_time, node.id, node)

    def _evictable_leaves(self) -> list[TreeNode]:
        return [n for n in self._leaves.values() if n.value is not None and n.lock_ref == 0]

    def evict(self, num_tokens: int) -> int:
        """Free at least ``num_tokens`` device tokens (whole leaves, policy order); returns the freed count."""
        require(num_tokens >= 0, f"cannot evict a negative number of tokens ({num_tokens})", field="evict")
        self._tick()
        heap = [self._heap_entry(n) for n in self._evictable_leaves()]
        heapq.heapify(heap)
        freed, cascaded = 0, set()
        while freed < num_tokens and heap:
            node = heapq.heappop(heap)[-1]
            self._emit(EventKind.EVICT, node, len(node.key), cascade=node.id in cascaded, parent=node.parent.id)
            freed += self._drop_device(node)
            parent = self._delete(node)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, self._heap_entry(parent))
                cascaded.add(parent.id)
        self._fell_short(num_tokens, freed)
        return freed

    def _fell_short(self, asked: int, freed: int) -> None:
        """Record why an eviction freed less than it was asked for: what is left is locked, or nothing is."""
        if freed >= asked:
            return
        locked = sum(1 for n in self._gpu_leaves() if n.lock_ref > 0)
        if not locked:
            reason = "nothing is left on the GPU to evict" if freed else "the tree holds no GPU KV to evict"
        elif freed:
            held = "a running request or a pending copy holds it"
            reason = f"the {locked} remaining leaf{'s are' if locked > 1 else ' is'} locked ({held})"
        else:
            reason = "every leaf is locked (a running request or a pending copy holds it)"
        self._emit(EventKind.EVICT_SHORT, self.root, freed, key=(), of=asked, reason=reason)

    def _gpu_leaves(self) -> list[TreeNode]:
        """The leaves that hold GPU KV, locked or not (the candidates an eviction could ever take)."""
        return [n for n in self._leaves.values() if n.value is not None and not n.in_flight]

    def _delete(self, node: TreeNode) -> TreeNode:
        parent = node.parent
        del parent.children[self._child_key(node.extra_key, node.key)]
        node.parent = None
        self.n_nodes -= 1
        self._leaves.pop(node.id, None)
        if not parent.children and parent is not self.root:
            self._leaves[parent.id] = parent
        return parent

    # ---- the allocator's side (SGLang's token_to_kv_pool_allocator) --------------------------
    def alloc_device(self, n: int) -> bool:
        """Reserve ``n`` device slots for a running request, evicting only the shortfall."""
        free = self.device_free
        if free is not None and free < n:
            self.evict(n - free)
            free = self.device_free
        if free is not None and free < n:
            return False
        self.reserved += n
        return True

    def release_device(self, n: int) -> None:
        """A running request gives back its reserved slots (the tree kept what it stored)."""
        self.reserved -= n

    # ---- views ------------------------------------------------------------------------------
    def leaves(self) -> Iterator[TreeNode]:
        """Every node without children (kept up to date, so eviction never walks the whole tree)."""
        return iter(self._leaves.values())

    def nodes(self) -> Iterator[TreeNode]:
        """Every node except the root, depth first, children in insertion order."""
        stack = list(reversed(self.root.children.values()))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children.values()))

    def depth(self, node: TreeNode) -> int:
        d = 0
        while node is not self.root and node is not None:
            node, d = node.parent, d + 1
        return d

    def node_frame(self, vocab: dict[int, str] | None = None) -> pd.DataFrame:
        """A tidy frame, one row per node (root first): id, parent, depth, tokens, length, state,
        hit count, last access (clock), creation, lock, priority, namespace, Strata owners/waiting."""
        rows = [_row(self.root, -1, 0, "root", vocab)]
        depth = {self.root.id: 0}
        for node in self.nodes():
            depth[node.id] = depth[node.parent.id] + 1
            rows.append(_row(node, node.parent.id, depth[node.id], node.state, vocab))
        return pd.DataFrame(rows, columns=FRAME_COLUMNS)

    def pretty_print(self, vocab: dict[int, str] | None = None) -> str:
        """SGLang-style text dump: one indented line per node, its length, state and first tokens, then
        its lock count, hit count and last use (the clock), each named in words for a reader."""
        lines = [
            f"root  device={self.total_size()} evictable={self.evictable_size()} protected={self.protected_size()}"
        ]

        def walk(node: TreeNode, indent: int) -> None:
            for child in node.children.values():
                lines.append(
                    f"{'  ' * indent}{len(child.key)} {child.state} {_text(child.key, vocab)}  locks {child.lock_ref}, "
                    f"hits {child.hit_count}, last used at time {child.last_access_time[0]}"
                )
                walk(child, indent + 1)

        walk(self.root, 1)
        return "\n".join(lines)


FRAME_COLUMNS = [
    "id",
    "parent",
    "depth",
    "tokens",
    "length",
    "state",
    "hit_count",
    "last_access",
    "created",
    "lock_ref",
    "priority",
    "extra_key",
    "owners",
    "waiting",
]


def _text(tokens: Sequence[int], vocab: dict[int, str] | None, n: int = 10) -> str:
    if vocab:
        words = [vocab.get(t, str(t)) for t in tokens[:n]]
        return " ".join(words) + (" …" if len(tokens) > n else "")
    return _short(tokens, n)


def _row(node: TreeNode, parent: int, depth: int, state: str, vocab: dict[int, str] | None) -> list:
    return [
        node.id,
        parent,
        depth,
        _text(node.key, vocab),
        len(node.key),
        state,
        node.hit_count,
        node.last_access_time[0],
        node.creation_time[0],
        node.lock_ref,
        node.priority,
        node.extra_key or "",
        ",".join(sorted(node.owners)),
        node.waiting,
    ]
