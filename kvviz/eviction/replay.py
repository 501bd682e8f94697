"""Block-cache replay: hit ratio against capacity for eight eviction policies.

A trace's block accesses (request after request, each request's hash ids in order) go through a
cache of C blocks. Every access looks its block up; a miss inserts it, evicting by the policy
when the cache is full. **Hit ratio = block hits / block accesses.** In **prefix mode** an access
counts only while every earlier block of its request hit (what a prefix cache can reuse), over
the same denominator.

The policies and their exact rules live in ``kvviz.eviction.policies`` (their names and labels in
``kvviz.eviction.grid``); they agree hit for hit with libCacheSim 0.3.5 (LRU, FIFO, LFU, SIEVE,
ARC, S3-FIFO, Belady), which the tests use as the oracle. Mooncake v3 §4.2 (Table 1) compares
LRU, LFU and its LengthAwareCache on its trace (``kvviz.eviction.curves``).

Speed comes from the structure of the problem: the trace is prepared once (dense block ids,
next-use times, block depths), LRU's whole curve comes from one pass of stack distances
(Mattson et al. 1970), and the other simulations are compiled loops run one per core.
``counts`` gives an exact curve without pandas (the ``hitcurve`` command's path, whose time is
mostly start-up); the DataFrame functions import it when called. A sampled curve is
``kvviz.eviction.shards``, which replays its sample here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from kvviz.common.errors import require
from kvviz.common.jit import frozen
from kvviz.eviction.curves import Count, curve_of, nice_window
from kvviz.eviction.grid import MAX_ACCESSES, POLICIES, parse_capacities, parse_capacity, parse_policies
from kvviz.eviction.policies.arc import arc_hits
from kvviz.eviction.policies.belady import belady_hits
from kvviz.eviction.policies.counting import hits_per_request, prefix_hits
from kvviz.eviction.policies.fifo import fifo_hits
from kvviz.eviction.policies.lfu import length_aware_hits, lfu_hits
from kvviz.eviction.policies.lru import lru_hits_from_distances
from kvviz.eviction.policies.s3fifo import s3fifo_hits
from kvviz.eviction.policies.sieve import sieve_hits
from kvviz.hiradix.ids import dense_block_ids
from kvviz.traces import Trace
from kvviz.traces.reuse import stack_distances_of_ids

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Replay:
    """A trace's block-access sequence, prepared once for every policy and capacity.

    ``ids`` are the block ids renumbered densely 0 .. n_ids-1 (so policies index arrays instead
    of hashing), ``depth[i]`` is access i's block index within its request (read off the
    offsets, unless ``depths`` gives them: a sample keeps its accesses' original depths), and
    ``next_use[i]`` the index of the next access to the same block (``len(ids)`` if none).
    Whatever made them, ``ids`` are kept as read-only int32 and ``offsets`` and ``depths`` as read-only
    int64 (``kvviz.common.jit.frozen``), the kinds the policy kernels are compiled for.
    """

    ids: np.ndarray
    n_ids: int
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    block_size: int
    depths: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", frozen(self.ids, np.int32))
        object.__setattr__(self, "offsets", frozen(self.offsets, np.int64))
        if self.depths is not None:
            object.__setattr__(self, "depths", frozen(self.depths, np.int64))

    @property
    def accesses(self) -> int:
        return len(self.ids)

    @cached_property
    def depth(self) -> np.ndarray:
        if self.depths is not None:
            return self.depths
        counts = np.diff(self.offsets)
        return frozen(np.arange(self.accesses, dtype=np.int64) - np.repeat(self.offsets[:-1], counts))

    @cached_property
    def next_use(self) -> np.ndarray:
        nxt = np.full(self.accesses, self.accesses, dtype=np.int64)
        order = np.argsort(self.ids, kind="stable")
        same = self.ids[order[1:]] == self.ids[order[:-1]]
        nxt[order[:-1][same]] = order[1:][same]
        return nxt

    @cached_property
    def most_accesses(self) -> int:
        """How often the most popular block is accessed (bounds every frequency count)."""
        return int(np.bincount(self.ids).max())

    @cached_property
    def seen_before(self) -> np.ndarray:
        """The accesses an infinite cache hits: every access but a block's first."""
        first = np.zeros(self.accesses, dtype=bool)
        first[np.unique(self.ids, return_index=True)[1]] = True
        return ~first

    @cached_property
    def stack_distances(self) -> np.ndarray:
        return stack_distances_of_ids(self.ids, self.n_ids)


