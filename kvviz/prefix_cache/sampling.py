"""Sampled prefix-cache curves: SHARDS over whole requests, grouped by their first block.

SHARDS (Waldspurger et al., FAST'15; ``kvviz.shards``) keeps every access to a block whose hash
falls under a threshold. A prefix cache cannot be sampled that way: dropping a request's head
block would leave its tail unreachable. Here a **request** is kept when the hash of its
**first block** falls under the threshold, so every request under one root prefix is kept or
dropped together and each kept subtree of the prefix tree is whole. The sample is replayed
through a cache of ``C × R`` blocks (``R`` = the kept share of block accesses, measured, not the
nominal rate) and its hit ratio estimates the whole trace's at ``C``. The estimate is poor when a
few root prefixes carry most of the trace (one system prompt for everyone is kept or dropped
whole): the page reports the kept share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.errors import require
from kvviz.eviction import INFINITE
from kvviz.prefix_cache.replay import PrefixReplay, prepare, sweep
from kvviz.shards import MIN_SAMPLED_CAPACITY, block_hashes
from kvviz.trace import Trace


@dataclass(frozen=True)
class RequestSample:
    replay: PrefixReplay
    rate: float               # kept block accesses ÷ all block accesses (what capacities are scaled by)
    requests_kept: int
    requests: int


def sample_requests(trace: Trace, rate: float) -> RequestSample:
    """The requests whose first block's hash falls under ``rate`` of the hash space."""
    require(0 < rate <= 1, f"sampling rate must be in (0, 1], got {rate}", field="sample")
    replay = prepare(trace)
    counts = np.diff(replay.offsets)
    first = np.where(counts > 0, replay.nodes[np.minimum(replay.offsets[:-1], replay.accesses - 1)], -1)
    threshold = np.uint64(min(int(rate * 2.0**64), 2**64 - 1))
    keep = (counts > 0) & (block_hashes(np.maximum(first, 0)) < threshold)
    require(bool(keep.any()), f"a {rate:g} sample of this trace's requests holds none: raise the rate",
            field="sample")
    mask = np.repeat(keep, counts)
    kept_counts = counts[keep]
    offsets = np.zeros(len(kept_counts) + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=offsets[1:])
    nodes = replay.nodes[mask]
    used, dense = np.unique(nodes, return_inverse=True)
    remap = np.full(replay.n_nodes, -1, np.int64)
    remap[used] = np.arange(len(used))
    parent = np.where(replay.parent[used] >= 0, remap[np.maximum(replay.parent[used], 0)], -1)
    sampled = PrefixReplay(dense.astype(np.int64).reshape(-1), parent, replay.depth[used], offsets,
                           replay.timestamps_ms[keep], replay.input_lengths[keep], replay.block_size)
    return RequestSample(sampled, len(nodes) / replay.accesses, int(keep.sum()), replay.n_requests)


def sampled_sweep(trace: Trace, policies, capacities, rate: float) -> tuple[pd.DataFrame, RequestSample]:
    """The prefix curve estimated from a request sample: capacities scaled by the kept share, hit
    ratios of the sample, hits scaled back to the whole trace. Capacities whose scaled size is
    below ``MIN_SAMPLED_CAPACITY`` blocks are dropped (a few blocks would decide them)."""
    sample = sample_requests(trace, rate)
    caps = [c for c in capacities if c == INFINITE or c * sample.rate >= MIN_SAMPLED_CAPACITY]
    require(bool(caps), f"no capacity is at least {MIN_SAMPLED_CAPACITY} blocks after sampling at "
            f"{sample.rate:.3g}: raise the rate or the capacities", field="sample")
    scaled = [c if c == INFINITE else max(1, round(c * sample.rate)) for c in caps]
    curve = sweep(sample.replay, policies, scaled)
    curve["capacity"] = np.tile(np.array(caps, dtype=float), len(curve) // len(caps))
    total = round(sample.replay.accesses / sample.rate)
    curve["accesses"] = total
    curve["hits"] = np.round(curve["hit_ratio"] * total).astype(np.int64)
    return curve, sample
