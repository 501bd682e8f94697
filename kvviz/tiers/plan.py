"""What to buy: the capacity of each tier that reaches a share of the ceiling, and the cheapest mix
that meets a TTFT target.

* **Reaches** are found by bisection on the replay itself, to the block: the smallest capacity of
  one tier (the tiers above it as deployed, those below it empty) whose hits reach 80/90/95% of
  the infinite cache's. A radix cache's hit curve can dip as it grows (LRU is not a stack
  algorithm on a tree), so where it is not monotone the answer is a capacity where it crosses.
* **The mix**: a grid of DRAM and storage sizes, one independent replay each, run on a local
  process pool or a Ray cluster (:mod:`kvviz.tiers.pool`); the cheapest size that meets the
  TTFT-p90 target, and the cost–TTFT Pareto front of the sizes tried.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common.errors import require
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.tiers.config import GIB, TierConfig
from kvviz.tiers.pool import check_address, run_points
from kvviz.tiers.replay import Capacities, block_bytes, capacities, cost, tier_hits
from kvviz.traces import Trace

SHARES = (0.8, 0.9, 0.95)
GRID_COLUMNS = ("dram_gib", "storage_gib", "cost_per_hour", "hit_ratio", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s")
MAX_POINTS = 400


@dataclass(frozen=True)
class Reach:
    """The capacity of ``tier`` at which the hits first reach ``share`` of the ceiling (None: never)."""

    tier: str
    share: float
    blocks: int | None
    gib: float | None
    cost_per_hour: float | None


@dataclass(frozen=True)
class Plan:
    """The search's answer: the reaches, every size tried, the cheapest that meets the target."""

    config: TierConfig
    target_p90_s: float
    reaches: tuple[Reach, ...]
    grid: pd.DataFrame
    replays: int

    @property
    def front(self) -> pd.DataFrame:
        """The sizes no other beats on both cost and TTFT p90 (cheapest first)."""
        return pareto_front(self.grid)

    @property
    def best(self) -> pd.Series | None:
        """The cheapest size whose TTFT p90 meets the target (None: none does)."""
        ok = self.grid[self.grid["ttft_p90_s"] <= self.target_p90_s]
        return None if ok.empty else ok.sort_values(["cost_per_hour", "ttft_p90_s"]).iloc[0]

    def summary(self) -> dict[str, object]:
        best = self.best
        return {
            "target_p90_ttft_s": self.target_p90_s,
            "reaches": [r.__dict__ for r in self.reaches],
            "best": None if best is None else {k: plain(v) for k, v in best.items()},
            "pareto_front": [{k: plain(v) for k, v in row.items()} for _, row in self.front.iterrows()],
            "sizes_tried": len(self.grid),
            "replays": self.replays,
            "deployment": self.config.describe(),
        }


def plain(value: object) -> object:
    """A numpy scalar as the Python number it holds, for JSON."""
    return value.item() if isinstance(value, np.generic) else value


def pareto_front(grid: pd.DataFrame) -> pd.DataFrame:
    """Rows not dominated in (cost_per_hour, ttft_p90_s): each is faster than every cheaper one."""
    rows = grid.sort_values(["cost_per_hour", "ttft_p90_s"])
    best = math.inf
    keep = []
    for i, p90 in zip(rows.index, rows["ttft_p90_s"]):
        if p90 < best:
            keep.append(i)
            best = p90
    return rows.loc[keep].reset_index(drop=True)


def smallest_reaching(hits: Callable[[int], int], target: float, lo: int, hi: int) -> int | None:
    """The smallest capacity in ``lo..hi`` with ``hits(c) >= target``, by bisection (None: not even ``hi``)."""
    if hits(hi) < target:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if hits(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _tier_hits(
    prepared: PrefixReplay, config: TierConfig, tier: int, replayed: Callable[[int], object]
) -> Callable[[int], int]:
    """Total hits with tier ``tier`` (0 GPU, 1 DRAM, 2 storage) at c blocks, the tiers above as
    deployed and those below empty; remembered, since bisection asks again (``replayed(n)`` after
    each of its n replays)."""
    deployed = capacities(config, prepared)
    memo: dict[int, int] = {}

    def hits(c: int) -> int:
        if c not in memo:
            caps = [deployed.gpu, deployed.dram, deployed.storage][:tier] + [c] + [0] * (2 - tier)
            gpu, dram, storage, _ = tier_hits(prepared, Capacities(*caps), config.policy, config.write_policy)
            memo[c] = int(gpu.sum() + dram.sum() + storage.sum())
            replayed(len(memo))
        return memo[c]

    hits.memo = memo  # type: ignore[attr-defined]
    return hits


Counter = Callable[[int, int | None], None]
"""``progress(done, total)``: replays done, of at most ``total``."""


def reaches(
    prepared: PrefixReplay,
    config: TierConfig,
    shares: Sequence[float] = SHARES,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Reach], int]:
    """Each tier's capacity reaching each share of the ceiling, and the replays it took (``progress(replays)``
    is told after each)."""
    ceiling = int(prepared.seen_before.sum())
    per_block = block_bytes(config, prepared.block_size)
    out, runs = [], 0
    tell = progress or (lambda done: None)
    for tier, name in enumerate(("gpu", "dram", config.storage)):
        hits = _tier_hits(prepared, config, tier, lambda n, before=runs: tell(before + n))
        lo = 0
        for share in sorted(shares):
            c = smallest_reaching(hits, share * ceiling, lo, prepared.n_nodes)
            lo = c if c is not None else lo
            gib = None if c is None else c * per_block / GIB / config.instances
            out.append(Reach(name, share, c, gib, None if gib is None else _tier_cost(config, name, gib)))
        runs += len(hits.memo)  # type: ignore[attr-defined]
    return out, runs


