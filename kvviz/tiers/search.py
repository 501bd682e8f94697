"""The cheapest deployment that meets a TTFT target: instances, GPUs per instance, host DRAM and SSD,
each in sizes one can buy, found exactly on those steps.

The steps (``Steps``): host DRAM per instance in whole DIMMs (32 GiB each, up to 64: 2 TiB a
server), SSD per instance in whole drives (3.84 TB NVMe, up to 8 bays; each
drive adds its read bandwidth), instances from one up, and the GPUs per instance given. A step of
DRAM past the trace's whole footprint holds nothing more (the replay is the same, the price
higher), so DRAM stops at the first step that holds every prefix of the trace.

The search is exact on these steps without assuming that more memory is faster (a radix cache's hit
curve can dip, a slow load can cost more than it saves):

1. Every candidate is taken in order of its cost per hour (a merge over the instance counts), so the
   first that meets the targets is the cheapest that does; candidates of equal cost are all replayed
   and the fastest of them kept.
2. A candidate is replayed only if a lower bound does not already rule it out: each request's
   prefill is at least the compute of what an infinite cache would not hold, and a first-come
   first-served queue never finishes a request later when every service is shorter. That bound,
   queued on the candidate's replicas, is one cheap pass per instance count; an instance count whose
   bound misses the target is skipped without a replay.

``plan`` (:mod:`kvviz.tiers.plan`) keeps the grid of sizes given by hand and each tier's reaches.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common.errors import InputError, require
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.tiers import latency
from kvviz.tiers.config import GIB, TierConfig
from kvviz.tiers.plan import plain, smallest_reaching
from kvviz.tiers.replay import block_bytes, cost, replay
from kvviz.traces import Trace

TB = 1e12
COLUMNS = (
    "instances",
    "gpus",
    "dram_gib",
    "storage_gib",
    "ssd_tb",
    "ssd_drives",
    "cost_per_hour",
    "cost_per_instance_hour",
    "hit_ratio",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "meets",
)
MAX_INSTANCES = 4096
MAX_REPLAYS = 400


@dataclass(frozen=True)
class Steps:
    """The sizes one can buy: DRAM per instance in DIMMs, SSD per instance in drives."""

    dimm_gib: float = 32.0
    dimm_slots: int = 64
    drive_tb: float = 3.84
    drive_bays: int = 8

    @property
    def drive_gib(self) -> float:
        return self.drive_tb * TB / GIB

    def describe(self) -> str:
        return (
            f"host DRAM in {self.dimm_gib:g} GiB DIMMs (up to {self.dimm_slots} a server), SSD in "
            f"{self.drive_tb:g} TB NVMe drives (up to {self.drive_bays} a server, each adding its bandwidth)"
        )


STEPS = Steps()
"""The default steps: 32 GiB DIMMs, 3.84 TB drives."""


@dataclass(frozen=True)
class Targets:
    """TTFT p90 to meet, and p99 when given (seconds)."""

    p90_s: float
    p99_s: float | None = None

    def __post_init__(self):
        for name, value in (("p90", self.p90_s), ("p99", self.p99_s)):
            ok = value is None and name == "p99" or (value is not None and math.isfinite(value) and value > 0)
            require(ok, f"the TTFT {name} target must be > 0 s, got {value}", field=f"target_{name}_ttft")

    def met(self, ttft: dict[str, float]) -> bool:
        return ttft["p90"] <= self.p90_s and (self.p99_s is None or ttft["p99"] <= self.p99_s)


def cheapest_meeting(tried: pd.DataFrame) -> pd.Series | None:
    """The row of ``tried`` that meets the targets (``meets``) at the lowest ``cost_per_hour``; at equal
    cost, the fastest (p90, then p99). None when no row meets them."""
    ok = tried[tried["meets"]]
    if ok.empty:
        return None
    cheapest = ok[ok["cost_per_hour"] == ok["cost_per_hour"].min()]
    return cheapest.sort_values(["ttft_p90_s", "ttft_p99_s"]).iloc[0]


@dataclass(frozen=True)
class Found:
    """The search's answer: every deployment replayed (cheapest first), the cheapest meeting the targets."""

    config: TierConfig
    targets: Targets
    steps: Steps
    tried: pd.DataFrame
    skipped: int
    exhausted: bool = field(default=False)

    @property
    def best(self) -> pd.Series | None:
        return cheapest_meeting(self.tried)

    def warnings(self) -> list[str]:
        """The best deployment's own warnings (host DRAM not larger than GPU memory), or that none was found."""
        best = self.best
        if best is None:
            return [
                "no deployment searched meets the targets" + (" before the search's limit" if self.exhausted else "")
            ]
        option = (float(best["dram_gib"]), float(best["storage_gib"]), int(best["ssd_drives"]))
        return _deployment(self.config, int(best["gpus"]), int(best["instances"]), option).warnings()

    def summary(self) -> dict[str, object]:
        best = self.best
        return {
            "warnings": self.warnings(),
            "target_p90_ttft_s": self.targets.p90_s,
            "target_p99_ttft_s": self.targets.p99_s,
            "steps": self.steps.describe(),
            "best": None if best is None else {k: plain(v) for k, v in best.items() if k != "meets"},
            "best_cost_per_hour_is": "the whole cluster's; cost_per_instance_hour is one instance's",
            "replayed": len(self.tried),
            "ruled_out_by_bound": self.skipped,
            "stopped_at_replay_limit": self.exhausted,
            "tried": [{k: plain(v) for k, v in row.items()} for _, row in self.tried.iterrows()],
            "deployment": self.config.describe(),
        }


