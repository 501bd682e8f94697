"""From hits to time: load or recompute each request's lower-tier hits, then queue the prefills.

A request of ``L`` prompt tokens whose first ``c`` are in GPU memory, the next ``d`` in host DRAM
and the next ``s`` in storage has three ways to start: recompute all ``L − c``; load ``d`` and
recompute the rest; load ``d + s`` and recompute the rest. Each takes ``load + compute`` (or,
with layer-wise overlap, Strata's ``max(load + compute/layers, load/layers + compute)``), the
compute from the paper-GPU prefill model (:func:`kvviz.common.hardware.prefill_coefficients`),
and the fastest is taken: a lower-tier hit is loaded only when loading beats recomputing it
(the ledger's break-even, per request). The last prompt token is always computed (the engine
needs its logits).

A load reads the KV in layer-first copies of one page of one layer's K or V per GPU, each paying
Strata's fixed per-copy overhead, so small pages read slowly. A replica (``tp`` GPUs) reads host
DRAM over each GPU's own host link; the instance's SSDs or its network link to a remote pool are
shared by its replicas.

Requests then queue first-come first-served on the cluster's replicas in arrival order: TTFT is
the wait for a free replica plus the request's own prefill (decode is not simulated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kvviz.common import hardware as hw
from kvviz.common.errors import require
from kvviz.common.jit import kernel
from kvviz.strata.io import copy_efficiency
from kvviz.tiers.config import COPY_OVERHEAD_US, HOST_LINKS, TierConfig

LOAD_CHOICES = ("recompute", "load DRAM", "load DRAM and storage")


@dataclass(frozen=True)
class ReadPaths:
    """Bytes per second one replica reads KV at from host DRAM and from the storage tier."""

    dram: float
    storage: float


def copy_bytes(cfg: TierConfig, block_size: int) -> float:
    """One layer-first copy on one GPU: a page of one layer's K (or V; MLA's shared latent)."""
    m = cfg.model
    per_layer = m.kv_bytes_per_token / m.layers / (1 if m.attention == "MLA" else 2)
    split = cfg.tp if m.attention != "MLA" and m.kv_heads % cfg.tp == 0 else 1
    return block_size * per_layer / split


def _link_rate(bytes_s: float, copy: float) -> float:
    return bytes_s * copy_efficiency(copy, bytes_s, COPY_OVERHEAD_US * 1e-6)


def read_paths(cfg: TierConfig, block_size: int) -> ReadPaths:
    """The replica's read rates, each link's effective rate cut by the per-copy overhead."""
    copy = copy_bytes(cfg, block_size)
    m = cfg.model
    gpus_reading = cfg.tp if m.attention != "MLA" and m.kv_heads % cfg.tp == 0 else 1
    host = HOST_LINKS.get(cfg.gpu.name, hw.LINKS["pcie5-x16"])
    dram = gpus_reading * _link_rate(host.effective_bytes_s, copy)
    if cfg.storage == "remote":
        shared = cfg.remote_gb_s * hw.GB * hw.LINKS["rdma-400g"].efficiency
    else:
        shared = cfg.ssd_drives * hw.LINKS["nvme"].effective_bytes_s
    return ReadPaths(dram, _link_rate(shared / cfg.replicas, copy))


def service_seconds(load_s: np.ndarray, compute_s: np.ndarray, layers: int, overlap: bool) -> np.ndarray:
    """A prefill's time: load then compute, or overlapped layer by layer (Strata §3.2)."""
    if not overlap:
        return load_s + compute_s
    overlapped = np.maximum(load_s + compute_s / layers, load_s / layers + compute_s)
    return np.where(load_s > 0, overlapped, compute_s)


@dataclass(frozen=True)
class Prefills:
    """Per request: which way it started (an index into ``LOAD_CHOICES``), tokens loaded from each
    lower tier, lower-tier hit tokens recomputed instead, tokens computed, and its prefill time."""

    choice: np.ndarray
    dram_tokens: np.ndarray
    storage_tokens: np.ndarray
    recomputed_hit_tokens: np.ndarray
    computed_tokens: np.ndarray
    service_s: np.ndarray


