"""Sampled prefix-cache curves: whole requests kept by where they leave the shared trunk.

SHARDS (Waldspurger et al., FAST'15; ``kvviz.eviction.shards``) keeps every access to a block whose hash
falls under a threshold. A prefix cache cannot be sampled that way: dropping a request's head
block would leave its tail unreachable. So requests are sampled whole, and requests that share a
prefix below the trunk are kept or dropped together, so each kept subtree of the prefix tree is
whole.

**The trunk.** Keying a request on its first block fails when every request starts with the same
blocks (one system prompt: block 0 of Mooncake's conversation trace is in all 12,031 requests), as
the whole trace is then one group, kept or dropped. Here the **trunk** is the prefix-tree nodes on
more than ``TRUNK_SHARE × R`` of the requests, and a request is keyed on the **first node where it
leaves the trunk**: the groups are the subtrees hanging off the trunk, each at most that share of
the requests, and a request that never leaves it is a group of its own. A group is kept when its
key's hash falls under ``R`` of the hash space.

**Capacities.** A radix cache evicts leaves only, so a trunk node stays cached while any request
below it does: the trunk nodes the sample reaches keep a place of their own in the sampled cache,
and the rest of the cache is scaled by the kept share of the non-trunk nodes, ``R'``: a capacity
``C`` becomes ``trunk kept + round(R' × (C − trunk))``. A capacity is represented when its scaled
part is at least ``MIN_SAMPLED_CAPACITY`` blocks.

**Misses, split at the trunk** (the prefix cache's SHARDS-adj). A trunk node is shared across
groups, so the sample reaches it through far fewer requests than the trace does, and its first
access in the sample misses where the trace's would have hit. So the misses are counted in two
parts: the sample's misses off the trunk, scaled by the trace's accesses off the trunk over the
sample's; and on the trunk, the trace's compulsory misses (one per trunk node, known) plus the
sample's other trunk misses, scaled the same way. The hit ratio is one minus their sum over the
trace's accesses. The block-cache twin (``block_policies``) is the sample's own hit ratio,
uncorrected. Each estimate carries an error estimate: the spread of ``REPLICAS`` disjoint samples
at the same rate (hash bands of the group keys, as ``kvviz.eviction.shards`` does for blocks).
The error is measured in ``bench/bench_sampling.py`` on a trace whose first block
is in every request (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common.errors import InputError, require
from kvviz.eviction.grid import INFINITE, MIN_SAMPLED_CAPACITY
from kvviz.eviction.replay import Replay
from kvviz.eviction.replay import sweep as block_sweep
from kvviz.eviction.shards import REPLICAS, SPREAD_Z, in_band
from kvviz.prefix_cache.replay import PrefixReplay, hits_table, parse_policies, prepare
from kvviz.traces import Trace

TRUNK_SHARE = 0.1  # a node on more than this times the rate of the requests is trunk


@dataclass(frozen=True)
class RequestSample:
    """The requests kept whole, prepared for replay, and how they scale."""

    replay: PrefixReplay
    rate: float  # kept non-trunk nodes ÷ all non-trunk nodes (what capacities are scaled by)
    requests_kept: int
    requests: int
    kept: np.ndarray  # per request of the whole trace: kept in the sample
    trunk: int  # trunk nodes of the whole trace
    trunk_kept: int  # trunk nodes the kept requests reach
    whole_accesses: int  # block accesses of the whole trace
    trunk_accesses: int  # of them, on trunk nodes
    stays: np.ndarray  # per kept request: its accesses on the trunk (they come first)

    @property
    def access_share(self) -> float:
        """The kept requests' share of the trace's block accesses."""
        return self.replay.accesses / self.whole_accesses

    def sampled_capacity(self, capacity: float) -> float:
        """The sample's capacity standing for ``capacity``: its trunk nodes, and the rest scaled."""
        if capacity == INFINITE:
            return INFINITE
        return self.trunk_kept + max(1, round((capacity - self.trunk) * self.rate))

    def represents(self, capacity: float) -> bool:
        return capacity == INFINITE or (capacity - self.trunk) * self.rate >= MIN_SAMPLED_CAPACITY


@dataclass(frozen=True)
class Groups:
    """The trunk of a prepared trace and each request's group key."""

    keys: np.ndarray  # per request: the first node off the trunk (past the last node: its own key)
    trunk: np.ndarray  # per node: on more than TRUNK_SHARE × rate of the requests
    stays: np.ndarray  # per request: its accesses on the trunk


