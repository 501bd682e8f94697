"""Strata's in-flight nodes on SGLang's radix tree (Xie et al., arXiv 2508.18572, §4.3.1; spec §4.2).

When a request is admitted, the part of its prompt the tree does not hold is hung in the tree as
a temporary **in-flight** node: a span being computed. It has no KV (no device or host value), is
never evicted, is not counted in any size, and a match reports the tokens it runs over on it as
``MatchResult.in_flight_len`` — what Strata's deferral rule (``kvviz.radix.scheduler``) reads to spot
a *delay hit*. When the request's prompt is inserted the span becomes an ordinary node
(**materialised**); when every request computing it is done, what is left of it goes.

SGLang has none of this, so it lives in its own module beside the trees: ``InFlightTree`` fills
the hooks ``kvviz.radix.radix_cache.RadixCache`` leaves (a split copies the span's state, an insert
materialises it, a match measures it) and adds the operations; ``StrataRadixCache`` and
``StrataHiRadixCache`` are SGLang's two trees with it. The in-flight nodes are also kept aside
by id, so releasing or clearing them never walks the whole tree.
"""

from __future__ import annotations

from typing import Any

from kvviz.radix.events import EventKind
from kvviz.radix.hiradix_cache import HiRadixCache
from kvviz.radix.radix_cache import Key, RadixCache, Time, TreeNode


class StrataNode(TreeNode):
    """A tree node that may be a span in flight: ``owners`` compute it, ``waiting`` are deferred on it."""

    __slots__ = ("in_flight", "owners", "waiting")

    def __init__(self, node_id: int, key: Key = (), extra_key: str | None = None, time: Time = (0, 0)):
        super().__init__(node_id, key, extra_key, time)
        self.in_flight = False
        self.owners: set[str] = set()
        self.waiting = 0

    @property
    def state(self) -> str:
        """ "in-flight" (being computed), else SGLang's "D", "H" or "D+H"."""
        return "in-flight" if self.in_flight else super().state


class InFlightTree:
    """Strata's in-flight spans, mixed in before ``RadixCache`` or ``HiRadixCache``."""

    node_class = StrataNode

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._in_flight: dict[int, StrataNode] = {}  # by id, oldest first

    # ---- the hooks of kvviz.radix.radix_cache.RadixCache ----------------------------------------------------
    def _split_off(self, new: StrataNode, child: StrataNode) -> None:
        new.in_flight, new.owners, new.waiting = child.in_flight, set(child.owners), child.waiting
        if new.in_flight:
            self._in_flight[new.id] = new

    def _materialised(self, node: StrataNode, values: tuple[int, ...]) -> bool:
        """A span whose KV has now been computed becomes an ordinary device node."""
        if not node.in_flight:
            return False
        node.in_flight, node.owners, node.waiting = False, set(), 0
        del self._in_flight[node.id]
        node.value = values
        self._add_device(node, len(values))
        self._emit(EventKind.MATERIALISE, node, len(values))
        return True

    def _in_flight_run(self, deepest: StrataNode) -> tuple[TreeNode, int]:
        node, run = deepest, 0
        while node.in_flight:
            run += len(node.key)
            node = node.parent
        return node, run

    def _delete(self, node: StrataNode) -> TreeNode:
        self._in_flight.pop(node.id, None)
        return super()._delete(node)

    # ---- Strata's operations --------------------------------------------------------------------
    @property
    def n_in_flight(self) -> int:
        """How many in-flight nodes the tree holds."""
        return len(self._in_flight)

    def insert_in_flight(self, key: Any, owner: str, extra_key: str | None = None) -> int:
        """Mark the part of ``key`` that is not in the tree as being computed by ``owner``.

        Walks the existing path (existing in-flight spans gain the owner) and hangs one
        temporary node for the rest; returns its length.
        """
        tokens, extra = self._norm(key, extra_key)
        node, i = self.root, 0
        for child, i, n in self._descend(tokens, extra):
            if child.in_flight:
                child.owners.add(owner)
            node, i = child, i + n
        if i < len(tokens):
            leaf = self._add_leaf(node, tokens[i:], None, extra)
            leaf.in_flight, leaf.owners = True, {owner}
            self._in_flight[leaf.id] = leaf
        return len(tokens) - i

    def release_in_flight(self, owner: str) -> None:
        """``owner`` is done (finished or aborted): in-flight spans nobody computes any more go."""
        for node in self._in_flight.values():
            node.owners.discard(owner)
        done = [n for n in self._in_flight.values() if not n.owners and not n.children]
        for node in sorted(done, key=lambda n: (-self.depth(n), n.id)):
            while node is not self.root and node.in_flight and not node.owners and not node.children:
                node = self._delete(node)

    def clear_waiting(self) -> None:
        """A new round: nobody is deferred on any span yet."""
        for node in self._in_flight.values():
            node.waiting = 0


class StrataRadixCache(InFlightTree, RadixCache):
    """SGLang's RadixCache with Strata's in-flight spans."""


class StrataHiRadixCache(InFlightTree, HiRadixCache):
    """SGLang's HiRadixCache with Strata's in-flight spans."""
