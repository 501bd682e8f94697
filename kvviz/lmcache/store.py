"""LMCache's chunked KV store, as LMCache 0.5.6 keeps it (``lmcache/v1/``), over its storage backends.

- **Chunks and keys** (``token_database.py``, ``ChunkedTokenDatabase``): a prompt is cut into chunks
  of ``chunk_size`` tokens (256 by default, ``config.py``); a last chunk shorter than that is kept only
  with ``save_unfull_chunk`` (off by default: ``_chunk_tokens`` stops at the last full chunk). Each
  chunk's key is a hash of its tokens chained on the previous chunk's (``_prefix_hash``), so a key names
  the whole prefix up to the chunk's end. A trace names each block of ``block_size`` tokens by its
  whole prefix, so here a chunk's key is (the block holding the chunk's last token, where in that
  block the chunk ends): the same prefix, the same key.
- **Lookup** (``cache_engine.py``, ``LMCacheEngine.lookup`` → ``storage_manager.py``,
  ``StorageManager.batched_contains``): the backends are asked in order — local CPU, local disk,
  remote (``CreateStorageBackends``) — each for the run of leading keys it holds from where the
  previous one stopped; a backend holding none is skipped, and the lookup ends at the first chunk no
  later backend holds. Hit chunks are touched (``LocalCPUBackend.touch_cache`` → the LRU policy's
  ``update_on_hit``: moved to the recent end, last chunk first, so a prompt's head ends most recent).
- **Store** after prefill (``LMCacheEngine.store`` → ``StorageManager.batched_put``): every chunk of
  the prompt is put into every backend; a backend skips a key it already holds and, when full, evicts
  its least recently used chunks (``cache_policy/lru.py``, ``get_evict_candidates``: the default
  ``cache_policy`` is LRU). A remote backend stands for an LMCache server or another store every
  instance shares; its eviction is the server's, LRU here too.

Capacities are in chunks (``math.inf``: unbounded; 0: the backend is off).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kvviz.common.errors import require

BACKENDS: tuple[str, ...] = ("cpu", "disk", "remote")
BACKEND_LABELS = {"cpu": "local CPU", "disk": "local disk", "remote": "remote"}


@dataclass(frozen=True)
class LMCacheConfig:
    """LMCache's chunk size, whether a last partial chunk is saved, and each backend's size in chunks."""

    chunk_size: int = 256
    save_unfull_chunk: bool = False
    cpu_chunks: float = 0.0
    disk_chunks: float = 0.0
    remote_chunks: float = 0.0

    def validate(self) -> None:
        require(1 <= self.chunk_size <= 1 << 20, "chunk size must be in 1..1,048,576 tokens", field="chunk_size")
        for name in BACKENDS:
            v = getattr(self, f"{name}_chunks")
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (math.isfinite(v) or v == math.inf)
            require(ok and v >= 0, f"{name} size must be ≥ 0 chunks, got {v!r}", field=f"{name}_chunks")

    def capacities(self) -> dict[str, float]:
        """The backends that are on, in lookup order, with their sizes."""
        sizes = {name: getattr(self, f"{name}_chunks") for name in BACKENDS}
        return {name: size for name, size in sizes.items() if size > 0}


def chunks_of_gib(gib: float, chunk_size: int, kv_bytes_per_token: float) -> float:
    """How many whole chunks ``gib`` GiB holds (``math.inf`` stays unbounded)."""
    if gib == math.inf:
        return math.inf
    return float(math.floor(gib * 2**30 / (chunk_size * kv_bytes_per_token)))


class LruBackend:
    """One storage backend: chunk keys in least-recently-used order, at most ``capacity`` of them."""

    def __init__(self, name: str, capacity: float):
        self.name, self.capacity = name, capacity
        self.keys: OrderedDict[int, None] = OrderedDict()

    def leading(self, keys: list[int]) -> int:
        """The run of leading ``keys`` held here (``batched_contains``)."""
        n = 0
        while n < len(keys) and keys[n] in self.keys:
            n += 1
        return n

    def touch(self, keys: list[int]) -> None:
        """Hit keys become the most recent, the first of them last (``touch_cache``)."""
        for k in reversed(keys):
            self.keys.move_to_end(k)

    def put(self, keys: list[int]) -> None:
        """Keep the keys not held yet, evicting the least recently used when full."""
        held = self.keys
        for k in keys:
            if k in held:
                continue
            if len(held) >= self.capacity:
                held.popitem(last=False)
            held[k] = None


class ChunkStore:
    """The backends that are on, in lookup order. A ``shared`` backend (one every instance of a cluster
    uses) stands in for the remote one."""

    def __init__(self, config: LMCacheConfig, shared: LruBackend | None = None):
        config.validate()
        sizes = config.capacities()
        self.backends = [
            shared if name == "remote" and shared is not None else LruBackend(name, size)
            for name, size in sizes.items()
        ]

    def lookup(self, keys: list[int]) -> list[int]:
        """Chunks hit in each backend (in order), walking the keys as ``batched_contains`` does;
        the hit chunks are touched."""
        hits, rest = [], keys
        for backend in self.backends:
            n = backend.leading(rest)
            backend.touch(rest[:n])
            hits.append(n)
            rest = rest[n:]
            if not rest:
                break
        return hits + [0] * (len(self.backends) - len(hits))

    def store(self, keys: list[int]) -> None:
        for backend in self.backends:
            backend.put(keys)


class ChunkKeys:
    """Chunk keys of every request of a trace, numbered densely: (block node, chunk end in that block)."""

    def __init__(self, nodes: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, block_size: int, config):
        self.nodes, self.offsets, self.lengths = nodes, offsets, lengths
        self.block_size, self.chunk_size, self.unfull = block_size, config.chunk_size, config.save_unfull_chunk
        self.ids: dict[tuple[int, int], int] = {}

    def ends(self, r: int) -> list[int]:
        """Where request r's chunks end, in tokens (only chunks its blocks cover)."""
        length = min(int(self.lengths[r]), int(self.offsets[r + 1] - self.offsets[r]) * self.block_size)
        cs = self.chunk_size
        full = list(range(cs, length + 1, cs))
        return full + [length] if self.unfull and length % cs else full

    def keys(self, r: int, ends: list[int]) -> list[int]:
        lo, bs, ids = int(self.offsets[r]), self.block_size, self.ids
        out = []
        for e in ends:
            b = (e - 1) // bs
            key = (int(self.nodes[lo + b]), e - b * bs)
            out.append(ids.setdefault(key, len(ids)))
        return out
