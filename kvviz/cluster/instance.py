"""One serving instance's own radix cache, served request by request.

This is the only module of the cluster that touches the compiled radix engine: each instance keeps
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

from kvviz.common.errors import InputError, quote
from kvviz.common.jit import kernel
from kvviz.hiradix.tree import USED, by_first_use, match_length, new_tree, serve
from kvviz.prefix_cache.replay import PrefixReplay, parse_policy

ENGINES: tuple[str, ...] = ("sglang", "vllm-lmcache")
"""The serving stacks an instance runs: SGLang's radix cache (here), or vLLM's block pool with LMCache
behind it (:class:`kvviz.lmcache.StackInstance`)."""


def parse_engine(name: str) -> str:
    key = str(name).strip().lower()
    if key not in ENGINES:
        raise InputError(
            f"unknown engine '{quote(str(name).strip())}'; choose from {', '.join(ENGINES)}", field="engine"
        )
    return key


@dataclass(frozen=True)
class Nodes:
    """A trace's requests as prefix nodes, numbered once for every instance: ``nodes[offsets[r]:offsets[r + 1]]``
    are request r's blocks, ``parent``/``depth`` the tree they form, ``inserts[r]`` how often SGLang
    inserts r's prompt (2, or 1 for a one-token output)."""

    nodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    offsets: np.ndarray
    inserts: np.ndarray

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
    lo: int,
    hi: int,
    inserts: int,
    capacity: int,
    policy: int,
) -> int:
    """One request through the cache (the body of the prefix replay's loop); returns its matched blocks."""
    return serve(tree, keys, slots, state, nodes, lo, hi, capacity, parent, depth, inserts, policy)


@kernel
def _match(tree: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    return match_length(tree, nodes, lo, hi)


class InstanceCache:
    """One instance's GPU radix cache of ``capacity`` blocks, evicting by ``policy`` (SGLang's keys)."""

    def __init__(self, shape: Nodes, capacity: int, policy: str = "lru"):
        self.shape = shape
        self.capacity = min(int(capacity), shape.n_nodes)
        self.policy = parse_policy(policy).value
        self.tree, self.keys, self.slots, self.state = new_tree(shape.n_nodes)

    def match(self, r: int) -> int:
        """Leading blocks of request ``r`` cached here now (nothing changes)."""
        s = self.shape
        return int(_match(self.tree, s.nodes, s.offsets[r], s.offsets[r + 1]))

    def serve(self, r: int) -> int:
        """Serve request ``r`` here: its matched blocks; its prompt is cached afterwards (room permitting)."""
        s = self.shape
        lo, hi = s.offsets[r], s.offsets[r + 1]
        args = (s.nodes, s.parent, s.depth, lo, hi, s.inserts[r], self.capacity, self.policy)
        return int(_serve(self.tree, self.keys, self.slots, self.state, *args))

    @property
    def used(self) -> int:
        """Blocks cached."""
        return int(self.state[USED])
