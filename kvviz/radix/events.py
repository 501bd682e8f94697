"""What the radix tree did, as it did it: the event log of ``kvviz.radix.radix_cache.RadixCache`` and its tiers.

Every public operation of the trees (SGLang's ``radix_cache.py`` / ``hiradix_cache.py`` semantics,
spec §2–§3) appends one :class:`Event` per thing that happened — a match and its length, the edge
a walk split and where, each leaf eviction in policy order, a node's move to CPU memory, a
load-back — so a viewer can be told what happened from the cache's own record, never from a guess
made afterwards. :func:`narrate` turns a step's events into sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum


class EventKind(Enum):
    """The kinds of thing a tree operation does (one event each)."""

    MATCH = "match"  # a lookup: ``tokens`` matched on the GPU of ``of`` looked up
    INSERT = "insert"  # ``tokens`` of ``of`` were already cached; the rest became a leaf
    SPLIT = "split"  # the edge ``key`` split after ``at`` tokens (``node``: the new prefix)
    EVICT = "evict"  # a GPU leaf of ``tokens`` left the tree (``cascade``: its child went first)
    EVICT_SHORT = "evict short"  # an eviction freed ``tokens`` of the ``of`` asked for; ``reason`` says why
    TO_HOST = "to host"  # HiCache: a GPU+CPU leaf lost its GPU copy and stays as CPU-only
    WRITE_BACK = "write back"  # HiCache write_back: copied to CPU at eviction, then its GPU copy dropped
    EVICT_HOST = "evict host"  # HiCache: a CPU-only leaf left the tree
    BACKUP = "backup"  # HiCache: a node got its CPU copy (locked until acknowledged)
    BACKUP_FAILED = "backup failed"
    ADOPT = "adopt"  # HiCache: an insert gave a CPU-only node its recomputed GPU KV back
    LOAD_BACK = "load back"  # HiCache: a CPU-only chain was loaded back to the GPU
    LOAD_SKIPPED = "load skipped"  # HiCache: the CPU hit was under the load-back floor: recomputed
    LOAD_FAILED = "load failed"  # HiCache: no GPU room for the chain: recomputed
    MATERIALISE = "materialise"  # Strata: an in-flight span's KV arrived; it is an ordinary node now


@dataclass(frozen=True, slots=True)
class Event:
    """One thing a tree operation did. ``key`` is the edge's tokens at that moment (for the words)."""

    kind: EventKind
    node: int
    tokens: int
    key: tuple[int, ...] = ()
    of: int = 0  # MATCH / INSERT: the key's length; EVICT_SHORT: tokens asked for
    at: int = 0  # SPLIT: the offset of the cut
    host: int = 0  # MATCH: tokens found on the CPU only
    in_flight: int = 0  # MATCH: tokens over in-flight spans (Strata)
    cascade: bool = False  # EVICT: the node became a leaf when its last child was evicted
    parent: int = -1  # EVICT: the node's parent then (where the page draws its ghost)
    reason: str = ""  # EVICT_SHORT: why no more could be freed
    who: str = ""  # the request the operation ran for ("" for a raw operation)


POLICY_WORDS = {
    "lru": "least recently used",
    "lfu": "fewest hits, then least recently used",
    "fifo": "oldest created",
    "mru": "most recently used",
    "filo": "newest created",
    "priority": "lowest priority, then least recently used",
    "slru": "probationary segment first, then least recently used",
}
EVICTING = (EventKind.EVICT, EventKind.TO_HOST, EventKind.WRITE_BACK)
"""The kinds that free GPU memory (what the page counts as an eviction)."""


def quote(key: Sequence[int], vocab: dict[int, str]) -> str:
    """An edge's tokens in quotes, as words (the script's vocabulary) or runs of ids ``a..b``;
    up to 8 items in full, else the first three … the last three."""
    items, i = [], 0
    while i < len(key):
        j = i
        while key[i] not in vocab and j + 1 < len(key) and key[j + 1] == key[j] + 1:
            j += 1
        items.append(f"{key[i]}..{key[j]}" if j - i >= 2 else vocab.get(key[i], str(key[i])))
        i = j + 1 if j - i >= 2 else i + 1
    return "'" + " ".join(items if len(items) <= 8 else items[:3] + ["…"] + items[-3:]) + "'"


def _sentence(e: Event, q: Callable[[Sequence[int]], str], policy: str) -> str:
    n = f"{e.tokens:,} token{'s' if e.tokens != 1 else ''}"
    k = e.kind
    if k is EventKind.MATCH:
        parts = [f"matched {e.tokens:,} of {e.of:,} tokens on the GPU"]
        if e.host:
            parts.append(f"{e.host:,} more on the CPU")
        if e.in_flight:
            parts.append(f"{e.in_flight:,} over spans in flight")
        return ", ".join(parts)
    if k is EventKind.INSERT:
        new = e.of - e.tokens
        return f"inserted {e.of:,} tokens: {e.tokens:,} already cached" + (
            f", {new:,} new as leaf {q(e.key)}" if new and e.key else ""
        )
    if k is EventKind.SPLIT:
        return f"split {q(e.key)} at token {e.at} (node {e.node} is the shared part)"
    if k is EventKind.EVICT:
        why = "its last child went, so it became a leaf" if e.cascade else POLICY_WORDS.get(policy, policy)
        return f"evicted leaf {q(e.key)} ({n}, {why})"
    if k is EventKind.EVICT_SHORT:
        return f"asked to free {e.of:,} tokens, freed {e.tokens:,}: {e.reason}"
    if k is EventKind.TO_HOST:
        why = "its last GPU child went" if e.cascade else POLICY_WORDS.get(policy, policy)
        return f"moved {q(e.key)} to CPU only ({n}, {why}): it stays in the tree"
    return {
        EventKind.WRITE_BACK: f"wrote {q(e.key)} back to CPU at eviction ({n}), then dropped its GPU copy",
        EventKind.EVICT_HOST: f"dropped CPU-only leaf {q(e.key)} ({n}) from the tree",
        EventKind.BACKUP: f"copied {q(e.key)} to CPU ({n}; locked until the copy is acknowledged)",
        EventKind.BACKUP_FAILED: f"could not copy {q(e.key)} to CPU ({n}): the CPU pool is full",
        EventKind.ADOPT: f"{q(e.key)} was CPU-only: the recomputed KV ({n}) is on the GPU again",
        EventKind.LOAD_BACK: f"loaded {q(e.key)} ({n}) back from CPU to the GPU",
        EventKind.LOAD_SKIPPED: f"CPU hit of {n} is under the load-back floor: recomputed instead",
        EventKind.LOAD_FAILED: f"no GPU room to load {n} back: recomputed instead",
        EventKind.MATERIALISE: f"span {q(e.key)} in flight is computed ({n}): an ordinary node now",
    }[k]


def narrate(events: Iterable[Event], vocab: dict[int, str] | None = None, policy: str = "lru") -> list[str]:
    """One sentence per event, in order, prefixed with the request it ran for (bold) when known.

    ``vocab`` turns token ids into the script's words; ``policy`` names the eviction order.
    """
    vocab = vocab or {}
    return [(f"**{e.who}**: " if e.who else "") + _sentence(e, lambda key: quote(key, vocab), policy) for e in events]
