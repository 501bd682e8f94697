"""The worked example: why a prefix cache must evict leaves first (Tair KVCache LiteHit, README §10).

Five requests over chained blocks — [A,B,C], [A,B,D], [A,B,C], [A,E], [A,E] — through a cache of
two blocks. A block cache that touches a request's blocks head first (libCacheSim, the Eviction
page) makes the head the least recently used block of the request, so LRU evicts A, the block
every later request needs first: after a miss on A nothing else of the request can be used.
SGLang's RadixCache evicts leaves only, so the shared head outlives its private tails. LiteHit
reports 7 prefix-hit blocks for tail-first LRU against 2 for head-first at this capacity; both
numbers here are measured by this project's two kernels (``kvviz.prefix_cache`` and
``kvviz.eviction.replay``), step by step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.eviction.replay import replay_of, simulate
from kvviz.prefix_cache.replay import final_state, prepare, request_hits
from kvviz.traces import Trace, from_records

LITEHIT_SCRIPT: tuple[tuple[str, ...], ...] = (
    ("A", "B", "C"),
    ("A", "B", "D"),
    ("A", "B", "C"),
    ("A", "E"),
    ("A", "E"),
)
LITEHIT_CAPACITY = 2
LITEHIT_REPORTED = {"prefix": 7, "block": 2}
"""LiteHit README §10: cumulative prefix-hit blocks at 2 blocks, tail-first vs head-first LRU."""
BLOCK_TOKENS = 4


@dataclass(frozen=True)
class Step:
    """The two caches after ``request`` requests (0: empty), and that request's prefix hits."""

    request: int
    keys: tuple[str, ...]
    prefix_hits: int
    block_hits: int
    prefix_cached: frozenset[str]
    block_cached: frozenset[str]


BLOCK_SIDE = "Block cache, LRU head first"
PREFIX_SIDE = "Prefix cache, LRU leaves first"


@dataclass(frozen=True)
class Example:
    """A script's steps through two caches: the left one's numbers are ``block_*``, the right one's
    ``prefix_*``; ``sides`` names them (another engine can stand on the left)."""

    labels: tuple[str, ...]  # block id -> its letter
    parents: tuple[int, ...]  # block id -> the block before it (-1: none)
    capacity: int
    steps: tuple[Step, ...]
    sides: tuple[str, str] = (BLOCK_SIDE, PREFIX_SIDE)

    @property
    def prefix_total(self) -> int:
        return sum(s.prefix_hits for s in self.steps)

    @property
    def block_total(self) -> int:
        return sum(s.block_hits for s in self.steps)


def script_trace(script: tuple[tuple[str, ...], ...]) -> tuple[Trace, dict[tuple[str, ...], int]]:
    """The script as a trace whose block ids are chained: one id per distinct path."""
    ids: dict[tuple[str, ...], int] = {}
    lists = [[ids.setdefault(tuple(keys[: k + 1]), len(ids)) for k in range(len(keys))] for keys in script]
    n = len(lists)
    trace = from_records(
        np.arange(n) * 1000,
        [len(x) * BLOCK_TOKENS for x in lists],
        np.ones(n),
        lists,
        block_size=BLOCK_TOKENS,
        name="LiteHit's five requests",
    )
    return trace, ids


def labels_and_parents(ids: dict[tuple[str, ...], int]) -> tuple[dict[int, str], tuple[int, ...]]:
    """Each block id's letter (the last of its path) and the id of the block before it (-1: none)."""
    name = {i: path[-1] for path, i in ids.items()}
    return name, tuple(ids.get(path[:-1], -1) for path in sorted(ids, key=ids.get))


def prefix_contents(head: Trace, capacity: int, name: dict[int, str]) -> frozenset[str]:
    """The letters SGLang's radix LRU holds after replaying ``head``."""
    replay = prepare(head)
    _, cached = final_state(replay, "lru", capacity)
    return frozenset(name[int(b)] for b in np.unique(head.blocks[cached[replay.nodes]]))


def _lru_contents(blocks: np.ndarray, capacity: int) -> set[int]:
    """What a head-first LRU block cache holds: the ``capacity`` most recently used distinct blocks."""
    last = {int(b): i for i, b in enumerate(blocks)}
    return set(sorted(last, key=last.get)[-capacity:]) if capacity else set()


def worked_example(script: tuple[tuple[str, ...], ...] = LITEHIT_SCRIPT, capacity: int = LITEHIT_CAPACITY) -> Example:
    """Replay the script through prefix LRU and block LRU, keeping both caches after every request."""
    trace, ids = script_trace(script)
    name, parents = labels_and_parents(ids)
    prefix_hits = request_hits(prepare(trace), "lru", capacity)
    block_hits = simulate(replay_of(trace), "lru", capacity).requests["prefix_hits"].to_numpy()
    steps = [Step(0, (), 0, 0, frozenset(), frozenset())]
    for k in range(1, trace.n_requests + 1):
        head = trace.head(k)
        in_prefix = prefix_contents(head, capacity, name)
        in_block = frozenset(name[b] for b in _lru_contents(head.blocks, capacity))
        steps.append(Step(k, script[k - 1], int(prefix_hits[k - 1]), int(block_hits[k - 1]), in_prefix, in_block))
    return Example(tuple(name[i] for i in range(len(ids))), parents, capacity, tuple(steps))
