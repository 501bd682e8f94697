"""Mooncake's Conductor: KVCache-centric prefill scheduling (Algorithm 1, arXiv v3 §6.1; FAST'25 §4.1).

A pool of prefill instances, each with a local LRU cache of KV blocks (named by chained prefix
hashes, so a request's reusable prefix on an instance is its longest run of leading block ids
found there). Requests arrive in trace order and are placed by one of four schedulers:

* ``random``: any instance; it still reuses whatever prefix it happens to hold;
* ``balance``: the instance with the shortest queue (load balancing);
* ``cache``: min over instances of T_queue + f(len, local prefix) (local cache-aware);
* ``kvcentric``: Algorithm 1. For each instance, if best_prefix / prefix >= the balancing
  threshold it may fetch the longer prefix from ``best_matched_instance``:
  TTFT = T_transfer + T_queue + f(len, best_prefix); otherwise TTFT = T_queue + f(len, prefix).
  The smallest TTFT wins, and fetched blocks are kept on the chosen instance (hot-prefix
  replication).

``f`` is the prefill-time predictor ``PrefillModel``: the paper fits a polynomial offline; here
it is linear (weights) plus quadratic (attention) in the tokens computed. Predictions equal the
simulated execution, so TTFT = queue + transfer + prefill exactly. Prefill is FIFO per instance.
A request's blocks enter its instance's cache when it is dispatched; blocks are touched tail
first, so LRU evicts the tail of a prefix before its head (as vLLM's free-block queue does).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kvviz.errors import require
from kvviz.trace import Trace

SCHEDULERS: tuple[str, ...] = ("random", "balance", "cache", "kvcentric")
SCHEDULER_LABELS = {"random": "Random", "balance": "Load balancing", "cache": "Cache-aware",
                    "kvcentric": "KVCache-centric"}
# LLaMA2/3-70B: 80 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes (fp16) = 320 KiB per token.
KV_BYTES_PER_TOKEN_70B = 80 * 8 * 128 * 2 * 2


@dataclass(frozen=True)
class PrefillModel:
    """f(len, prefix): seconds to prefill tokens prefix..len on one instance.

    Defaults: a 70B model on 8 A100/A800 at ~50% MFU, 140 GFLOP per token of weights (1.1e-4 s)
    plus causal attention 2*d*layers*L^2 FLOP (1.05e-9 s * L^2), and a fixed 20 ms per request.
    """

    overhead_s: float = 0.02
    per_token_s: float = 1.1e-4
    per_token2_s: float = 1.05e-9

    def time(self, length, prefix=0):
        """Prefill seconds for ``length`` tokens of which the first ``prefix`` are cached."""
        if isinstance(length, (int, float)) and isinstance(prefix, (int, float)):
            prefix = min(prefix, length)
            return (self.overhead_s + self.per_token_s * (length - prefix)
                    + self.per_token2_s * (length * length - prefix * prefix))
        length = np.asarray(length, dtype=np.float64)
        prefix = np.minimum(np.asarray(prefix, dtype=np.float64), length)
        t = self.overhead_s + self.per_token_s * (length - prefix) + self.per_token2_s * (length**2 - prefix**2)
        return float(t) if t.ndim == 0 else t

    def validate(self) -> None:
        for name in ("overhead_s", "per_token_s", "per_token2_s"):
            require(getattr(self, name) >= 0, f"{name} must be >= 0", field=name)
        require(self.per_token_s + self.per_token2_s > 0, "the prefill model must cost something per token",
                field="per_token_s")


@dataclass(frozen=True)
class ConductorConfig:
    """The prefill pool and the Conductor's knobs."""

    instances: int = 8
    cache_blocks: int = 6000              # per instance; 6,000 x 160 MiB blocks ~ 1 TB of DRAM
    balancing_threshold: float = 1.25     # "manually adjusted" in the paper; no value published
    bandwidth_gbps: float = 800.0         # RDMA between prefill nodes
    transfer_latency_s: float = 0.001     # fixed cost of one remote fetch
    kv_bytes_per_token: int = KV_BYTES_PER_TOKEN_70B
    speedup: float = 1.0                  # replay the trace this many times faster
    ttft_slo_s: float = 30.0              # only counted (share over SLO), nothing is rejected here
    seed: int = 0                         # for the random scheduler
    prefill: PrefillModel = field(default_factory=PrefillModel)

    def validate(self) -> None:
        require(1 <= self.instances <= 256, "prefill instances must be in 1..256", field="instances")
        require(1 <= self.cache_blocks <= 10_000_000, "cache capacity must be 1..10,000,000 blocks",
                field="cache_blocks")
        require(self.balancing_threshold >= 1.0, "the balancing threshold must be >= 1 (a ratio of prefixes)",
                field="balancing_threshold")
        require(self.bandwidth_gbps > 0, "bandwidth must be positive", field="bandwidth_gbps")
        require(self.transfer_latency_s >= 0, "transfer latency must be >= 0", field="transfer_latency_s")
        require(self.kv_bytes_per_token > 0, "KV bytes per token must be positive", field="kv_bytes_per_token")
        require(self.speedup > 0, "the speed-up must be positive", field="speedup")
        require(self.ttft_slo_s > 0, "the TTFT SLO must be positive", field="ttft_slo_s")
        self.prefill.validate()

    def transfer_s_per_block(self, block_size: int) -> float:
        """EstimateKVCacheTransferTime per block: bytes over the link, no congestion."""
        return block_size * self.kv_bytes_per_token * 8 / (self.bandwidth_gbps * 1e9)


