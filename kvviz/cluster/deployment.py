"""A deployment of several instances behind a router: each instance keeps its own GPU cache, and its own
host DRAM when given.

The tiered replay (:mod:`kvviz.tiers.replay`) lets the instances act as one cache of their summed
capacity. Here they do not: the deployment's instances, each with the GPU memory for KV the
deployment gives it, are served by :mod:`kvviz.cluster` (its instances, routers and prefill queues;
nothing of it is repeated here), and the one shared cache of the same total stands beside the
router's answer as the reference no router reaches.

What the cluster models is what applies: GPU memory per instance, one model replica per instance
(its GPUs all tensor parallel), the eviction policy, the model, GPU, MFU and prices. With host DRAM each
instance is SGLang's HiCache (:class:`kvviz.tiers.instance.TieredInstance`): its own DRAM, written as
the write policy says, over a storage tier that is each instance's own SSD, or the remote pool as one
HiCache storage backend every instance writes through and prefetches from (Mooncake Store). What the
tiered replay's latency model adds (loads overlapped with compute, the choice to recompute a slow
load) is not modelled behind a router: every block found is loaded, at PCIe for DRAM, one NVMe drive
for the SSD and the remote link for the pool.

With vLLM + LMCache the same DRAM, SSD and remote pool are LMCache 0.5.6's backends, as its config
sizes them (``lmcache/v1/config.py``: ``max_local_cpu_size`` and ``max_local_disk_size`` in GiB, the
backend reading them as ``size * 1024**3`` bytes; ``remote_url`` one server for every instance): the
DRAM each instance's CPU backend, the SSD its local disk backend, the remote pool the one remote
backend every instance shares (:func:`lmcache_config`). Each loads at its link as the cluster's LMCache
instances do (:meth:`kvviz.cluster.simulate.ClusterConfig.load_s_per_token`), the remote at
``remote_gb_s``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from kvviz.cluster.routers import parse_router
from kvviz.cluster.simulate import REFERENCE, ClusterConfig, ClusterRun, cost, reference_row, run, summary_row
from kvviz.common import budget
from kvviz.common.errors import require
from kvviz.lmcache.store import BACKENDS, LMCacheConfig, chunks_of_gib
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.tiers.config import GIB, TierConfig
from kvviz.tiers.plan import plain
from kvviz.tiers.search import Targets, cheapest_meeting
from kvviz.traces import Trace

DECODE_S_PER_TOKEN = 0.02
"""How long a request stays in flight per output token, for the routers' loads (decode is not simulated)."""


DEPLOYMENT_KEYS = (
    "model",
    "gpu",
    "gpus",
    "tp",
    "kv_fraction",
    "hbm_gib",
    "instances",
    "policy",
    "mfu",
    "dram_gib",
    "ssd_gib",
    "remote_gib",
    "remote_gb_s",
    "write_policy",
    "storage",
)
"""What of the deployment applies behind a router (the rest is refused)."""


def refusals(config: TierConfig) -> list[str]:
    """What of ``config`` a cluster behind a router does not model, in words (empty: it can be routed)."""
    out = []
    if config.instances < 2:
        out.append("a router needs at least 2 instances to choose between")
    if config.replicas != 1:
        out.append(
            f"each instance behind a router is one model replica: tensor parallel must equal the GPUs ({config.gpus})"
        )
    if config.ssd_drives != 1:
        out.append("each instance behind a router reads its SSD as one drive")
    if not config.overlap:
        out.append("loads overlapped with compute or not are not modelled behind a router (every block found loads)")
    if config.load != "load":
        out.append("the choice to recompute a slow load is not modelled behind a router (every block found loads)")
    return out


