"""A deployment of several instances behind a router: each instance keeps its own GPU cache.

The tiered replay (:mod:`kvviz.tiers.replay`) lets the instances act as one cache of their summed
capacity. Here they do not: the deployment's instances, each with the GPU memory for KV the
deployment gives it, are served by :mod:`kvviz.cluster` (its instances, routers and prefill queues;
nothing of it is repeated here), and the one shared cache of the same total stands beside the
router's answer as the reference no router reaches.

What the cluster models is what applies: GPU memory per instance, one model replica per instance
(its GPUs all tensor parallel), the eviction policy, the model, GPU, MFU and GPU price. Host DRAM,
storage and a remote pool per instance are not modelled behind a router yet, so a deployment with
any of them is refused, naming them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvviz.cluster import REFERENCE, ClusterConfig, cost, parse_router, reference_row, run, summary_row
from kvviz.common import budget
from kvviz.common.errors import require
from kvviz.prefix_cache.replay import PrefixReplay, prepare
from kvviz.tiers.config import GIB, TierConfig
from kvviz.traces import Trace

DECODE_S_PER_TOKEN = 0.02
"""How long a request stays in flight per output token, for the routers' loads (decode is not simulated)."""


DEPLOYMENT_KEYS = ("model", "gpu", "gpus", "tp", "kv_fraction", "hbm_gib", "instances", "policy", "mfu")
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
    lower = [
        name
        for name, gib in (("host DRAM", config.dram_gib), ("SSD", config.ssd_gib), ("a remote pool", config.remote_gib))
        if gib
    ]
    if lower:
        out.append(f"{' and '.join(lower)} per instance behind a router are not modelled yet (GPU memory only)")
    return out


def cluster_config(
    config: TierConfig, replay: PrefixReplay, decode_s_per_token: float = DECODE_S_PER_TOKEN
) -> ClusterConfig:
    """The cluster the deployment is: its instances, each with the blocks its GPU memory for KV holds
    (at most every block of the trace)."""
    why = refusals(config)
    require(not why, "; ".join(why), field="router")
    block_size, hbm = replay.block_size, config.hbm_for_kv_gib
    per_block = block_size * config.model.kv_bytes_per_token
    blocks = replay.n_nodes if math.isinf(hbm) else min(replay.n_nodes, int(hbm * GIB // per_block))
    require(blocks >= 1, f"{hbm:.4g} GiB of GPU memory for KV holds no block of {block_size} tokens", field="hbm_gib")
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
    )


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

    def summary(self) -> dict[str, object]:
        """The answer as JSON-ready values: the router's numbers, and the reference labelled as such."""
        r = self.row
        return {
            "router": r["router"],
            "instances": self.cluster.instances,
            "gpu_blocks_per_instance": self.cluster.blocks,
            "requests": self.requests,
            "accesses": r["accesses"],
            "hit_blocks": r["hits"],
            "hit_ratio": r["hit_ratio"],
            "ttft_s": {"p50": r["ttft_p50_s"], "p90": r["ttft_p90_s"], "p99": r["ttft_p99_s"]},
            "load_imbalance": r["imbalance"],
            "offered_load": self.offered_load,
            "cost_per_hour": r["dollars_per_hour"],
            "cost_per_million_input_tokens": r["dollars_per_m_input_tokens"],
            "reference": {
                "label": REFERENCE,
                "gpu_blocks": self.cluster.instances * self.cluster.blocks,
                "hit_blocks": self.reference["hits"],
                "hit_ratio": self.reference["hit_ratio"],
            },
            "decode_s_per_token": self.cluster.decode_s_per_token,
            "warnings": self.warnings(),
            "deployment": {k: v for k, v in self.config.describe().items() if k in DEPLOYMENT_KEYS},
        }


def routed(trace: Trace, config: TierConfig, router: str) -> Routed:
    """Serve ``trace`` with ``config``'s instances behind ``router``, and the shared cache beside it."""
    name = parse_router(router)
    replay = prepare(trace)
    cluster = cluster_config(config, replay)
    budget.check(cost(replay, 2))
    result = run(replay, name, cluster, trace=trace)
    return Routed(
        config,
        cluster,
        summary_row(result, cluster),
        reference_row(replay, cluster),
        result.ttft_s,
        replay.n_requests,
        _offered_load(replay, float(result.busy_s.sum()), cluster.instances),
    )


def _offered_load(replay: PrefixReplay, busy_s: float, instances: int) -> float:
    """Prefill seconds asked of the instances over the seconds they had while the trace arrived."""
    stamps = replay.timestamps_ms
    span = (float(stamps.max()) - float(stamps.min())) / 1000 if len(stamps) else 0.0
    return busy_s / (instances * span) if span > 0 else 0.0