def lower_bound_ttft(prepared: PrefixReplay, config: TierConfig) -> dict[str, float]:
    """p50/p90/p99 TTFT no cache of any size can beat on ``config``'s replicas: each request's compute of
    what an infinite cache would not hold, queued first come first served."""
    per_request = np.repeat(np.arange(prepared.n_requests), np.diff(prepared.offsets))
    ceiling = np.bincount(per_request, weights=prepared.seen_before, minlength=prepared.n_requests)
    service = latency.compute_only(config, prepared.input_lengths, ceiling * prepared.block_size)
    arrivals = (prepared.timestamps_ms - prepared.timestamps_ms.min(initial=0)) / 1000.0
    return latency.percentiles(latency.ttft(config, arrivals, service))


def per_instance_options(
    prepared: PrefixReplay, config: TierConfig, steps: Steps, instances: int
) -> list[tuple[float, float, int]]:
    """(DRAM GiB, SSD GiB, drives) per instance for ``instances``, cheapest first: DRAM up to the first
    step holding the trace's footprint; SSD only with DRAM (it is written from host memory)."""
    footprint = prepared.n_nodes * block_bytes(config, prepared.block_size) / GIB / instances
    dimms = min(steps.dimm_slots, math.ceil(footprint / steps.dimm_gib))
    out = [(0.0, 0.0, 1)]
    for k in range(1, dimms + 1):
        out += [(k * steps.dimm_gib, j * steps.drive_gib, max(j, 1)) for j in range(steps.drive_bays + 1)]
    return sorted(out, key=lambda o: (_instance_cost(config, o), o))


def _instance_cost(config: TierConfig, option: tuple[float, float, int]) -> float:
    return replace(config, instances=1, dram_gib=option[0], ssd_gib=option[1], ssd_drives=option[2]).cost_per_hour()


def _deployment(config: TierConfig, gpus: int, instances: int, option: tuple[float, float, int]) -> TierConfig:
    """``config`` with these GPUs per instance (one replica of them all, unless its tensor-parallel size is
    smaller than its GPUs), instances and sizes per instance."""
    tp = gpus if config.tp == config.gpus else config.tp
    return replace(
        config, gpus=gpus, tp=tp, instances=instances, dram_gib=option[0], ssd_gib=option[1], ssd_drives=option[2]
    )