HITS: dict[str, Callable[[Replay, int], np.ndarray]] = {
    "lru": lambda r, c: lru_hits_from_distances(r.stack_distances, c),
    "fifo": lambda r, c: fifo_hits(r.ids, r.n_ids, c),
    "lfu": lambda r, c: lfu_hits(r.ids, r.n_ids, c, r.most_accesses),
    "length_aware": lambda r, c: length_aware_hits(r.ids, r.n_ids, c, r.depth),
    "sieve": lambda r, c: sieve_hits(r.ids, r.n_ids, c),
    "arc": lambda r, c: arc_hits(r.ids, r.n_ids, c),
    "s3fifo": lambda r, c: s3fifo_hits(r.ids, r.n_ids, c),
    "belady": lambda r, c: belady_hits(r.ids, r.n_ids, c, r.next_use),
}
"""Each policy's per-access hits on a prepared trace at a finite capacity (the keys are ``POLICIES``)."""


def replay_of(trace: Trace) -> Replay:
    """Prepare a trace for replay; a trace without block ids or accesses is an InputError."""
    require(trace.has_block_ids, "this trace has no block ids (hash_ids): cache replay needs them", field="hash_ids")
    require(len(trace.blocks) > 0, "this trace has no block accesses: it is empty")
    require(
        len(trace.blocks) < MAX_ACCESSES,
        f"{len(trace.blocks):,} block accesses; the simulators take fewer than {MAX_ACCESSES:,}",
    )
    ids = dense_block_ids(trace, np.int32)  # the policies' own width (``MAX_ACCESSES``): half the reads of int64
    return Replay(
        ids,
        int(ids.max()) + 1,
        np.asarray(trace.offsets, dtype=np.int64),
        trace.column("timestamp").astype(np.int64, copy=False),
        trace.block_size,
    )


