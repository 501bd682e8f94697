"""The eviction keys the compiled tree runs, named as the object model names them.

SGLang's ``mem_cache/evict_policy.py`` (release 0.5.23) gives each policy a key, smallest evicted
first; ``kvviz.radix.radix_cache.STRATEGY`` writes them as functions of a node, under the names
and in the order of :data:`STRATEGY_NAMES` (a test holds the two together). The compiled tree
(:mod:`kvviz.hiradix.tree`) keeps the same policies as small integer codes: a policy's code is its
place in :data:`TREE_POLICIES`. ``priority`` is left out: a trace carries no request priorities, so
it would be LRU.
"""

from __future__ import annotations

STRATEGY_NAMES: tuple[str, ...] = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru")
"""SGLang's eviction strategies, in the order the object model lists them."""

TREE_POLICIES: tuple[str, ...] = tuple(name for name in STRATEGY_NAMES if name != "priority")
"""The policies the compiled tree runs; a policy's code is its index here."""

LRU, LFU, FIFO, MRU, FILO, SLRU = (TREE_POLICIES.index(name) for name in ("lru", "lfu", "fifo", "mru", "filo", "slru"))
"""Each policy's code: LRU ``last_access``, LFU ``(hit_count, last_access)``, FIFO ``creation``,
MRU ``-last_access``, FILO ``-creation``, SLRU ``(hit_count >= 2, last_access)``."""