def search(
    source: Trace | PrefixReplay,
    config: TierConfig,
    targets: Targets,
    *,
    gpus: Sequence[int] | None = None,
    instances: Sequence[int] | None = None,
    steps: Steps = STEPS,
    max_replays: int = MAX_REPLAYS,
    progress: Callable[[int, int | None], None] | None = None,
) -> Found:
    """The cheapest deployment of ``config``'s model and GPU meeting ``targets``: instances (``instances``,
    default 1 to 4,096), GPUs per instance (``gpus``, default the config's), DRAM and SSD on ``steps``.
    ``progress(replays, None)`` is told after each replay (how many the search takes is not known
    before it finds its answer)."""
    prepared = source if isinstance(source, PrefixReplay) else prepare(source)
    require(
        config.storage == "ssd", "the search buys SSD drives: size a remote pool with explicit sizes", field="remote"
    )
    counts = sorted(set(instances or range(1, MAX_INSTANCES + 1)))
    shapes = sorted(set(gpus or [config.gpus]))
    if config.tp != config.gpus:
        bad = [g for g in shapes if g % config.tp]
        if bad:
            raise InputError(f"tp ({config.tp}) must divide every GPU count searched, not {bad[0]}", field="tp")
    budget.check(cost(prepared, 1, max(counts) * max(shapes) // config.tp if config.tp != config.gpus else max(counts)))
    heap, skipped, bounds = [], 0, {}
    for g in shapes:
        n_at = _first_count(prepared, config, g, counts, targets, bounds)
        skipped += n_at
        if n_at < len(counts):
            options = per_instance_options(
                prepared, _deployment(config, g, counts[n_at], (0, 0, 1)), steps, counts[n_at]
            )
            heapq.heappush(
                heap, (counts[n_at] * _instance_cost(_deployment(config, g, 1, options[0]), options[0]), g, n_at, 0)
            )
    rows, best_cost, exhausted, work_s = [], math.inf, False, 0.0
    option_cache: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    while heap:
        price, g, i, p = heapq.heappop(heap)
        if price > best_cost:
            break
        n = counts[i]
        work_s += cost(prepared, 1, n * (g // (config.tp if config.tp != config.gpus else g))).seconds
        if len(rows) >= max_replays or work_s > budget.LIMIT_S:
            exhausted = True
            break
        options = option_cache.setdefault(
            (g, n), per_instance_options(prepared, _deployment(config, g, n, (0, 0, 1)), steps, n)
        )
        deployment = _deployment(config, g, n, options[p])
        result = replay(prepared, deployment, baselines=False)
        ttft = result.ttft()
        rows.append(_row(deployment, result.hit_ratio, ttft, targets.met(ttft)))
        if progress is not None:
            progress(len(rows), None)
        if rows[-1][-1]:
            best_cost = price
        if p + 1 < len(options):
            heapq.heappush(heap, (n * _instance_cost(deployment, options[p + 1]), g, i, p + 1))
        if p == 0 and i + 1 < len(counts):
            nxt = counts[i + 1]
            first = per_instance_options(prepared, _deployment(config, g, nxt, (0, 0, 1)), steps, nxt)[0]
            heapq.heappush(heap, (nxt * _instance_cost(_deployment(config, g, 1, first), first), g, i + 1, 0))
    tried = pd.DataFrame(rows, columns=list(COLUMNS))
    return Found(config, targets, steps, tried, skipped, exhausted)


def _first_count(
    prepared: PrefixReplay, config: TierConfig, gpus: int, counts: list[int], targets: Targets, bounds: dict
) -> int:
    """Index of the fewest instances whose lower bound meets the targets (``len(counts)``: none does).
    The bound only falls as instances are added (more replicas, same services), so bisection finds it."""

    def meets(i: int) -> int:
        key = (gpus, counts[i])
        if key not in bounds:
            bounds[key] = lower_bound_ttft(prepared, _deployment(config, gpus, counts[i], (0, 0, 1)))
        return int(targets.met(bounds[key]))

    found = smallest_reaching(meets, 1, 0, len(counts) - 1)
    return len(counts) if found is None else found


def _row(config: TierConfig, hit_ratio: float, ttft: dict[str, float], meets: bool) -> tuple:
    per_instance = replace(config, instances=1).cost_per_hour()
    return (
        config.instances,
        config.gpus,
        config.dram_gib,
        config.ssd_gib,
        round(config.ssd_gib * GIB / TB, 6),
        config.ssd_drives,
        config.cost_per_hour(),
        per_instance,
        hit_ratio,
        ttft["p50"],
        ttft["p90"],
        ttft["p99"],
        meets,
    )


def refuse_nothing_to_search(points: int, what: str) -> None:
    """One message when a search has nothing to try."""
    if points == 0:
        raise InputError(f"nothing to search: {what}", field="sizes")
