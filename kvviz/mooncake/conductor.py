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
it is linear (weights) plus quadratic (attention) in the tokens computed, with the coefficients of
:func:`kvviz.common.hardware.prefill_seconds` (one cost model). Predictions equal the simulated execution,
so TTFT = queue + transfer + prefill exactly. Prefill is FIFO per instance.

KV is causal: a request's blocks enter its instance's cache when it is dispatched (the room is
taken) but exist only when its prefill finishes. A later request on the same instance queues
behind that prefill, so its local prefix is always there when it starts; a fetch from another
instance must first wait for the blocks to exist. While the best prefix does not exist yet,
Algorithm 1's fetch branch includes the wait, and the instance computes from its own prefix instead
when that is sooner. Blocks are touched tail first, so LRU evicts the tail of a prefix before its
head (as vLLM's free-block queue does).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kvviz.common import budget, paper
from kvviz.common import hardware as hw
from kvviz.common.errors import require
from kvviz.traces import Trace

SCHEDULERS: tuple[str, ...] = ("random", "balance", "cache", "kvcentric")
SCHEDULER_LABELS = {
    "random": "Random",
    "balance": "Load balancing",
    "cache": "Cache-aware",
    "kvcentric": "KVCache-centric",
}
# One prefill instance of the cluster: a 70B model on 8 A100/A800 at 50% MFU (an assumption: the
# paper gives no MFU), plus a fixed 20 ms per request.
CLUSTER_MODEL = hw.model("llama-3.1-70b")
CLUSTER_COMPUTE = hw.Compute(hw.gpu("a100"), mfu=0.5, n_gpus=8)
OVERHEAD_S = 0.02
_PER_TOKEN_S, _PER_TOKEN2_S = hw.prefill_coefficients(CLUSTER_MODEL, CLUSTER_COMPUTE)
# Measured on this 2-core machine (bench/bench_cluster.py), rounded down from ~5 million: block
# lookups per CPU second.
BLOCK_VISITS_PER_S = 3.0e6


@dataclass(frozen=True)
class PrefillModel:
    """f(len, prefix): seconds to prefill tokens prefix..len on one instance.

    ``overhead_s + per_token_s·(len − prefix) + per_token2_s·(len² − prefix²)``; ``for_hardware``
    takes the two coefficients from :func:`kvviz.common.hardware.prefill_coefficients`, so f is the paper
    GPU's prefill time plus the overhead. The defaults are CLUSTER_MODEL on CLUSTER_COMPUTE.
    """

    overhead_s: float = OVERHEAD_S
    per_token_s: float = _PER_TOKEN_S
    per_token2_s: float = _PER_TOKEN2_S

    @classmethod
    def for_hardware(cls, m: hw.ModelSpec, compute: hw.Compute, overhead_s: float = OVERHEAD_S) -> PrefillModel:
        """f for model ``m`` on ``compute``: the paper GPU's prefill time plus ``overhead_s``."""
        return cls(overhead_s, *hw.prefill_coefficients(m, compute))

    def time(self, length, prefix=0):
        """Prefill seconds for ``length`` tokens of which the first ``prefix`` are cached."""
        if isinstance(length, (int, float)) and isinstance(prefix, (int, float)):
            prefix = min(prefix, length)
            return (
                self.overhead_s
                + self.per_token_s * (length - prefix)
                + self.per_token2_s * (length * length - prefix * prefix)
            )
        length = np.asarray(length, dtype=np.float64)
        prefix = np.minimum(np.asarray(prefix, dtype=np.float64), length)
        t = self.overhead_s + self.per_token_s * (length - prefix) + self.per_token2_s * (length**2 - prefix**2)
        return float(t) if t.ndim == 0 else t

    def validate(self) -> None:
        for name in ("overhead_s", "per_token_s", "per_token2_s"):
            require(getattr(self, name) >= 0, f"{name} must be >= 0", field=name)
        require(
            self.per_token_s + self.per_token2_s > 0,
            "the prefill model must cost something per token",
            field="per_token_s",
        )


@dataclass(frozen=True)
class ConductorConfig:
    """The prefill pool and the Conductor's knobs."""

    instances: int = 8
    cache_blocks: int = 6000  # per instance; 6,000 x 160 MiB blocks ~ 1 TB of DRAM
    balancing_threshold: float = 1.25  # "manually adjusted" in the paper; no value published
    bandwidth_gbps: float = 800.0  # RDMA between prefill nodes
    transfer_latency_s: float = 0.001  # fixed cost of one remote fetch
    kv_bytes_per_token: float = CLUSTER_MODEL.kv_bytes_per_token
    speedup: float = 1.0  # replay the trace this many times faster
    ttft_slo_s: float = 30.0  # only counted (share over SLO), nothing is rejected here
    seed: int = 0  # for the random scheduler
    prefill: PrefillModel = field(default_factory=PrefillModel)

    def validate(self) -> None:
        require(1 <= self.instances <= 256, "prefill instances must be in 1..256", field="instances")
        require(
            1 <= self.cache_blocks <= 10_000_000, "cache capacity must be 1..10,000,000 blocks", field="cache_blocks"
        )
        require(
            self.balancing_threshold >= 1.0,
            "the balancing threshold must be >= 1 (a ratio of prefixes)",
            field="balancing_threshold",
        )
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
    prefix_blocks: int  # blocks not recomputed (local or fetched)
    fetched_blocks: int  # blocks copied from ``fetch_from`` (0 if none)
    fetch_from: int | None
    waited_s: float = 0.0  # idle time beyond the queue, waiting for the fetched KV to exist


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


def kvcentric_choice(
    prefix_blocks: list[int],
    queue_s: list[float],
    input_length: int,
    block_size: int,
    model: PrefillModel,
    threshold: float,
    transfer_s_per_block: float,
    transfer_latency_s: float = 0.0,
    tiebreak: list[float] | None = None,
    ready_in_s: list[float] | None = None,
) -> Choice:
    """Algorithm 1 for one request, given each instance's local prefix (blocks) and queue time.

    Each instance is costed on one branch only, as in the paper: with a prefix ratio at or over
    ``threshold`` it fetches the best prefix, otherwise it computes from its own. ``ready_in_s``
    says how long until each instance's prefix exists (its prefill is still running; None: all
    there). A fetch waits for it, and while it waits the instance may compute from its own prefix
    instead: it takes whichever is sooner.
    """
    ready = ready_in_s or [0.0] * len(prefix_blocks)
    best_len = max(prefix_blocks)
    best = min((i for i, p in enumerate(prefix_blocks) if p == best_len), key=lambda i: ready[i])
    wait = ready[best]
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    options = []  # per instance: (ttft, blocks used, blocks fetched, waited)
    for own, queue in zip(prefix_blocks, queue_s):
        local = (queue + f[own], own, 0, 0.0)
        if best_len == 0 or (own > 0 and best_len < threshold * own):
            options.append(local)
            continue
        n = best_len - own
        start = max(queue, wait)
        fetch = (
            start + n * transfer_s_per_block + (transfer_latency_s if n else 0.0) + f[best_len],
            best_len,
            n,
            start - queue,
        )
        options.append(local if wait > 0 and local[0] < fetch[0] else fetch)
    i = _argmin([o[0] for o in options], tiebreak)
    ttft, used, fetched, waited = options[i]
    return Choice(i, ttft, used, fetched, best if fetched else None, waited)


def cache_aware_choice(
    prefix_blocks: list[int],
    queue_s: list[float],
    input_length: int,
    block_size: int,
    model: PrefillModel,
    tiebreak: list[float] | None = None,
) -> Choice:
    """Local cache-aware: min over instances of T_queue + f(len, local prefix); no fetching."""
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    times = [q + f[p] for p, q in zip(prefix_blocks, queue_s)]
    i = _argmin(times, tiebreak)
    return Choice(i, times[i], prefix_blocks[i], 0, None)


class _LocalCache:
    """One instance's LRU block cache: block id -> the time its KV exists (its prefill's end)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.blocks: OrderedDict[int, float] = OrderedDict()

    def match(self, ids: list[int]) -> tuple[int, float]:
        """Leading blocks of ``ids`` held here, and when the last of them exists."""
        n, ready, blocks = 0, 0.0, self.blocks
        for h in ids:
            at = blocks.get(h)
            if at is None:
                break
            n += 1
            ready = max(ready, at)
        return n, ready

    def store(self, ids: list[int], ready_at: float = 0.0) -> None:
        blocks = self.blocks
        for h in reversed(ids):  # the head of the prefix ends most recently used
            at = blocks.pop(h, ready_at)
            blocks[h] = min(at, ready_at)
        while len(blocks) > self.capacity:
            blocks.popitem(last=False)


@dataclass(frozen=True)
class ScheduleResult:
    """Per-request outcome of one scheduler over one trace."""

    scheduler: str
    ttft_s: np.ndarray
    instance: np.ndarray
    prefix_blocks: np.ndarray  # blocks not recomputed, per request
    fetched_blocks: np.ndarray  # blocks fetched from another instance, per request
    n_blocks: np.ndarray
    busy_s: np.ndarray  # prefill + transfer seconds, per instance
    ttft_slo_s: float
    fetch_from: np.ndarray  # per request: the instance its fetched blocks came from, -1 if none
    fetch_start_s: np.ndarray  # per request: when that transfer started (NaN if none)
    # KVCache-centric only: every prefix ratio best / own (0 < own < best) Algorithm 1 compared with
    # the balancing threshold, and how many requests had one. Elsewhere the threshold decides
    # nothing: an instance with no prefix is always costed with a fetch, one with the best prefix never.
    threshold_ratios: np.ndarray = field(default_factory=lambda: np.empty(0))
    threshold_requests: int = 0

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
            "scheduler": self.scheduler,
            "requests": int(len(self.ttft_s)),
            "mean_ttft_s": round(self.mean_ttft_s, 3),
            "p90_ttft_s": round(self.p90_ttft_s, 3),
            "over_ttft_slo": round(float(np.mean(self.ttft_s > self.ttft_slo_s)) if len(self.ttft_s) else 0.0, 4),
            "hit_ratio": round(self.hit_ratio, 4),
            "busiest_over_mean_load": round(self.imbalance, 3),
            "remote_fetches": self.remote_fetches,
            "replicated_blocks": self.replicated_blocks,
        }


def schedule(trace: Trace, config: ConductorConfig = ConductorConfig(), scheduler: str = "kvcentric") -> ScheduleResult:
    """Replay ``trace`` through the prefill pool with one scheduler."""
    config.validate()
    require(
        scheduler in SCHEDULERS,
        f"unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}",
        field="scheduler",
    )
    require(
        trace.has_block_ids,
        "this trace has no block ids (hash_ids), so prefix reuse cannot be "
        "simulated; load a trace with hash_ids for the scheduling comparison",
        field="hash_ids",
    )
    budget.check(cost(trace, config))
    n = trace.n_requests
    arrival = (trace.requests["timestamp"].to_numpy(np.float64) / 1000.0 / config.speedup).tolist()
    length = trace.requests["input_length"].to_numpy(np.int64).tolist()
    caches = [_LocalCache(config.cache_blocks) for _ in range(config.instances)]
    free_at = [0.0] * config.instances
    busy = [0.0] * config.instances
    out: dict[str, list] = {
        "ttft": [0.0] * n,
        "inst": [0] * n,
        "prefix": [0] * n,
        "fetched": [0] * n,
        "from": [-1] * n,
        "start": [np.nan] * n,
    }
    picks = np.random.default_rng(config.seed).integers(config.instances, size=n).tolist()
    per_block = config.transfer_s_per_block(trace.block_size)
    bs, model = trace.block_size, config.prefill
    blocks, offsets = trace.blocks.tolist(), trace.offsets.tolist()
    ratios: list[float] = []
    decided = 0
    for r in range(n):
        t, ids, L = arrival[r], blocks[offsets[r] : offsets[r + 1]], length[r]
        queue = [max(f - t, 0.0) for f in free_at]
        if scheduler in ("random", "balance"):
            i = picks[r] if scheduler == "random" else _argmin(queue, busy)
            own = caches[i].match(ids)[0]
            c = Choice(i, queue[i] + model.time(L, prefix_tokens(own, L, bs)), own, 0, None)
        else:
            matches = [cache.match(ids) for cache in caches]
            prefixes = [n for n, _ in matches]
            if scheduler == "kvcentric":
                partial = _partial_ratios(prefixes)
                ratios += partial
                decided += bool(partial)
            c = (
                cache_aware_choice(prefixes, queue, L, bs, model, busy)
                if scheduler == "cache"
                else kvcentric_choice(
                    prefixes,
                    queue,
                    L,
                    bs,
                    model,
                    config.balancing_threshold,
                    per_block,
                    config.transfer_latency_s,
                    busy,
                    [max(at - t, 0.0) for _, at in matches],
                )
            )
        caches[c.instance].store(ids, t + c.ttft_s)
        free_at[c.instance] = t + c.ttft_s
        busy[c.instance] += c.ttft_s - queue[c.instance] - c.waited_s
        out["ttft"][r], out["inst"][r], out["prefix"][r], out["fetched"][r] = (
            c.ttft_s,
            c.instance,
            c.prefix_blocks,
            c.fetched_blocks,
        )
        if c.fetch_from is not None:
            out["from"][r], out["start"][r] = c.fetch_from, t + queue[c.instance] + c.waited_s
    return ScheduleResult(
        scheduler,
        np.asarray(out["ttft"]),
        np.asarray(out["inst"], np.int64),
        np.asarray(out["prefix"], np.int64),
        np.asarray(out["fetched"], np.int64),
        trace.requests["n_blocks"].to_numpy(np.int64),
        np.asarray(busy),
        config.ttft_slo_s,
        np.asarray(out["from"], np.int64),
        np.asarray(out["start"], np.float64),
        np.asarray(ratios, np.float64),
        decided,
    )


def _partial_ratios(prefix_blocks: list[int]) -> list[float]:
    """best / own for each instance holding part of the longest prefix (0 < own < best): the only
    ones whose branch in Algorithm 1 depends on the balancing threshold."""
    best = max(prefix_blocks)
    return [best / own for own in prefix_blocks if 0 < own < best]


def cost(trace: Trace, config: ConductorConfig, schedulers: int = 1) -> budget.Cost:
    """Estimated CPU time of replaying ``trace`` through ``schedulers`` schedulers: every request
    looks its blocks up on every instance (the cache-aware ones do; the others on one)."""
    visits = (int(trace.requests["n_blocks"].sum()) + trace.n_requests) * (config.instances + 1) * schedulers
    return budget.cost(
        "prefill scheduling replay",
        visits,
        "block lookups",
        BLOCK_VISITS_PER_S,
        "the number of requests or of prefill instances",
    )


def compare(
    trace: Trace, config: ConductorConfig = ConductorConfig(), schedulers: tuple[str, ...] = SCHEDULERS
) -> dict[str, ScheduleResult]:
    """Every scheduler over the same trace and pool (refused before it starts if over the work budget)."""
    budget.check(cost(trace, config, len(schedulers)))
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


def fig8_order_holds(results: dict[str, ScheduleResult]) -> bool:
    """Whether each scheduler's average TTFT, as shown (to 10 ms), is above the next one's in Fig. 8's order."""
    sims = [round(results[s].mean_ttft_s, 2) for s in PAPER_FIG8_TTFT_S if s in results]
    return all(a > b for a, b in zip(sims, sims[1:]))


def paper_rows(results: dict[str, ScheduleResult]) -> list[dict[str, str]]:
    """Fig. 8 and the lecture notes' hit ratios beside this simulation, each row with a status
    computed from the numbers (:mod:`kvviz.common.paper`)."""
    rows: list[dict[str, str]] = []
    for s, ttft in PAPER_FIG8_TTFT_S.items():
        if s in results:
            rows.append(
                paper.close(
                    f"Average TTFT: {SCHEDULER_LABELS[s]}",
                    f"{ttft:.2f} s",
                    f"{results[s].mean_ttft_s:.2f} s",
                    (ttft, results[s].mean_ttft_s),
                    0.25,
                )
            )
    order = [s for s in PAPER_FIG8_TTFT_S if s in results]
    if len(order) > 1:
        sims = [results[s].mean_ttft_s for s in order]
        rows.append(
            paper.check(
                "Order of average TTFT",
                " > ".join(SCHEDULER_LABELS[s] for s in order),
                " > ".join(f"{v:.2f} s" for v in sims),
                fig8_order_holds(results),
                "each scheduler slower than the next, as in Fig. 8",
            )
        )
    if "balance" in results and "kvcentric" in results:
        sim = results["balance"].mean_ttft_s / max(results["kvcentric"].mean_ttft_s, 1e-12)
        reported = PAPER_FIG8_TTFT_S["balance"] / PAPER_FIG8_TTFT_S["kvcentric"]
        rows.append(
            paper.close(
                "Load balancing ÷ KVCache-centric, average TTFT",
                f"{reported:.1f}× (lecture notes: 8.7 s / 0.64 s = 13.6×)",
                f"{sim:.1f}×",
                (reported, sim),
                0.25,
            )
        )
    for s, hit in NOTES_HIT_RATIO.items():
        if s in results:
            rows.append(
                paper.close(
                    f"Cache hit ratio: {SCHEDULER_LABELS[s]} (lecture notes)",
                    f"{hit:.2f}",
                    f"{results[s].hit_ratio:.2f}",
                    (hit, results[s].hit_ratio),
                    0.1,
                )
            )
    return rows


def display_table(results: dict[str, ScheduleResult]) -> pd.DataFrame:
    """One row per scheduler with readable column names, for a page or report."""
    rows = [
        {
            "Scheduler": SCHEDULER_LABELS[k],
            "Requests": len(r.ttft_s),
            "Mean TTFT (s)": round(r.mean_ttft_s, 2),
            "P90 TTFT (s)": round(r.p90_ttft_s, 2),
            "Hit ratio": round(r.hit_ratio, 3),
            "Busiest ÷ mean load": round(r.imbalance, 2),
            "Remote fetches": r.remote_fetches,
            "Replicated blocks": r.replicated_blocks,
            "Over TTFT SLO": f"{float(np.mean(r.ttft_s > r.ttft_slo_s)) if len(r.ttft_s) else 0.0:.0%}",
        }
        for k, r in results.items()
    ]
    return pd.DataFrame(rows)