def groups(replay: PrefixReplay, rate: float) -> Groups:
    """Which nodes are trunk at ``rate`` and where each request leaves it."""
    on = np.bincount(replay.nodes, minlength=replay.n_nodes)  # a request's path holds a node once
    trunk = on > TRUNK_SHARE * rate * replay.n_requests
    counts = np.diff(replay.offsets)
    # along a path the count never grows, so a request's trunk accesses come first
    on_trunk = np.concatenate([[0], np.cumsum(trunk[replay.nodes])])
    stays = on_trunk[replay.offsets[1:]] - on_trunk[replay.offsets[:-1]]
    at = np.minimum(replay.offsets[:-1] + stays, replay.accesses - 1)
    own = replay.n_nodes + np.arange(replay.n_requests, dtype=np.int64)
    return Groups(np.where(stays < counts, replay.nodes[at], own), trunk, stays)


def sample_requests(trace: Trace, rate: float, band: int = 0, replay: PrefixReplay | None = None) -> RequestSample:
    """The requests whose group key's hash falls in band ``band`` of width ``rate`` (``[kR, (k+1)R)``
    round the hash space; band 0 is under ``rate``), kept whole. ``replay``: the trace, prepared."""
    require(0 < rate <= 1, f"sampling rate must be in (0, 1], got {rate}", field="sample")
    replay = prepare(trace) if replay is None else replay
    found = groups(replay, rate)
    keys, trunk = found.keys, found.trunk
    keep = in_band(keys, (band * rate) % 1.0, rate)
    require(bool(keep.any()), f"a {rate:g} sample of this trace's requests holds none: raise the rate", field="sample")
    mask = np.repeat(keep, np.diff(replay.offsets))
    reached = np.zeros(replay.n_nodes, bool)
    reached[replay.nodes[mask]] = True
    others = int((~trunk).sum())
    share = int((reached & ~trunk).sum()) / others if others else 1.0
    return RequestSample(
        prepare(subset(trace, keep)),
        share,
        int(keep.sum()),
        replay.n_requests,
        keep,
        int(trunk.sum()),
        int((reached & trunk).sum()),
        replay.accesses,
        int(found.stays.sum()),
        found.stays[keep],
    )


def subset(trace: Trace, keep: np.ndarray) -> Trace:
    """The requests of ``trace`` where ``keep`` holds, as a trace of their own (arrival order kept)."""
    counts = np.diff(trace.offsets)
    offsets = np.zeros(int(keep.sum()) + 1, np.int64)
    np.cumsum(counts[keep], out=offsets[1:])
    return Trace(
        trace.requests[keep].reset_index(drop=True),
        trace.blocks[np.repeat(keep, counts)],
        offsets,
        trace.block_size,
        trace.has_block_ids,
        trace.name,
    )


def _scaled(capacities: Iterable[float], sample: RequestSample) -> tuple[list, list]:
    """The capacities the sample represents, and the sample's capacities for them."""
    caps = [c for c in capacities if sample.represents(c)]
    require(
        any(c != INFINITE for c in caps),
        f"no capacity leaves at least {MIN_SAMPLED_CAPACITY} blocks beyond the {sample.trunk:,} shared trunk "
        f"blocks after sampling at {sample.rate:.3g}: raise the rate or the capacities",
        field="sample",
    )
    return caps, [sample.sampled_capacity(c) for c in caps]


def estimate(sample: RequestSample, table: np.ndarray) -> np.ndarray:
    """The whole trace's hit ratio at each capacity row of ``table`` (the sample's matched blocks
    per capacity and request), its misses split at the trunk (the module's docstring)."""
    on_trunk = np.minimum(table, sample.stays).sum(axis=1)
    trunk_seen = int(sample.stays.sum())
    other_seen = sample.replay.accesses - trunk_seen
    other_misses = other_seen - (table.sum(axis=1) - on_trunk)
    other_scale = (sample.whole_accesses - sample.trunk_accesses) / other_seen if other_seen else 0.0
    trunk_misses = np.maximum(0, trunk_seen - on_trunk - sample.trunk_kept)
    trunk_scale = sample.trunk_accesses / trunk_seen if trunk_seen else 0.0
    misses = other_misses * other_scale + sample.trunk + trunk_misses * trunk_scale
    return np.clip(1 - misses / sample.whole_accesses, 0.0, 1.0)