@dataclass(frozen=True)
class Choice:
    """Where Algorithm 1 puts one request, and what it predicts."""

    instance: int
    ttft_s: float
    prefix_blocks: int          # blocks not recomputed (local or fetched)
    fetched_blocks: int         # blocks copied from ``fetch_from`` (0 if none)
    fetch_from: int | None


def prefix_tokens(blocks: int, input_length: int, block_size: int) -> int:
    """Tokens covered by ``blocks`` matched blocks; at least one token is always computed."""
    return max(0, min(blocks * block_size, input_length - 1))


def _argmin(values: list[float], tiebreak: list[float] | None) -> int:
    """Index of the smallest value; equal values go to the smallest ``tiebreak`` (work done so far)."""
    best = 0
    for i in range(1, len(values)):
        v, b = values[i], values[best]
        if v < b or (v == b and tiebreak is not None and tiebreak[i] < tiebreak[best]):
            best = i
    return best


def _prefill_times(prefix_blocks: list[int], input_length: int, block_size: int, model: PrefillModel) -> dict:
    """f(len, prefix) for each distinct prefix length in ``prefix_blocks`` (most are equal)."""
    return {p: model.time(input_length, prefix_tokens(p, input_length, block_size)) for p in set(prefix_blocks)}


def kvcentric_choice(prefix_blocks: list[int], queue_s: list[float], input_length: int, block_size: int,
                     model: PrefillModel, threshold: float, transfer_s_per_block: float,
                     transfer_latency_s: float = 0.0, tiebreak: list[float] | None = None) -> Choice:
    """Algorithm 1 for one request, given each instance's local prefix (blocks) and queue time.

    Each instance is costed on one branch only, as in the paper: with a prefix ratio at or over
    ``threshold`` it fetches the best prefix, otherwise it computes from its own.
    """
    best_len = max(prefix_blocks)
    best = prefix_blocks.index(best_len)
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    ttfts, used, fetched = [], [], []
    for own, queue in zip(prefix_blocks, queue_s):
        if best_len == 0 or (own > 0 and best_len < threshold * own):
            ttfts.append(queue + f[own])
            used.append(own)
            fetched.append(0)
        else:
            n = best_len - own
            ttfts.append(n * transfer_s_per_block + (transfer_latency_s if n else 0.0) + queue + f[best_len])
            used.append(best_len)
            fetched.append(n)
    i = _argmin(ttfts, tiebreak)
    return Choice(i, ttfts[i], used[i], fetched[i], best if fetched[i] else None)


def cache_aware_choice(prefix_blocks: list[int], queue_s: list[float], input_length: int, block_size: int,
                       model: PrefillModel, tiebreak: list[float] | None = None) -> Choice:
    """Local cache-aware: min over instances of T_queue + f(len, local prefix); no fetching."""
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    times = [q + f[p] for p, q in zip(prefix_blocks, queue_s)]
    i = _argmin(times, tiebreak)
    return Choice(i, times[i], prefix_blocks[i], 0, None)