def prefills(
    cfg: TierConfig, block_size: int, input_tokens: np.ndarray, blocks: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> Prefills:
    """Each request's fastest start given its hit blocks in (GPU, DRAM, storage)."""
    length = input_tokens.astype(float)
    top = np.maximum(length - 1, 0)
    reach = np.cumsum(np.stack(blocks).astype(float), axis=0) * block_size
    cached = np.minimum(reach, top)  # tokens cached through GPU, DRAM, storage
    a, b = hw.prefill_coefficients(cfg.model, cfg.compute)
    paths = read_paths(cfg, block_size)
    per_token = cfg.model.kv_bytes_per_token
    dram_t = (cached[1] - cached[0]) * per_token / paths.dram
    storage_t = (cached[2] - cached[1]) * per_token / paths.storage
    loads = (np.zeros_like(length), dram_t, dram_t + storage_t)
    times = np.stack(
        [
            service_seconds(load, a * (length - c) + b * (length**2 - c**2), cfg.model.layers, cfg.overlap)
            for load, c in zip(loads, cached)
        ]
    )
    choice = np.argmin(times, axis=0)
    used = np.take_along_axis(cached, choice[None, :], axis=0)[0]
    dram_tokens = np.where(choice >= 1, cached[1] - cached[0], 0)
    storage_tokens = np.where(choice == 2, cached[2] - cached[1], 0)
    return Prefills(
        choice,
        dram_tokens.astype(np.int64),
        storage_tokens.astype(np.int64),
        (cached[2] - used).astype(np.int64),
        (length - used).astype(np.int64),
        np.take_along_axis(times, choice[None, :], axis=0)[0],
    )


BANDWIDTH_CEILING_GB_S = 1e6
"""The fastest network :func:`pool_wins_from_gb_s` tries: past it, the per-copy overhead alone sets the pace."""


def pool_wins_from_gb_s(
    cfg: TierConfig, block_size: int, input_tokens: np.ndarray, blocks: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> float | None:
    """The network bandwidth (GB/s per instance) from which some request loads its remote-pool hits
    instead of recomputing them; ``None`` when nothing was hit there, or loading never wins.

    Loading gets only faster with bandwidth while recomputing stays put, so the break-even is found
    by bisection on the requests that hit the pool (to 1%)."""
    require(cfg.storage == "remote", "only a remote pool has a network bandwidth", field="remote_gb_s")
    hit = blocks[2] > 0
    subset = (input_tokens[hit], tuple(b[hit] for b in blocks))

    def loads(gb_s: float) -> bool:
        return bool((prefills(replace(cfg, remote_gb_s=gb_s), block_size, *subset).choice == 2).any())

    lo, hi = 1e-3, BANDWIDTH_CEILING_GB_S
    if not hit.any() or not loads(hi):
        return None
    if loads(lo):
        return lo
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if loads(mid) else (mid, hi)
    return hi


def compute_only(cfg: TierConfig, input_tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
    """Prefill time with ``cached_tokens`` already in GPU memory and nothing loaded."""
    length = input_tokens.astype(float)
    c = np.minimum(cached_tokens.astype(float), np.maximum(length - 1, 0))
    a, b = hw.prefill_coefficients(cfg.model, cfg.compute)
    return a * (length - c) + b * (length**2 - c**2)


@kernel
def queue_finish(arrivals_s: np.ndarray, service_s: np.ndarray, servers: int) -> np.ndarray:
    """Finish times of requests served first-come first-served on ``servers`` identical servers."""
    free = np.zeros(servers)
    finish = np.empty(len(arrivals_s))
    for i in range(len(arrivals_s)):
        k = np.argmin(free)
        start = max(arrivals_s[i], free[k])
        free[k] = start + service_s[i]
        finish[i] = free[k]
    return finish


def ttft(cfg: TierConfig, arrivals_s: np.ndarray, service_s: np.ndarray) -> np.ndarray:
    """Time to first token of every request: its wait for a replica plus its prefill."""
    return queue_finish(arrivals_s.astype(float), service_s.astype(float), cfg.servers) - arrivals_s


def percentiles(values: np.ndarray) -> dict[str, float]:
    """p50, p90 and p99 (numpy's linear interpolation)."""
    p50, p90, p99 = np.percentile(values, [50, 90, 99]) if len(values) else (np.nan,) * 3
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99)}