def _prefix_curve(
    sample: RequestSample, policies: Iterable[str], caps: list, scaled: list, replayed: Callable[[], None]
) -> pd.DataFrame:
    """Each policy's estimated curve: ``policy, capacity, hits, accesses, hit_ratio`` at the asked capacities
    (``replayed()`` after each policy's replay)."""
    total = sample.whole_accesses
    parts = []
    for policy in parse_policies(policies):
        ratio = estimate(sample, hits_table(sample.replay, policy, scaled))
        parts.append(
            pd.DataFrame(
                {
                    "policy": policy,
                    "capacity": np.array(caps, dtype=float),
                    "hits": np.round(ratio * total).astype(np.int64),
                    "accesses": total,
                    "hit_ratio": ratio,
                }
            )
        )
        replayed()
    return pd.concat(parts, ignore_index=True)


def _rescale(swept: pd.DataFrame, caps: list, sample: RequestSample) -> pd.DataFrame:
    """A block sweep of the sample as the whole trace's: capacities back to the asked ones, hits
    to the trace's accesses at the sample's ratio."""
    out = swept.copy()
    total = sample.whole_accesses
    out["capacity"] = np.tile(np.array(caps, dtype=float), len(out) // len(caps))
    for column in ("hits", "prefix_hits"):
        out[column] = np.round(out[column] / out["accesses"] * total).astype(np.int64)
    out["accesses"] = total
    return out


def _spread(
    trace: Trace,
    replay: PrefixReplay,
    policies,
    caps: list,
    rate: float,
    first: pd.Series,
    replayed: Callable[[], None],
) -> np.ndarray:
    """``SPREAD_Z`` standard deviations of the estimates of the first sample (``first``) and the
    other ``REPLICAS - 1`` bands at ``rate``; NaN when fewer than two bands hold a request."""
    curves = [first.to_numpy()]
    for band in range(1, REPLICAS):
        try:
            other = sample_requests(trace, rate, band, replay)
        except InputError:  # this band holds no request: its replays are done, as nothing
            for _ in parse_policies(policies):
                replayed()
            continue
        scaled = [other.sampled_capacity(c) for c in caps]
        curves.append(_prefix_curve(other, policies, caps, scaled, replayed)["hit_ratio"])
    if len(curves) < 2:
        return np.full(len(first), np.nan)
    return SPREAD_Z * np.std(curves, axis=0, ddof=1)


def block_replay(sample: RequestSample) -> Replay:
    """The same sampled requests as a block-cache replay (their prefix nodes are the block ids)."""
    r = sample.replay
    return Replay(r.nodes, r.n_nodes, r.offsets, r.timestamps_ms, r.block_size)


def sampled_runs(policies, block_policies=()) -> int:
    """The runs a sampled sweep makes: each policy on each of ``REPLICAS`` samples, then the block sweep."""
    return REPLICAS * len(parse_policies(policies)) + (1 if block_policies else 0)


def sampled_sweep(
    trace: Trace,
    policies,
    capacities,
    rate: float,
    block_policies=(),
    progress: Callable[[int, int], None] | None = None,
) -> SampledCurves:
    """Prefix curve (and block sweep for ``block_policies``) estimated on one request sample:
    capacities scaled as ``RequestSample.sampled_capacity``, misses split at the trunk (``estimate``),
    hits scaled to the whole trace. Capacities the sample does not represent are dropped (a few
    blocks would decide). Each row's ``error_estimate`` is ``SPREAD_Z`` standard deviations of the
    estimates of ``REPLICAS`` disjoint samples at the same rate (this one and the next bands).
    ``progress(done, total)`` is told after each run (``sampled_runs``: a policy on a sample, the block sweep)."""
    total, done = sampled_runs(policies, block_policies), [0]

    def replayed() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    replay = prepare(trace)
    sample = sample_requests(trace, rate, replay=replay)
    caps, scaled = _scaled(list(capacities), sample)
    prefix = _prefix_curve(sample, policies, caps, scaled, replayed)
    prefix["error_estimate"] = _spread(trace, replay, policies, caps, rate, prefix["hit_ratio"], replayed)
    block = None
    if block_policies:
        block = _rescale(block_sweep(block_replay(sample), block_policies, scaled), caps, sample)
        replayed()
    return SampledCurves(prefix, block, sample, tuple(caps))


@dataclass(frozen=True)
class SampledCurves:
    """A request sample's curves, at the whole trace's scale, and the capacities they represent."""

    prefix: pd.DataFrame  # policy, capacity, hits, accesses, hit_ratio, error_estimate
    block: pd.DataFrame | None  # kvviz.eviction.replay.sweep's columns, the sample's own ratio
    sample: RequestSample
    capacities: tuple