class _LocalCache:
    """One instance's LRU block cache."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def match(self, ids: list[int]) -> int:
        n = 0
        for h in ids:
            if h not in self.blocks:
                break
            n += 1
        return n

    def store(self, ids: list[int]) -> None:
        blocks = self.blocks
        for h in reversed(ids):          # the head of the prefix ends most recently used
            if h in blocks:
                blocks.move_to_end(h)
            else:
                blocks[h] = None
        while len(blocks) > self.capacity:
            blocks.popitem(last=False)


@dataclass(frozen=True)
class ScheduleResult:
    """Per-request outcome of one scheduler over one trace."""

    scheduler: str
    ttft_s: np.ndarray
    instance: np.ndarray
    prefix_blocks: np.ndarray     # blocks not recomputed, per request
    fetched_blocks: np.ndarray    # blocks fetched from another instance, per request
    n_blocks: np.ndarray
    busy_s: np.ndarray            # prefill + transfer seconds, per instance
    ttft_slo_s: float

    @property
    def mean_ttft_s(self) -> float:
        return float(self.ttft_s.mean()) if len(self.ttft_s) else 0.0

    @property
    def p90_ttft_s(self) -> float:
        return float(np.percentile(self.ttft_s, 90)) if len(self.ttft_s) else 0.0

    @property
    def hit_ratio(self) -> float:
        """Blocks served from a cache (local or fetched) over all blocks requested."""
        total = int(self.n_blocks.sum())
        return float(self.prefix_blocks.sum() / total) if total else 0.0

    @property
    def imbalance(self) -> float:
        """Busiest instance's busy time over the average (1 = perfectly even)."""
        mean = float(self.busy_s.mean())
        return float(self.busy_s.max() / mean) if mean > 0 else 1.0

    @property
    def remote_fetches(self) -> int:
        return int(np.count_nonzero(self.fetched_blocks))

    @property
    def replicated_blocks(self) -> int:
        return int(self.fetched_blocks.sum())

    def summary(self) -> dict:
        return {
            "scheduler": self.scheduler, "requests": int(len(self.ttft_s)),
            "mean_ttft_s": round(self.mean_ttft_s, 3), "p90_ttft_s": round(self.p90_ttft_s, 3),
            "over_ttft_slo": round(float(np.mean(self.ttft_s > self.ttft_slo_s)) if len(self.ttft_s) else 0.0, 4),
            "hit_ratio": round(self.hit_ratio, 4), "busiest_over_mean_load": round(self.imbalance, 3),
            "remote_fetches": self.remote_fetches, "replicated_blocks": self.replicated_blocks,
        }


def schedule(trace: Trace, config: ConductorConfig = ConductorConfig(), scheduler: str = "kvcentric") -> ScheduleResult:
    """Replay ``trace`` through the prefill pool with one scheduler."""
    config.validate()
    require(scheduler in SCHEDULERS, f"unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}",
            field="scheduler")
    require(trace.has_block_ids, "this trace has no block ids (hash_ids), so prefix reuse cannot be "
            "simulated; load a trace with hash_ids for the scheduling comparison", field="hash_ids")
    n = trace.n_requests
    arrival = (trace.requests["timestamp"].to_numpy(np.float64) / 1000.0 / config.speedup).tolist()
    length = trace.requests["input_length"].to_numpy(np.int64).tolist()
    caches = [_LocalCache(config.cache_blocks) for _ in range(config.instances)]
    free_at = [0.0] * config.instances
    busy = [0.0] * config.instances
    out: dict[str, list] = {"ttft": [0.0] * n, "inst": [0] * n, "prefix": [0] * n, "fetched": [0] * n}
    picks = np.random.default_rng(config.seed).integers(config.instances, size=n).tolist()
    per_block = config.transfer_s_per_block(trace.block_size)
    bs, model = trace.block_size, config.prefill
    blocks, offsets = trace.blocks.tolist(), trace.offsets.tolist()
    for r in range(n):
        t, ids, L = arrival[r], blocks[offsets[r]:offsets[r + 1]], length[r]
        queue = [max(f - t, 0.0) for f in free_at]
        if scheduler in ("random", "balance"):
            i = picks[r] if scheduler == "random" else _argmin(queue, busy)
            own = caches[i].match(ids)
            c = Choice(i, queue[i] + model.time(L, prefix_tokens(own, L, bs)), own, 0, None)
        else:
            prefixes = [cache.match(ids) for cache in caches]
            c = (cache_aware_choice(prefixes, queue, L, bs, model, busy) if scheduler == "cache" else
                 kvcentric_choice(prefixes, queue, L, bs, model, config.balancing_threshold, per_block,
                                  config.transfer_latency_s, busy))
        caches[c.instance].store(ids)
        free_at[c.instance] = t + c.ttft_s
        busy[c.instance] += c.ttft_s - queue[c.instance]
        out["ttft"][r], out["inst"][r], out["prefix"][r], out["fetched"][r] = (
            c.ttft_s, c.instance, c.prefix_blocks, c.fetched_blocks)
    return ScheduleResult(scheduler, np.asarray(out["ttft"]), np.asarray(out["inst"], np.int64),
                          np.asarray(out["prefix"], np.int64), np.asarray(out["fetched"], np.int64),
                          trace.requests["n_blocks"].to_numpy(np.int64), np.asarray(busy), config.ttft_slo_s)


