"""vLLM + LMCache: vLLM's block pool on the GPU, LMCache's chunked store behind it.

Per request, as vLLM's scheduler and LMCache's connector serve it (``lmcache/integration/vllm``:
``get_num_new_matched_tokens``): vLLM's prefix cache hits first (:class:`kvviz.vllm.BlockPool`); LMCache
looks the prompt up (:class:`kvviz.lmcache.store.ChunkStore`), and the tokens it holds past what the
instance already has are loaded from the backend holding them; after prefill the prompt's chunks are
stored. The GPU pool evolves as without LMCache (the loaded tokens take new blocks as recomputed ones
would), so its hits are exactly ``hitcurve --cache vllm``'s. :class:`StackInstance` is one instance
served request by request; :func:`replay` runs a whole trace through one, and a cluster runs one per
instance behind a router, their remote backend shared. Requests complete instantly, as in the other
hit-ratio replays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.lmcache.store import BACKEND_LABELS, ChunkKeys, ChunkStore, LMCacheConfig, LruBackend
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.traces import Trace
from kvviz.vllm import BlockPool

GPU_ONLY = LMCacheConfig()
"""LMCache's defaults with every backend off."""


class StackInstance:
    """One vLLM + LMCache instance: a block pool of ``gpu_blocks`` over the trace's prefixes (``nodes``,
    ``offsets``, ``n_nodes``) and LMCache's backends of ``config``, the remote one ``shared`` when given.
    ``keys`` numbers the chunks (one numbering for every instance of a cluster)."""

    def __init__(
        self,
        keys: ChunkKeys,
        n_nodes: int,
        gpu_blocks: float,
        config: LMCacheConfig = GPU_ONLY,
        shared: LruBackend | None = None,
    ):
        self.keys = keys
        self.pool = BlockPool(keys.nodes, keys.offsets, n_nodes, gpu_blocks)
        self.store = ChunkStore(config, shared)
        self.names = [b.name for b in self.store.backends]

    def match(self, r: int) -> int:
        """Leading blocks of request ``r`` in the GPU pool now (nothing changes)."""
        return self.pool.match(r)

    def serve(self, r: int) -> int:
        """Request ``r`` through the GPU pool: its hit blocks."""
        return self.pool.serve(r)

    def load(self, r: int, have: int) -> dict[str, int]:
        """LMCache's part of request ``r``, whose first ``have`` tokens the instance already has: the
        tokens loaded from each backend past them; then the prompt's chunks are stored."""
        if not self.names:
            return {}
        ends = self.keys.ends(r)
        ids = self.keys.keys(r, ends)
        loaded = dict.fromkeys(self.names, 0)
        start = 0
        for name, n in zip(self.names, self.store.lookup(ids)):
            if n:
                lo = ends[start - 1] if start else 0
                loaded[name] = max(0, ends[start + n - 1] - max(lo, have))
            start += n
        self.store.store(ids)
        return loaded

    @property
    def used(self) -> int:
        """GPU blocks holding a prefix."""
        return self.pool.used


@dataclass(frozen=True)
class StackRun:
    """Per request: blocks and prompt tokens hit in vLLM's GPU pool, and tokens loaded from each LMCache backend."""

    gpu_blocks: np.ndarray
    gpu_tokens: np.ndarray
    backend_tokens: dict[str, np.ndarray]
    input_tokens: int

    def table(self) -> pd.DataFrame:
        """Hit tokens by tier (``tier, tokens, share``), the share of all prompt tokens."""
        rows = [("GPU (vLLM)", int(self.gpu_tokens.sum()))]
        rows += [(f"LMCache {BACKEND_LABELS[k]}", int(v.sum())) for k, v in self.backend_tokens.items()]
        frame = pd.DataFrame(rows, columns=["tier", "tokens"])
        return frame.assign(share=frame["tokens"] / max(self.input_tokens, 1))


def replay(source: Trace | PrefixReplay, gpu_blocks: float, config: LMCacheConfig = GPU_ONLY) -> StackRun:
    """The trace through one instance: vLLM's pool of ``gpu_blocks`` blocks and LMCache's backends."""
    config.validate()
    rp = source if isinstance(source, PrefixReplay) else prepare(source)
    lengths = rp.input_lengths
    instance = StackInstance(
        ChunkKeys(rp.nodes, rp.offsets, lengths, rp.block_size, config), rp.n_nodes, gpu_blocks, config
    )
    blocks = np.zeros(rp.n_requests, np.int64)
    loaded = {name: np.zeros(rp.n_requests, np.int64) for name in instance.names}
    for r in range(rp.n_requests):
        blocks[r] = instance.serve(r)
        for name, tokens in instance.load(r, min(int(blocks[r]) * rp.block_size, int(lengths[r]))).items():
            loaded[name][r] = tokens
    return StackRun(blocks, np.minimum(blocks * rp.block_size, lengths), loaded, int(lengths.sum()))