def _tier_cost(config: TierConfig, tier: str, gib: float) -> float:
    """Dollars per hour of ``gib`` GiB per instance of one tier (GPU memory as the GPU-hours it comes with)."""
    p = config.prices
    if tier == "gpu":
        return gib * p.hbm_per_gib_hour(config.gpu) * config.instances
    per_gb = {"dram": p.dram_per_gb_hour, "ssd": p.ssd_per_tb_hour / 1000, "remote": p.remote_per_gb_hour}[tier]
    return gib * GIB / 1e9 * per_gb * config.instances


def default_sizes(prepared: PrefixReplay, config: TierConfig) -> tuple[list[float], list[float]]:
    """DRAM and storage sizes to try (GiB per instance): none, then fractions of the trace's whole
    KV footprint split over the instances, the largest holding all of it."""
    footprint = prepared.n_nodes * block_bytes(config, prepared.block_size) / GIB / config.instances
    dram = [0.0] + [round(footprint * f, 3) for f in (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1)]
    storage = [0.0] + [round(footprint * f, 3) for f in (1 / 4, 1 / 2, 1)]
    return dram, storage


def search_replays(prepared: PrefixReplay, points: int, shares: Sequence[float] = SHARES) -> int:
    """The replays a search runs at most: two for each of ``points`` sizes tried, and a bisection over
    the trace's nodes for each tier and share (bounds included)."""
    return 2 * points + 3 * (2 + len(shares) * math.ceil(math.log2(prepared.n_nodes + 1)))


def plan(
    source: Trace | PrefixReplay,
    config: TierConfig,
    target_p90_s: float,
    *,
    dram_sizes: Sequence[float] | None = None,
    storage_sizes: Sequence[float] | None = None,
    shares: Sequence[float] = SHARES,
    ray_address: str | None = None,
    workers: int | None = None,
    progress: Counter | None = None,
) -> Plan:
    """Search the tier sizes for ``config``'s trace: reaches by bisection, then the grid of DRAM ×
    storage sizes (GiB per instance) replayed on a process pool, or on Ray at ``ray_address``.
    ``progress(done, total)`` is told after each bisection's replay (of the most the bisections take
    and the grid's points), before the grid (the total then exact) and when it is done."""
    check_address(ray_address)
    prepared = source if isinstance(source, PrefixReplay) else prepare(source)
    require(
        math.isfinite(target_p90_s) and target_p90_s > 0,
        f"the TTFT target must be > 0 s, got {target_p90_s}",
        field="target_p90_ttft",
    )
    defaults = default_sizes(prepared, config)
    dram = list(defaults[0] if dram_sizes is None else dram_sizes)
    storage = list(defaults[1] if storage_sizes is None else storage_sizes)
    points = len(dram) * len(storage)
    require(1 <= points <= MAX_POINTS, f"{points} sizes to try; give between 1 and {MAX_POINTS}", field="sizes")
    key = "remote_gib" if config.storage == "remote" else "ssd_gib"
    configs = [config.with_sizes(dram_gib=d, **{key: s}) for d in dram for s in storage if d > 0 or s == 0]
    require(
        bool(configs),
        "nothing to search: every size pairs storage with no host DRAM, and storage is written from host memory; "
        "give a DRAM size above 0",
        field="dram_sizes",
    )
    budget.check(cost(prepared, search_replays(prepared, points, shares), config.servers))
    bound = search_replays(prepared, 0, shares) + len(configs)  # the bisections' most, then the grid
    tell = progress or (lambda done, total: None)
    found, runs = reaches(prepared, config, shares, lambda done: tell(done, bound))
    tell(runs, runs + len(configs))
    rows = run_points(prepared, configs, ray_address=ray_address, workers=workers)
    tell(runs + len(configs), runs + len(configs))
    grid = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    return Plan(config, float(target_p90_s), tuple(found), grid, runs + len(configs))