def coarsen(trace: Trace, factor: int) -> Trace:
    """The same trace seen by a cache whose blocks are ``factor`` trace blocks long.

    Hash ids are chained (block k's id names the whole prefix up to k), so a coarse block is
    named by the id of its last fine block; a request's partial last group is a block too.
    """
    require(
        isinstance(factor, int) and factor >= 1,
        f"block-size factor must be a positive integer, got {factor!r}",
        field="block_size",
    )
    if factor == 1 or not trace.has_block_ids:
        return trace
    counts = np.diff(trace.offsets)
    depth = np.arange(len(trace.blocks)) - np.repeat(trace.offsets[:-1], counts)
    last = np.repeat(counts - 1, counts)
    keep = ((depth + 1) % factor == 0) | (depth == last)
    new_counts = -(-counts // factor)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(new_counts, out=offsets[1:])
    requests = trace.requests.copy()
    requests["n_blocks"] = new_counts
    return Trace(requests, trace.blocks[keep], offsets, trace.block_size * factor, True, trace.name, trace.warnings)


def hit_mask(replay: Replay, policy: str, capacity: float | int) -> np.ndarray:
    """Which accesses hit, for one policy and capacity (``INFINITE`` = never evict). A cache that
    holds every distinct block, and admits them, hits every access but a block's first."""
    name = parse_policies([policy])[0]
    capacity = parse_capacity(capacity)
    if capacity >= replay.n_ids and capacity >= POLICIES[name].admits_below:
        return replay.seen_before
    return HITS[name](replay, int(capacity))


def _count(replay: Replay, policy: str, capacity: float | int) -> Count:
    hit = hit_mask(replay, policy, capacity)
    return Count(policy, capacity, replay.accesses, int(np.count_nonzero(hit)), int(prefix_hits(hit, replay.offsets)))


def counts(
    source: Trace | Replay,
    policies: Iterable[str],
    capacities: Iterable[float | int],
    *,
    progress: Callable[[float], None] | None = None,
    workers: int | None = None,
) -> list[Count]:
    """Hits in both counting modes for every (policy, capacity), policies in the given order and
    capacities ascending. Simulations run on ``workers`` threads (default: one per core) and
    ``progress(fraction_done)`` is called from the calling thread as they finish.
    """
    replay = source if isinstance(source, Replay) else replay_of(source)
    names = parse_policies(policies)
    caps = parse_capacities(capacities)
    jobs = [(p, c) for p in names for c in caps]
    lru = [job for job in jobs if job[0] == "lru"]
    results: dict[tuple[str, float | int], Count] = {}
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # LRU's one pass for its whole curve runs first, beside the other policies; its capacities follow it
        pending = {pool.submit(lambda: replay.stack_distances)} if lru else set()
        pending |= {pool.submit(_count, replay, p, c) for p, c in jobs if p != "lru"}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                result = future.result()
                if not isinstance(result, Count):
                    pending |= {pool.submit(_count, replay, p, c) for p, c in lru}
                    continue
                results[(result.policy, result.capacity)] = result
                if progress is not None:
                    progress(len(results) / len(jobs))
    return [results[job] for job in jobs]


def sweep(
    source: Trace | Replay,
    policies: Iterable[str],
    capacities: Iterable[float | int],
    *,
    progress: Callable[[float], None] | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """``counts`` as a table: columns ``policy, capacity, accesses, hits, prefix_hits``."""
    import pandas as pd

    rows = counts(source, policies, capacities, progress=progress, workers=workers)
    return pd.DataFrame(
        {
            "policy": [r.policy for r in rows],
            "capacity": np.array([r.capacity for r in rows], dtype=float),
            "accesses": np.array([r.accesses for r in rows], dtype=np.int64),
            "hits": np.array([r.hits for r in rows], dtype=np.int64),
            "prefix_hits": np.array([r.prefix_hits for r in rows], dtype=np.int64),
        }
    )


def hit_curve(
    trace: Trace, policies: Iterable[str], capacities: Iterable[float | int], prefix: bool = False
) -> pd.DataFrame:
    """The exact hit ratio against capacity: columns ``policy, capacity, hits, accesses, hit_ratio``.

    ``capacity`` is a float column so that ``inf`` (never evict) fits beside whole numbers. A
    sampled curve is ``kvviz.eviction.shards.sampled_curve``.
    """
    return curve_of(sweep(trace, policies, capacities), prefix)


@dataclass(frozen=True)
class Simulation:
    """One policy at one capacity, request by request."""

    policy: str
    capacity: float | int
    requests: pd.DataFrame  # timestamp (ms), accesses, hits, prefix_hits per request

    @property
    def accesses(self) -> int:
        return int(self.requests["accesses"].sum())

    def hit_ratio(self, prefix: bool = False) -> float:
        hits = self.requests["prefix_hits" if prefix else "hits"].sum()
        return float(hits / self.accesses) if self.accesses else 0.0

    def over_time(self, window_s: float | None = None, prefix: bool = False) -> pd.DataFrame:
        """Hit ratio per time window: columns ``time_s`` (window start), ``accesses``, ``hit_ratio``.

        The default window splits the trace's time span into about 40 windows of a round length.
        """
        ts = self.requests["timestamp"].to_numpy() / 1000.0
        span = float(ts.max() - ts.min()) if len(ts) else 0.0
        window = window_s or nice_window(span)
        require(window > 0, f"window must be positive, got {window}", field="window_s")
        start = (ts - ts.min()) // window * window + ts.min()
        grouped = (
            self.requests.assign(time_s=start).groupby("time_s", sort=True)[["accesses", "hits", "prefix_hits"]].sum()
        )
        hits = grouped["prefix_hits" if prefix else "hits"]
        import pandas as pd

        return pd.DataFrame(
            {
                "time_s": grouped.index.to_numpy(),
                "accesses": grouped["accesses"].to_numpy(),
                "hit_ratio": (hits / grouped["accesses"].where(grouped["accesses"] > 0)).to_numpy(),
            }
        )


def simulate(source: Trace | Replay, policy: str, capacity: float | int) -> Simulation:
    """Replay one policy at one capacity and keep the hits of every request."""
    import pandas as pd

    replay = source if isinstance(source, Replay) else replay_of(source)
    full, prefix = hits_per_request(hit_mask(replay, policy, capacity), replay.offsets)
    frame = pd.DataFrame(
        {"timestamp": replay.timestamps_ms, "accesses": np.diff(replay.offsets), "hits": full, "prefix_hits": prefix}
    )
    return Simulation(parse_policies([policy])[0], parse_capacity(capacity), frame)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) every policy kernel on a tiny trace."""
    tiny = Replay(np.array([0, 1, 0, 2, 1, 0]), 3, np.array([0, 3, 6]), np.zeros(2, dtype=np.int64), 1)
    for name in POLICIES:
        _count(tiny, name, 2)
    _count(tiny, "s3fifo", 20)
