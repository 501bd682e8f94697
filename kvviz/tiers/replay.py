"""One tiered replay: a trace through GPU, DRAM and storage tiers, answered in hits, time and dollars.

:func:`replay` runs the compiled HiCache replay (:mod:`kvviz.tiers.cache`) for the deployment's
capacities, turns each request's hits into its prefill (:mod:`kvviz.tiers.latency`) and queues the
trace's own arrivals on the cluster's replicas. Beside it stand the same trace with no cache and
with GPU memory alone, so every number has its baseline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common.errors import require
from kvviz.prefix_cache.replay import PrefixReplay, parse_policy, prepare, request_hits
from kvviz.tiers import latency
from kvviz.tiers.cache import STATS, tiered_replay
from kvviz.tiers.config import GIB, WRITE_POLICIES, TierConfig
from kvviz.traces import Trace

TIERS = ("gpu", "dram", "ssd", "remote")
REPLAY_ACCESSES_PER_S = 1e6
"""Block accesses one core replays per CPU second through three tiers with every tier evicting
(bench_tiers; each access reaches several per-block arrays, so the replay is bound by memory)."""
QUEUE_STEPS_PER_S = 1e9
"""Replicas the queue scans per CPU second (each request looks for the replica free first; measured
about 2e9 on this machine), so a cluster of many replicas is counted in the work before it runs."""


@dataclass(frozen=True)
class Capacities:
    """Blocks each tier holds across the cluster (a tier larger than the trace's prefixes: all of them)."""

    gpu: int
    dram: int
    storage: int


def block_bytes(cfg: TierConfig, block_size: int) -> float:
    return block_size * cfg.model.kv_bytes_per_token


def to_blocks(gib: float, cfg: TierConfig, block_size: int, n_nodes: int) -> int:
    """Whole blocks that ``gib`` GiB per instance hold across the instances (at most every prefix)."""
    if math.isinf(gib):
        return n_nodes
    return int(min(n_nodes, math.floor(gib * GIB * cfg.instances / block_bytes(cfg, block_size))))


def capacities(cfg: TierConfig, prepared: PrefixReplay) -> Capacities:
    n, bs = prepared.n_nodes, prepared.block_size
    storage = to_blocks(cfg.ssd_gib, cfg, bs, n)
    if cfg.storage == "remote":  # one pool for the cluster, not per instance
        storage = to_blocks(cfg.remote_gib / cfg.instances, cfg, bs, n)
    return Capacities(to_blocks(cfg.hbm_for_kv_gib, cfg, bs, n), to_blocks(cfg.dram_gib, cfg, bs, n), storage)


PREFETCH_FLOOR_TOKENS = 256
"""SGLang 0.5.23's least remaining prompt a storage prefetch is asked for (``prefetch_threshold``, at least a page)."""
LOAD_FLOOR_TOKENS = 10
"""SGLang 0.5.23's least host hit loaded back to the GPU (``load_back_threshold``)."""


def floors(block_size: int) -> tuple[int, int]:
    """The prefetch and load-back floors in blocks of ``block_size`` tokens."""
    return -(-max(PREFETCH_FLOOR_TOKENS, block_size) // block_size), -(-LOAD_FLOOR_TOKENS // block_size)


def tier_hits(
    prepared: PrefixReplay, caps: Capacities, policy: str, write_policy: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Hit blocks per request in (GPU, DRAM, storage), and the tiers' write and eviction counters."""
    out = tiered_replay(  # the prepared arrays are already the one kind the kernel is compiled for
        prepared.nodes,
        prepared.offsets,
        prepared.parent,
        prepared.depth,
        caps.gpu,
        caps.dram,
        caps.storage,
        parse_policy(policy).value,
        WRITE_POLICIES.index(write_policy),
        *floors(prepared.block_size),
    )
    return out[0], out[1], out[2], dict(zip(STATS, map(int, out[3])))


def cost(prepared: PrefixReplay, runs: int, servers: int = 1) -> budget.Cost:
    """The work of ``runs`` tiered replays of this trace queued on ``servers`` replicas, before it starts:
    the block accesses, and each request's scan of the replicas (three queues a replay) as accesses."""
    scans = 3 * len(prepared.input_lengths) * servers * REPLAY_ACCESSES_PER_S / QUEUE_STEPS_PER_S
    return budget.cost(
        "tiered replay",
        (prepared.accesses + scans) * runs,
        "block accesses (the queue's replica scans included)",
        REPLAY_ACCESSES_PER_S,
        "the trace, the sizes tried, or the instances and GPUs",
    )


@dataclass(frozen=True)
class TierResult:
    """A tiered replay's answer. ``requests`` has one row per request (arrival, tokens, hit blocks by
    tier, tokens loaded and recomputed, prefill and TTFT beside no cache and GPU-only)."""

    config: TierConfig
    capacity: Capacities
    requests: pd.DataFrame
    accesses: int
    ceiling_hits: int
    counters: dict[str, int]
    block_size: int

    @property
    def hit_blocks(self) -> dict[str, int]:
        """Blocks served from each tier: found there and used (a lower-tier block recomputed is no hit)."""
        r, bs = self.requests, self.block_size
        used = {
            "gpu": r["gpu_blocks"].sum(),
            "dram": np.ceil(r["loaded_dram_tokens"] / bs).sum(),
            "storage": np.ceil(r["loaded_storage_tokens"] / bs).sum(),
        }
        return self._by_tier(used)

    @property
    def found_blocks(self) -> dict[str, int]:
        """Blocks each tier held when asked, used or recomputed."""
        r = self.requests
        return self._by_tier({t: r[f"{t}_blocks"].sum() for t in ("gpu", "dram", "storage")})

    def _by_tier(self, counts: dict[str, float]) -> dict[str, int]:
        out = {"gpu": int(counts["gpu"]), "dram": int(counts["dram"]), "ssd": 0, "remote": 0}
        out[self.config.storage] = int(counts["storage"])
        return out

    @property
    def hit_ratio(self) -> float:
        return sum(self.hit_blocks.values()) / self.accesses

    @property
    def ceiling_hit_ratio(self) -> float:
        """The infinite cache's hit ratio: every block but its prefix's first use."""
        return self.ceiling_hits / self.accesses

    def ttft(self, column: str = "ttft_s") -> dict[str, float]:
        """p50/p90/p99 of a TTFT column (``ttft_s``, ``ttft_no_cache_s``, ``ttft_gpu_only_s``)."""
        return latency.percentiles(self.requests[column].to_numpy())

    @property
    def prefill_gpu_s(self) -> float:
        """GPU-seconds of prefill (loads included): each replica's time × its GPUs."""
        return float(self.requests["prefill_s"].sum()) * self.config.tp

    @property
    def prefill_gpu_s_no_cache(self) -> float:
        return float(self.requests["prefill_no_cache_s"].sum()) * self.config.tp

    @property
    def input_tokens(self) -> int:
        return int(self.requests["input_tokens"].sum())

    @property
    def tokens_per_gpu_s(self) -> float:
        """Prefill throughput per GPU when busy: input tokens ÷ prefill GPU-seconds."""
        return self.input_tokens / self.prefill_gpu_s if self.prefill_gpu_s > 0 else math.inf

    @property
    def cost_per_hour(self) -> float:
        return self.config.cost_per_hour()

    @property
    def span_s(self) -> float:
        """Seconds from the trace's first arrival to its last."""
        return float(self.requests["arrival_s"].max() - self.requests["arrival_s"].min()) if len(self.requests) else 0.0

    @property
    def offered_load(self) -> float:
        """Prefill work per replica-second the trace asks for (≥ 1: the replicas cannot keep up)."""
        r = self.requests
        return latency.offered_load(self.config, r["arrival_s"].to_numpy(), r["prefill_s"].to_numpy())

    @property
    def instances_needed(self) -> int:
        """The fewest instances that bring the offered load under 1 at this replay's prefill times."""
        return (
            max(1, math.floor(self.offered_load * self.config.instances) + 1) if math.isfinite(self.offered_load) else 0
        )

    @property
    def cost_per_million_input_tokens(self) -> float:
        """Dollars per million input tokens at the trace's own rate: the cluster's $/h ÷ the trace's
        input tokens per hour (its span), whatever share of the time the GPUs are busy."""
        per_hour = self.input_tokens / self.span_s * 3600 if self.span_s > 0 else math.nan
        return self.cost_per_hour / per_hour * 1e6 if per_hour > 0 else math.nan

    @property
    def cost_per_million_input_tokens_fully_busy(self) -> float:
        """Dollars per million input tokens if every GPU prefilled all the time at this replay's throughput."""
        per_hour = self.tokens_per_gpu_s * self.config.total_gpus * 3600
        return self.cost_per_hour / per_hour * 1e6 if per_hour > 0 else math.nan

    def warnings(self) -> list[str]:
        """What a reader must know before reading the numbers: the deployment's own warnings, and an
        overload (the instances cannot prefill the trace as fast as it arrives)."""
        out = self.config.warnings()
        load = self.offered_load
        if load >= 1:
            n = self.config.instances
            needed = f"at least {self.instances_needed:,} instances" if math.isfinite(load) else "more instances"
            out.append(
                f"overloaded: the trace asks for {load:,.2f} times the prefill the {n:,} instance(s) can do, so "
                f"requests wait longer and longer and the TTFTs measure the backlog; at these hit ratios it needs "
                f"{needed} of {self.config.gpus} GPU(s) to keep up"
            )
        return out

    def tokens(self) -> dict[str, int]:
        """Tokens loaded from each lower tier, lower-tier hits recomputed, tokens computed."""
        r = self.requests
        return {
            "loaded_dram": int(r["loaded_dram_tokens"].sum()),
            f"loaded_{self.config.storage}": int(r["loaded_storage_tokens"].sum()),
            "recomputed_hits": int(r["recomputed_hit_tokens"].sum()),
            "computed": int(r["computed_tokens"].sum()),
        }

    def summary(self) -> dict[str, object]:
        """The answer as JSON-ready values (the CLI's output)."""
        choices = np.bincount(self.requests["choice"], minlength=len(latency.LOAD_CHOICES))
        return {
            "requests": len(self.requests),
            "accesses": self.accesses,
            "capacity_blocks": {
                "gpu": self.capacity.gpu,
                "dram": self.capacity.dram,
                self.config.storage: self.capacity.storage,
            },
            "hit_blocks": self.hit_blocks,
            "hit_ratio": self.hit_ratio,
            "ceiling_hit_ratio": self.ceiling_hit_ratio,
            "tokens": self.tokens(),
            "requests_by_start": dict(zip(latency.LOAD_CHOICES, map(int, choices))),
            "ttft_s": self.ttft(),
            "ttft_no_cache_s": self.ttft("ttft_no_cache_s"),
            "ttft_gpu_only_s": self.ttft("ttft_gpu_only_s"),
            "warnings": self.warnings(),
            "found_blocks": self.found_blocks,
            "offered_load": self.offered_load,
            "prefill_gpu_s": self.prefill_gpu_s,
            "prefill_gpu_s_saved": self.prefill_gpu_s_no_cache - self.prefill_gpu_s,
            "tokens_per_gpu_s": self.tokens_per_gpu_s,
            "cost_per_hour": self.cost_per_hour,
            "cost_per_million_input_tokens": self.cost_per_million_input_tokens,
            "cost_per_million_input_tokens_fully_busy": self.cost_per_million_input_tokens_fully_busy,
            "input_tokens_per_hour": self.input_tokens / self.span_s * 3600 if self.span_s > 0 else None,
            "tier_counters": self.counters,
            "deployment": self.config.describe(),
        }


def _prepared(source: Trace | PrefixReplay) -> PrefixReplay:
    return source if isinstance(source, PrefixReplay) else prepare(source)


def replay(source: Trace | PrefixReplay, config: TierConfig, *, baselines: bool = True) -> TierResult:
    """Replay ``source`` through ``config``'s tiers; with ``baselines``, also with GPU memory alone (the
    prefix replay) and with no cache (no replay), else those columns repeat this replay's."""
    prepared = _prepared(source)
    require(isinstance(config, TierConfig), "config must be a TierConfig", field="config")
    budget.check(cost(prepared, 2 if baselines else 1, config.servers))
    caps = capacities(config, prepared)
    gpu, dram, storage, counters = tier_hits(prepared, caps, config.policy, config.write_policy)
    tokens = prepared.input_lengths
    arrivals = (prepared.timestamps_ms - prepared.timestamps_ms.min(initial=0)) / 1000.0
    served = latency.serve(config, prepared.block_size, arrivals, tokens, (gpu, dram, storage))
    none = latency.compute_only(config, tokens, np.zeros_like(tokens))
    frame = pd.DataFrame(
        {
            "arrival_s": arrivals,
            "input_tokens": tokens,
            "gpu_blocks": gpu,
            "dram_blocks": dram,
            "storage_blocks": storage,
            "choice": served.choice,
            "loaded_dram_tokens": served.dram_tokens,
            "loaded_storage_tokens": served.storage_tokens,
            "recomputed_hit_tokens": served.recomputed_hit_tokens,
            "computed_tokens": served.computed_tokens,
            "prefill_s": served.service_s,
            "prefill_no_cache_s": none,
            "ttft_s": served.ttft_s,
            "ttft_no_cache_s": latency.ttft(config, arrivals, none),
        }
    )
    frame["ttft_gpu_only_s"] = frame["ttft_s"]
    if baselines:  # GPU memory alone is the prefix replay: host copies change what the GPU keeps
        alone = request_hits(prepared, config.policy, caps.gpu)
        cached = np.minimum(alone * prepared.block_size, tokens)
        frame["ttft_gpu_only_s"] = latency.ttft(config, arrivals, latency.compute_only(config, tokens, cached))
    ceiling = int(prepared.seen_before.sum())
    return TierResult(config, caps, frame, prepared.accesses, ceiling, counters, prepared.block_size)
