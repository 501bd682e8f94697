"""Sampled prefix-cache curves: SHARDS over whole requests, grouped by their first block.

SHARDS (Waldspurger et al., FAST'15; ``kvviz.eviction.shards``) keeps every access to a block whose hash
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

from kvviz.common.errors import require
from kvviz.eviction.grid import INFINITE, MIN_SAMPLED_CAPACITY
from kvviz.eviction.replay import Replay
from kvviz.eviction.replay import sweep as block_sweep
from kvviz.eviction.shards import block_hashes
from kvviz.prefix_cache.replay import PrefixReplay, prepare, sweep
from kvviz.traces import Trace


@dataclass(frozen=True)
class RequestSample:
    replay: PrefixReplay
    rate: float  # kept block accesses ÷ all block accesses (what capacities are scaled by)
    requests_kept: int
    requests: int
    kept: np.ndarray  # per request of the whole trace: kept in the sample


def sample_requests(trace: Trace, rate: float) -> RequestSample:
    """The requests whose first block's hash falls under ``rate`` of the hash space."""
    require(0 < rate <= 1, f"sampling rate must be in (0, 1], got {rate}", field="sample")
    replay = prepare(trace)
    counts = np.diff(replay.offsets)
    first = np.where(counts > 0, replay.nodes[np.minimum(replay.offsets[:-1], replay.accesses - 1)], -1)
    threshold = np.uint64(min(int(rate * 2.0**64), 2**64 - 1))
    keep = (counts > 0) & (block_hashes(np.maximum(first, 0)) < threshold)
    require(bool(keep.any()), f"a {rate:g} sample of this trace's requests holds none: raise the rate", field="sample")
    mask = np.repeat(keep, counts)
    kept_counts = counts[keep]
    offsets = np.zeros(len(kept_counts) + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=offsets[1:])
    nodes = replay.nodes[mask]
    used, dense = np.unique(nodes, return_inverse=True)
    remap = np.full(replay.n_nodes, -1, np.int64)
    remap[used] = np.arange(len(used))
    parent = np.where(replay.parent[used] >= 0, remap[np.maximum(replay.parent[used], 0)], -1)
    sampled = PrefixReplay(
        dense.astype(np.int64).reshape(-1),
        parent,
        replay.depth[used],
        offsets,
        replay.timestamps_ms[keep],
        replay.input_lengths[keep],
        replay.block_size,
    )
    return RequestSample(sampled, len(nodes) / replay.accesses, int(keep.sum()), replay.n_requests, keep)


def _scaled(capacities, rate: float) -> tuple[list, list]:
    """The capacities a sample can represent, and the sample's capacities for them."""
    caps = [c for c in capacities if c == INFINITE or c * rate >= MIN_SAMPLED_CAPACITY]
    require(
        bool([c for c in caps if c != INFINITE]),
        f"no capacity is at least {MIN_SAMPLED_CAPACITY} blocks after "
        f"sampling at {rate:.3g}: raise the rate or the capacities",
        field="sample",
    )
    return caps, [c if c == INFINITE else max(1, round(c * rate)) for c in caps]


def _rescale(swept: pd.DataFrame, caps: list, sample: RequestSample, ratio: str) -> pd.DataFrame:
    """Sampled results as the whole trace's: capacities back to the asked ones, hits scaled by 1/R."""
    out = swept.copy()
    out["capacity"] = np.tile(np.array(caps, dtype=float), len(out) // len(caps))
    total = round(sample.replay.accesses / sample.rate)
    for column in [c for c in ("hits", "prefix_hits") if c in out.columns]:
        out[column] = np.round(out[column] / out["accesses"] * total).astype(np.int64)
    out["accesses"] = total
    if ratio in out.columns:
        out[ratio] = out["hits"] / total
    return out


def block_replay(sample: RequestSample) -> Replay:
    """The same sampled requests as a block-cache replay (their prefix nodes are the block ids)."""
    r = sample.replay
    return Replay(r.nodes, r.n_nodes, r.offsets, r.timestamps_ms, r.block_size)


def sampled_sweep(trace: Trace, policies, capacities, rate: float, block_policies=()) -> SampledCurves:
    """Prefix curve (and block sweep for ``block_policies``) estimated on one request sample:
    capacities scaled by the kept share, ratios of the sample, hits scaled to the whole trace.
    Capacities below ``MIN_SAMPLED_CAPACITY`` sampled blocks are dropped (a few blocks would decide)."""
    sample = sample_requests(trace, rate)
    caps, scaled = _scaled(list(capacities), sample.rate)
    prefix = _rescale(sweep(sample.replay, policies, scaled), caps, sample, "hit_ratio")
    block = None
    if block_policies:
        block = _rescale(block_sweep(block_replay(sample), block_policies, scaled), caps, sample, "")
    return SampledCurves(prefix, block, sample, tuple(caps))


@dataclass(frozen=True)
class SampledCurves:
    prefix: pd.DataFrame  # policy, capacity, hits, accesses, hit_ratio (whole-trace scale)
    block: pd.DataFrame | None  # kvviz.eviction.replay.sweep's columns, same scale
    sample: RequestSample
    capacities: tuple

    @property
    def ceiling(self) -> float:
        """The sample's infinite-cache hit ratio (compare with the whole trace's to see the error)."""
        return float(self.sample.replay.seen_before.mean())
