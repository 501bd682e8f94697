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
from kvviz.prefix_cache.replay import PrefixReplay, parse_policy, prepare
from kvviz.tiers import latency
from kvviz.tiers.cache import STATS, tiered_replay
from kvviz.tiers.config import GIB, WRITE_POLICIES, TierConfig
from kvviz.traces import Trace

TIERS = ("gpu", "dram", "ssd", "remote")
REPLAY_ACCESSES_PER_S = 1e6
"""Block accesses one core replays per CPU second through three tiers with every tier evicting
(bench_tiers; each access reaches several per-block arrays, so the replay is bound by memory)."""


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


def tier_hits(
    prepared: PrefixReplay, caps: Capacities, policy: str, write_policy: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Hit blocks per request in (GPU, DRAM, storage), and the tiers' write and eviction counters."""
    arrays = (prepared.nodes, prepared.offsets, prepared.parent, prepared.depth, prepared.insert_counts)
    out = tiered_replay(
        *map(_read_only, arrays),
        caps.gpu,
        caps.dram,
        caps.storage,
        parse_policy(policy).value,
        WRITE_POLICIES.index(write_policy),
    )
    return out[0], out[1], out[2], dict(zip(STATS, map(int, out[3])))


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``. numba compiles a kernel once per argument type, and a read-only
    array, as a Ray worker receives the trace, is a type of its own: passing views of one kind from
    every caller compiles the tiered replay once, not once more on each Ray worker."""
    view = array.view()
    view.flags.writeable = False
    return view


def cost(prepared: PrefixReplay, runs: int) -> budget.Cost:
    """The work of ``runs`` tiered replays of this trace, before it starts."""
    return budget.cost(
        "tiered replay",
        prepared.accesses * runs,
        "block accesses",
        REPLAY_ACCESSES_PER_S,
        "the trace or the sizes tried",
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

    @property
    def hit_blocks(self) -> dict[str, int]:
        r = self.requests
        storage = int(r["storage_blocks"].sum())
        out = {"gpu": int(r["gpu_blocks"].sum()), "dram": int(r["dram_blocks"].sum()), "ssd": 0, "remote": 0}
        out[self.config.storage] = storage
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
    def cost_per_million_input_tokens(self) -> float:
        """Dollars per million input tokens with every GPU prefilling at this replay's throughput."""
        per_hour = self.tokens_per_gpu_s * self.config.total_gpus * 3600
        return self.cost_per_hour / per_hour * 1e6 if per_hour > 0 else math.nan

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
            "prefill_gpu_s": self.prefill_gpu_s,
            "prefill_gpu_s_saved": self.prefill_gpu_s_no_cache - self.prefill_gpu_s,
            "tokens_per_gpu_s": self.tokens_per_gpu_s,
            "cost_per_hour": self.cost_per_hour,
            "cost_per_million_input_tokens": self.cost_per_million_input_tokens,
            "tier_counters": self.counters,
            "deployment": self.config.describe(),
        }


def _prepared(source: Trace | PrefixReplay) -> PrefixReplay:
    return source if isinstance(source, PrefixReplay) else prepare(source)


def replay(source: Trace | PrefixReplay, config: TierConfig, *, baselines: bool = True) -> TierResult:
    """Replay ``source`` through ``config``'s tiers; with ``baselines``, also with GPU memory alone
    and with no cache (neither needs another replay), else those columns repeat this replay's."""
    prepared = _prepared(source)
    require(isinstance(config, TierConfig), "config must be a TierConfig", field="config")
    budget.check(cost(prepared, 1))
    caps = capacities(config, prepared)
    gpu, dram, storage, counters = tier_hits(prepared, caps, config.policy, config.write_policy)
    tokens = prepared.input_lengths
    starts = latency.prefills(config, prepared.block_size, tokens, (gpu, dram, storage))
    arrivals = (prepared.timestamps_ms - prepared.timestamps_ms.min(initial=0)) / 1000.0
    none = latency.compute_only(config, tokens, np.zeros_like(tokens))
    frame = pd.DataFrame(
        {
            "arrival_s": arrivals,
            "input_tokens": tokens,
            "gpu_blocks": gpu,
            "dram_blocks": dram,
            "storage_blocks": storage,
            "choice": starts.choice,
            "loaded_dram_tokens": starts.dram_tokens,
            "loaded_storage_tokens": starts.storage_tokens,
            "recomputed_hit_tokens": starts.recomputed_hit_tokens,
            "computed_tokens": starts.computed_tokens,
            "prefill_s": starts.service_s,
            "prefill_no_cache_s": none,
            "ttft_s": latency.ttft(config, arrivals, starts.service_s),
            "ttft_no_cache_s": latency.ttft(config, arrivals, none),
        }
    )
    frame["ttft_gpu_only_s"] = frame["ttft_s"]
    if baselines:  # the GPU tier evolves as if alone (the tiers below never change it): its hits are GPU-only's
        cached = np.minimum(gpu * prepared.block_size, tokens)
        frame["ttft_gpu_only_s"] = latency.ttft(config, arrivals, latency.compute_only(config, tokens, cached))
    ceiling = int(prepared.seen_before.sum())
    return TierResult(config, caps, frame, prepared.accesses, ceiling, counters)