def compare(trace: Trace, config: ConductorConfig = ConductorConfig(),
            schedulers: tuple[str, ...] = SCHEDULERS) -> dict[str, ScheduleResult]:
    """Every scheduler over the same trace and pool."""
    return {s: schedule(trace, config, s) for s in schedulers}


def offered_load(trace: Trace, config: ConductorConfig = ConductorConfig()) -> float:
    """Prefill work without any reuse, over the pool's capacity during the replay (1 = saturated)."""
    if trace.n_requests < 2:
        return 0.0
    ts = trace.requests["timestamp"].to_numpy(np.float64) / 1000.0 / config.speedup
    span = max(ts[-1] - ts[0], 1e-9)
    work = float(np.sum(config.prefill.time(trace.requests["input_length"].to_numpy(np.float64))))
    return work / (span * config.instances)


# Mooncake v3 Fig. 8 average TTFT (s), and the lecture notes' own run (code 04, demo 1, 12.2 req/s).
PAPER_FIG8_TTFT_S = {"random": 92.07, "balance": 60.41, "cache": 14.36, "kvcentric": 6.26}
NOTES_HIT_RATIO = {"random": 0.29, "balance": 0.29, "cache": 0.43, "kvcentric": 0.47}


def compare_with_paper(results: dict[str, ScheduleResult]) -> pd.DataFrame:
    """Fig. 8 and the lecture notes' hit ratios beside this simulation."""
    rows = []
    for s, ttft in PAPER_FIG8_TTFT_S.items():
        if s in results:
            rows.append({"quantity": f"Average TTFT: {SCHEDULER_LABELS[s]}", "paper": f"{ttft:.2f} s",
                         "this simulation": f"{results[s].mean_ttft_s:.2f} s"})
    if "balance" in results and "kvcentric" in results:
        sim = results["balance"].mean_ttft_s / max(results["kvcentric"].mean_ttft_s, 1e-12)
        rows.append({"quantity": "Load balancing ÷ KVCache-centric, average TTFT", "paper": f"{60.41 / 6.26:.1f}x "
                     "(lecture notes: 8.7 s / 0.64 s = 13.6x)", "this simulation": f"{sim:.1f}x"})
    for s, hit in NOTES_HIT_RATIO.items():
        if s in results:
            rows.append({"quantity": f"Cache hit ratio: {SCHEDULER_LABELS[s]} (lecture notes)", "paper": f"{hit:.2f}",
                         "this simulation": f"{results[s].hit_ratio:.2f}"})
    return pd.DataFrame(rows)


def display_table(results: dict[str, ScheduleResult]) -> pd.DataFrame:
    """One row per scheduler with readable column names, for a page or report."""
    rows = [{"Scheduler": SCHEDULER_LABELS[k], "Requests": len(r.ttft_s), "Mean TTFT (s)": round(r.mean_ttft_s, 2),
             "P90 TTFT (s)": round(r.p90_ttft_s, 2), "Hit ratio": round(r.hit_ratio, 3),
             "Busiest ÷ mean load": round(r.imbalance, 2), "Remote fetches": r.remote_fetches,
             "Replicated blocks": r.replicated_blocks,
             "Over TTFT SLO": f"{float(np.mean(r.ttft_s > r.ttft_slo_s)) if len(r.ttft_s) else 0.0:.0%}"}
            for k, r in results.items()]
    return pd.DataFrame(rows)
