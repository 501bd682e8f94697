"""vLLM + LMCache: vLLM's block pool on the GPU, LMCache's chunked store behind it.

Per request, as vLLM's scheduler and LMCache's connector serve it (``lmcache/integration/vllm``:
``get_num_new_matched_tokens``): vLLM's prefix cache hits first (:mod:`kvviz.vllm.block_pool`); LMCache
looks the prompt up (:class:`kvviz.lmcache.store.ChunkStore`), and the tokens it holds past vLLM's hit
are loaded from the backend holding them; after prefill the prompt's chunks are stored. The GPU pool
evolves as without LMCache (the loaded tokens take new blocks as recomputed ones would), so its hits
are exactly ``hitcurve --cache vllm``'s. Requests complete instantly, as in the other hit-ratio replays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.lmcache.store import BACKEND_LABELS, ChunkKeys, ChunkStore, LMCacheConfig
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.traces import Trace
from kvviz.vllm import request_hits as pool_hits

GPU_ONLY = LMCacheConfig()
"""LMCache's defaults with every backend off."""


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
    """The trace through vLLM's pool of ``gpu_blocks`` blocks and LMCache's backends."""
    config.validate()
    rp = source if isinstance(source, PrefixReplay) else prepare(source)
    bs = rp.block_size
    lengths = rp.input_lengths
    blocks = pool_hits(rp, gpu_blocks)
    gpu = np.minimum(blocks * bs, lengths)
    store = ChunkStore(config)
    keys = ChunkKeys(rp.nodes, rp.offsets, lengths, bs, config)
    names = [b.name for b in store.backends]
    loaded = {name: np.zeros(rp.n_requests, np.int64) for name in names}
    for r in range(rp.n_requests):
        ends = keys.ends(r)
        ids = keys.keys(r, ends)
        start = 0
        for name, n in zip(names, store.lookup(ids)):
            if n:
                stop = ends[start + n - 1]
                lo = ends[start - 1] if start else 0
                loaded[name][r] = max(0, stop - max(lo, int(gpu[r])))
            start += n
        store.store(ids)
    return StackRun(blocks, gpu, loaded, int(lengths.sum()))