def cluster_config(
    config: TierConfig, replay: PrefixReplay, decode_s_per_token: float = DECODE_S_PER_TOKEN, engine: str = "sglang"
) -> ClusterConfig:
    """The cluster the deployment is: its instances, each with the blocks its GPU memory for KV holds
    (at most every block of the trace), running ``engine``."""
    why = refusals(config)
    require(not why, "; ".join(why), field="router")
    block_size, hbm = replay.block_size, config.hbm_for_kv_gib
    per_block = block_size * config.model.kv_bytes_per_token

    def blocks_of(gib: float) -> int:
        return replay.n_nodes if math.isinf(gib) else min(replay.n_nodes, int(gib * GIB // per_block))

    blocks = blocks_of(hbm)
    require(blocks >= 1, f"{hbm:.4g} GiB of GPU memory for KV holds no block of {block_size} tokens", field="hbm_gib")
    lmcache = engine != "sglang"
    shared = config.storage == "remote" and not lmcache
    gpu_per_hour = config.instances * config.gpus * config.prices.gpu_per_hour
    return ClusterConfig(
        instances=config.instances,
        blocks=blocks,
        policy=config.policy,
        model=config.model.name,
        gpu=config.gpu.name,
        tp=config.tp,
        gpu_price=config.prices.gpu_per_hour,
        mfu=config.mfu,
        decode_s_per_token=decode_s_per_token,
        engine=engine,
        lmcache=lmcache_config(config) if lmcache else LMCacheConfig(),
        host_blocks=0 if lmcache else blocks_of(config.dram_gib),
        storage_blocks=0 if lmcache else blocks_of(config.remote_gib if shared else config.ssd_gib),
        shared_storage=shared,
        pool_gb_s=config.remote_gb_s,
        write_policy=config.write_policy,
        memory_per_hour=max(0.0, config.cost_per_hour() - gpu_per_hour),
    )


def lmcache_config(config: TierConfig) -> LMCacheConfig:
    """LMCache's backends for the deployment's tiers, in chunks of its default chunk size: each instance's
    DRAM its CPU backend (``local_cpu``, ``max_local_cpu_size``), its SSD the local disk backend
    (``local_disk``, ``max_local_disk_size``), the remote pool the one remote backend (``remote_url``)."""
    chunk, per_token = LMCacheConfig.chunk_size, config.model.kv_bytes_per_token
    cpu, disk, remote = (
        chunks_of_gib(g, chunk, per_token) for g in (config.dram_gib, config.ssd_gib, config.remote_gib)
    )
    return LMCacheConfig(chunk_size=chunk, cpu_chunks=cpu, disk_chunks=disk, remote_chunks=remote)


@dataclass(frozen=True)
class Routed:
    """One router's answer (the cluster's summary row, its TTFTs) and the shared cache's reference row."""

    config: TierConfig
    cluster: ClusterConfig
    row: dict
    reference: dict
    ttft_s: np.ndarray
    requests: int
    offered_load: float
    per_instance: pd.DataFrame
    found_tokens: dict[str, int]
    input_tokens: int

    def warnings(self) -> list[str]:
        if self.offered_load < 1:
            return []
        needed = math.ceil(self.offered_load * self.cluster.instances)
        return [
            f"overloaded: the trace offers {self.offered_load:.2f} times what {self.cluster.instances} instances "
            f"behind "
            f"{self.row['router']} can prefill, so requests queue without end; about {needed} instances carry it at "
            "these hits"
        ]

    @property
    def applies(self) -> tuple[str, ...]:
        """The deployment's keys that apply to this engine (HiCache's write policy not to LMCache)."""
        lmcache = self.cluster.engine != "sglang"
        return tuple(k for k in DEPLOYMENT_KEYS if not (lmcache and k == "write_policy"))

    def keeps(self) -> dict[str, object]:
        """What each instance keeps: its GPU blocks, and its HiCache DRAM and storage in blocks or its LMCache
        backends in chunks (the remote backend and a remote pool are the cluster's one, named so)."""
        c, lm = self.cluster, self.cluster.lmcache
        if c.engine == "sglang":
            storage = "remote_pool_blocks_shared" if c.shared_storage else "ssd_blocks"
            return {"gpu_blocks": c.blocks, "dram_blocks": c.host_blocks, storage: c.storage_blocks}
        return {
            "gpu_blocks": c.blocks,
            "cpu_chunks": lm.cpu_chunks,
            "disk_chunks": lm.disk_chunks,
            "remote_chunks_shared": lm.remote_chunks,
        }

    def lower_tiers(self) -> dict[str, object]:
        """What each instance keeps below its GPU and what was found there: HiCache's DRAM and storage in
        blocks, or LMCache's backends in chunks and the prompt tokens loaded from each."""
        r, c = self.row, self.cluster
        out: dict[str, object] = {
            "found_blocks": {"gpu": r["hits"], "dram": r["dram_hits"], self.config.storage: r["storage_hits"]},
            "dram_blocks_per_instance": c.host_blocks,
            "storage_blocks": c.storage_blocks,
            "storage_is": storage_words(c),
        }
        if c.engine == "sglang":
            return out
        lm = c.lmcache
        return {
            **out,
            "found_blocks": {"gpu": r["hits"]},
            "storage_is": "LMCache's backends: each instance's CPU memory and local disk, one remote for the cluster",
            "found_tokens": self.found_tokens,
            "input_tokens": self.input_tokens,
            "lmcache": {
                "chunk_size": lm.chunk_size,
                "cpu_chunks_per_instance": lm.cpu_chunks,
                "disk_chunks_per_instance": lm.disk_chunks,
                "remote_chunks": lm.remote_chunks,
                "remote_is": "one backend every instance stores to and looks up in",
            },
        }

    def summary(self) -> dict[str, object]:
        """The answer as JSON-ready values: the router's numbers, and the reference labelled as such."""
        r = self.row
        return {
            "router": r["router"],
            "engine": self.cluster.engine,
            "instances": self.cluster.instances,
            "gpu_blocks_per_instance": self.cluster.blocks,
            "each_instance_keeps": self.keeps(),
            "requests": self.requests,
            "accesses": r["accesses"],
            "hit_blocks": r["hits"],
            "hit_ratio": r["hit_ratio"],
            "fetched_blocks": r["fetched"],
            **self.lower_tiers(),
            "per_instance": self.per_instance.to_dict("records"),
            "ttft_s": {"p50": r["ttft_p50_s"], "p90": r["ttft_p90_s"], "p99": r["ttft_p99_s"]},
            "load_imbalance": r["imbalance"],
            "offered_load": self.offered_load,
            "cost_per_hour": r["dollars_per_hour"],
            "cost_per_million_input_tokens": r["dollars_per_m_input_tokens"],
            "reference": {
                "label": REFERENCE,
                "gpu_blocks": self.cluster.instances * self.cluster.blocks,
                "hit_blocks": self.reference["hits"],
                "dram_hit_blocks": self.reference["dram_hits"],
                "storage_hit_blocks": self.reference["storage_hits"],
                "hit_ratio": self.reference["hit_ratio"],
            },
            "decode_s_per_token": self.cluster.decode_s_per_token,
            "warnings": self.warnings(),
            "deployment": {k: v for k, v in self.config.describe().items() if k in self.applies},
        }


def routed(
    trace: Trace, config: TierConfig, router: str, replay: PrefixReplay | None = None, *, engine: str = "sglang"
) -> Routed:
    """Serve ``trace`` (``replay``: its prepared form, when the caller has it) with ``config``'s instances,
    each running ``engine``, behind ``router``, and the shared cache beside it."""
    name = parse_router(router)
    replay = prepare(trace) if replay is None else replay
    cluster = cluster_config(config, replay, engine=engine)
    budget.check(cost(replay, 2, cluster))
    result = run(replay, name, cluster, trace=trace)
    return Routed(
        config,
        cluster,
        summary_row(result, cluster),
        reference_row(replay, cluster),
        result.ttft_s,
        replay.n_requests,
        _offered_load(replay, float(result.busy_s.sum()), cluster.instances),
        result.by_instance(cluster.instances).reset_index(),
        _found_tokens(result, replay),
        int(replay.input_lengths.sum()),
    )


def _found_tokens(result: ClusterRun, replay: PrefixReplay) -> dict[str, int]:
    """Prompt tokens the instances had on the GPU (their own hits and the Conductor's fetches, at most each
    prompt) and loaded from each LMCache backend."""
    have = np.minimum((result.hits + result.fetched) * replay.block_size, replay.input_lengths)
    return {"gpu": int(have.sum()), **{b: int(result.loaded[:, k].sum()) for k, b in enumerate(BACKENDS)}}


def storage_words(cluster: ClusterConfig) -> str:
    """What the storage tier is, in words."""
    if not cluster.storage_blocks:
        return "none"
    if cluster.shared_storage:
        return "one pool every instance writes through and prefetches from"
    return "each instance's own SSD"


def _offered_load(replay: PrefixReplay, busy_s: float, instances: int) -> float:
    """Prefill seconds asked of the instances over the seconds they had while the trace arrived."""
    stamps = replay.timestamps_ms
    span = (float(stamps.max()) - float(stamps.min())) / 1000 if len(stamps) else 0.0
    return busy_s / (instances * span) if span > 0 else 0.0


MAX_RUNS = 64
"""The most cluster runs one search makes (it stops there, saying so)."""


@dataclass(frozen=True)
class RoutedSearch:
    """The cheapest instance count (and GPUs per instance) behind one router meeting the targets: every
    deployment run, cheapest first."""

    router: str
    targets: Targets
    tried: pd.DataFrame
    exhausted: bool

    @property
    def best(self) -> pd.Series | None:
        """The cheapest that meets the targets; at equal cost, the fastest."""
        return cheapest_meeting(self.tried)

    def summary(self) -> dict[str, object]:
        best = self.best
        warnings = []
        if best is None:
            warnings.append(
                "no deployment searched meets the targets" + (" before the search's limit" if self.exhausted else "")
            )
        return {
            "router": self.router,
            "target_p90_ttft_s": self.targets.p90_s,
            "target_p99_ttft_s": self.targets.p99_s,
            "best": None if best is None else {k: plain(v) for k, v in best.items() if k != "meets"},
            "best_cost_per_hour_is": "the whole cluster's; cost_per_instance_hour is one instance's",
            "shared_hit_ratio_is": f"{REFERENCE}: the instances' GPU memory as one cache, not a deployment",
            "runs": len(self.tried),
            "stopped_at_run_limit": self.exhausted,
            "tried": [{k: plain(v) for k, v in row.items()} for _, row in self.tried.iterrows()],
            "warnings": warnings,
        }


def candidates(config: TierConfig, gpus: Sequence[int], instances: Sequence[int]) -> list[TierConfig]:
    """Every deployment to try, cheapest first (each instance one replica of all its GPUs)."""
    out = [replace(config, gpus=g, tp=g, instances=n) for g in gpus for n in instances]
    return sorted(out, key=lambda c: (c.cost_per_hour(), c.instances))


def next_batch(todo: list[TierConfig], done: list[dict], met_at: float | None, batch: int, max_runs: int) -> list:
    """A router's next deployments to run: cheapest first, none dearer than one that already met the targets."""
    nxt = todo[len(done) : len(done) + min(batch, max_runs - len(done))]
    return [c for c in nxt if met_at is None or c.cost_per_hour() <= met_at]
