"""From hits to time, as SGLang's HiCache serves a request: prefetch from storage while it queues,
load its host hits layer by layer under the compute, recompute the rest.

A request of ``L`` prompt tokens whose first ``c`` are in GPU memory, the next ``d`` in host DRAM
and the next ``s`` in storage is served the way SGLang 0.5.23 serves it:

* **Storage is read while the request waits.** The scheduler starts a prefetch from storage into host
  memory when the request joins the queue (``Scheduler._prefetch_kvcache``; only a storage hit of at
  least ``prefetch_threshold`` = 256 tokens, ``HiCacheController``), and under the default stop policy
  (``best_effort``, ``UnifiedRadixCache._can_terminate_prefetch``) the request takes what has arrived
  when a replica is free for it: whole pages read in the wait at the replica's share of the storage
  link. What had not arrived is recomputed, and is not a hit.
* **Host hits are loaded.** Every token found in host memory (DRAM, or prefetched) is copied to the
  GPU (``HiCacheController.start_loading``), also when recomputing it would be faster; the option
  ``load="fastest"`` takes the faster of loading and recomputing instead (not what SGLang does).
* **Layer by layer.** The copy runs on its own stream and records one event per layer; the forward
  waits on layer ``i``'s event before computing layer ``i`` (``LayerDoneCounter``,
  managers/cache_controller.py). With loads and computes each in order, a prefill takes
  ``max(load + compute/layers, load/layers + compute)``; ``overlap=False`` loads first.

The compute is the paper-GPU prefill model (:func:`kvviz.common.hardware.prefill_coefficients`) on the
replica's ``tp`` GPUs. A load reads the KV in layer-first copies of one page of one layer's K or V per
GPU, each paying Strata's fixed per-copy overhead, so small pages read slowly. A replica reads host
DRAM over each GPU's own host link; the instance's SSDs or its network link to a remote pool are
shared by its replicas. The last prompt token is always computed (the engine needs its logits).

Requests queue first-come first-served on the cluster's replicas in arrival order: TTFT is the wait
for a free replica plus the request's own prefill (decode is not simulated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvviz.common import hardware as hw
from kvviz.common.jit import kernel
from kvviz.strata.io import copy_efficiency
from kvviz.tiers.config import COPY_OVERHEAD_US, HOST_LINKS, TierConfig

LOAD_CHOICES = ("recompute", "load DRAM", "load DRAM and storage")
PREFETCH_THRESHOLD_TOKENS = 256
"""The smallest storage hit SGLang prefetches (``HiCacheController``'s ``prefetch_threshold``)."""


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
    """A prefill's time: load then compute, or overlapped layer by layer (SGLang's per-layer events)."""
    if not overlap:
        return load_s + compute_s
    overlapped = np.maximum(load_s + compute_s / layers, load_s / layers + compute_s)
    return np.where(load_s > 0, overlapped, compute_s)


@dataclass(frozen=True)
class Served:
    """Per request: which way it started (an index into ``LOAD_CHOICES``), tokens loaded from DRAM and
    from storage (prefetched in time), lower-tier hit tokens recomputed instead, tokens computed, its
    prefill time and its TTFT."""

    choice: np.ndarray
    dram_tokens: np.ndarray
    storage_tokens: np.ndarray
    recomputed_hit_tokens: np.ndarray
    computed_tokens: np.ndarray
    service_s: np.ndarray
    ttft_s: np.ndarray


@kernel
def _serve(arrivals, length, reach, servers, a, b, per_token, dram_rate, storage_rate, block_size, layers, flags):
    """The queue and each request's prefill in one pass (``flags``: overlap, fastest, prefetch threshold)."""
    overlap, fastest, threshold = flags[0] > 0, flags[1] > 0, flags[2]
    n = len(arrivals)
    free = np.zeros(servers)
    out = np.zeros((6, n))  # choice, dram tokens, storage tokens, used, service, ttft
    for i in range(n):
        k = np.argmin(free)
        start = max(arrivals[i], free[k])
        c, host, stored = reach[0, i], reach[1, i], reach[2, i]
        fetched = 0.0
        if stored - host >= threshold:
            pages = math.floor((start - arrivals[i]) * storage_rate / (block_size * per_token))
            fetched = min(stored - host, pages * block_size)
        best, used = math.inf, c
        for option in range(0 if fastest else 2, 3):  # recompute the lower hits, load DRAM's, load all
            top = c if option == 0 else host if option == 1 else host + fetched
            load = (top - c) * per_token / dram_rate
            compute = a * (length[i] - top) + b * (length[i] ** 2 - top**2)
            t = load + compute
            if overlap and load > 0:
                t = max(load + compute / layers, load / layers + compute)
            if t < best:
                best, used = t, top
        out[0, i] = 0 if used == c else 1 if used <= host else 2
        out[1, i], out[2, i] = min(used, host) - c, max(used - host, 0.0)
        out[3, i], out[4, i] = used, best
        free[k] = start + best
        out[5, i] = free[k] - arrivals[i]
    return out


def serve(
    cfg: TierConfig,
    block_size: int,
    arrivals_s: np.ndarray,
    input_tokens: np.ndarray,
    blocks: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> Served:
    """Each request's prefill and TTFT given its hit blocks in (GPU, DRAM, storage), queued in arrival order."""
    length = input_tokens.astype(float)
    top = np.maximum(length - 1, 0)
    reach = np.minimum(np.cumsum(np.stack(blocks).astype(float), axis=0) * block_size, top)
    a, b = hw.prefill_coefficients(cfg.model, cfg.compute)
    paths = read_paths(cfg, block_size)
    flags = np.array([cfg.overlap, cfg.load == "fastest", PREFETCH_THRESHOLD_TOKENS], dtype=np.float64)
    out = _serve(
        arrivals_s.astype(float), length, np.ascontiguousarray(reach), cfg.servers, a, b,
        float(cfg.model.kv_bytes_per_token), paths.dram, paths.storage, float(block_size),
        cfg.model.layers, flags,
    )  # fmt: skip
    choice, dram, storage, used, service, ttft_s = out
    whole = lambda x: x.astype(np.int64)  # noqa: E731
    return Served(
        whole(choice), whole(dram), whole(storage), whole(reach[2] - used), whole(length - used), service, ttft_s
    )


def faster_to_recompute(cfg: TierConfig, block_size: int, requests) -> int:
    """How many requests of a replay (its ``requests`` frame) loaded hits it would have recomputed
    faster: zero means recomputing when faster (``load="fastest"``) changes nothing on this trace."""
    length = requests["input_tokens"].to_numpy(float)
    c = np.minimum(requests["gpu_blocks"].to_numpy(float) * block_size, np.maximum(length - 1, 0))
    loaded = (requests["loaded_dram_tokens"] + requests["loaded_storage_tokens"]).to_numpy(float)
    a, b = hw.prefill_coefficients(cfg.model, cfg.compute)
    top = c + loaded
    load = loaded * cfg.model.kv_bytes_per_token / read_paths(cfg, block_size).dram
    with_load = service_seconds(load, a * (length - top) + b * (length**2 - top**2), cfg.model.layers, cfg.overlap)
    return int(((loaded > 0) & (a * (length - c) + b * (length**2 - c**2) < with_load)).sum())


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


def offered_load(cfg: TierConfig, arrivals_s: np.ndarray, service_s: np.ndarray) -> float:
    """The prefill work the trace asks of the replicas per second they have: above 1, queues only grow.

    Replica-seconds of prefill ÷ (the trace's span × the cluster's replicas); infinite for work that
    arrives all at once."""
    span = float(arrivals_s.max(initial=0) - arrivals_s.min(initial=0))
    work = float(service_s.sum())
    if work == 0:
        return 0.0
    return work / (span * cfg.servers) if span > 0 else math.inf


def percentiles(values: np.ndarray) -> dict[str, float]:
    """p50, p90 and p99 (numpy's linear interpolation)."""
    p50, p90, p99 = np.percentile(values, [50, 90, 99]) if len(values) else (np.nan,) * 3
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99)}
