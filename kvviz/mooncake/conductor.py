"""Mooncake's Conductor: KVCache-centric scheduling with admission (Algorithm 1, arXiv v3 §6.1; FAST'25 §4.1).

Requests arrive in trace order. For each one the Conductor predicts its TTFT on the prefill
instances and places it (``placement``: random, load balancing, cache-aware or KVCache-centric),
picks a decode instance by load balancing, which predicts its TBT (``decode_pool``), and, when
``reject`` is on, turns the request away if the predicted TTFT misses the TTFT SLO or the
predicted TBT misses the TBT SLO (the paper's HTTP 429). A rejected request takes no queue, cache
or decode slot.

``f`` is the prefill-time predictor ``PrefillModel``; predictions equal the simulated execution,
so TTFT = queue + transfer + prefill exactly and an admitted request meets the TTFT it was admitted
on. Prefill is FIFO per instance; decode runs continuous batches whose TBT grows with the batch and
its KV. Goodput counts the requests served within both SLOs, per second of the replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kvviz.common import budget, paper
from kvviz.common.errors import require
from kvviz.mooncake.decode_pool import DecodeModel, DecodePool
from kvviz.mooncake.placement import SCHEDULERS, Choice, Fetching, Placer
from kvviz.mooncake.prefill import CLUSTER_COMPUTE, CLUSTER_MODEL, PrefillModel
from kvviz.prefix_cache.instance import TimedCache, nodes_of
from kvviz.traces import Trace

__all__ = [
    "CLUSTER_COMPUTE",
    "CLUSTER_MODEL",
    "SCHEDULERS",
    "ConductorConfig",
    "DecodeModel",
    "PrefillModel",
    "ScheduleResult",
    "compare",
    "cost",
    "offered_load",
    "schedule",
]

SCHEDULER_LABELS = {
    "random": "Random",
    "balance": "Load balancing",
    "cache": "Cache-aware",
    "kvcentric": "KVCache-centric",
}
ACCEPTED, REJECTED_TTFT, REJECTED_TBT = 0, 1, 2
"""A request's outcome: admitted, or rejected because its predicted TTFT (checked first) or TBT missed its SLO."""
OUTCOME_NAMES = {ACCEPTED: "accepted", REJECTED_TTFT: "rejected: TTFT", REJECTED_TBT: "rejected: TBT"}
# Measured on this 2-core machine (bench/bench_cluster.py), rounded down from ~5 million: block
# lookups per CPU second.
BLOCK_VISITS_PER_S = 3.0e6


@dataclass(frozen=True)
class ConductorConfig:
    """The prefill and decode pools, the SLOs and the Conductor's knobs."""

    instances: int = 8
    cache_blocks: int = 6000  # per instance; 6,000 x 160 MiB blocks ~ 1 TB of DRAM
    balancing_threshold: float = 1.25  # "manually adjusted" in the paper; no value published
    bandwidth_gbps: float = 800.0  # RDMA between prefill nodes
    transfer_latency_s: float = 0.001  # fixed cost of one remote fetch
    kv_bytes_per_token: float = CLUSTER_MODEL.kv_bytes_per_token
    speedup: float = 1.0  # replay the trace this many times faster
    ttft_slo_s: float = 30.0  # the paper's TTFT SLO in §8
    tbt_slo_s: float = 0.1  # the paper's tightest TBT SLO in §8
    reject: bool = False  # reject a request whose predicted TTFT or TBT misses its SLO
    decode_instances: int = 8  # 8P+8D, as in Fig. 8
    seed: int = 0  # for the random scheduler
    prefill: PrefillModel = field(default_factory=PrefillModel)
    decode: DecodeModel = field(default_factory=lambda: DecodeModel.for_hardware(CLUSTER_MODEL, CLUSTER_COMPUTE))

    def validate(self) -> None:
        require(1 <= self.instances <= 256, "prefill instances must be in 1..256", field="instances")
        require(1 <= self.decode_instances <= 256, "decode instances must be in 1..256", field="decode_instances")
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
        for name, label in (("ttft_slo_s", "the TTFT SLO"), ("tbt_slo_s", "the TBT SLO")):
            value = getattr(self, name)
            require(value > 0 and not math.isinf(value), f"{label} must be a positive number of seconds", field=name)
        self.prefill.validate()
        self.decode.validate()
        alone = self.decode.tbt(1, 0)
        require(
            not self.reject or alone <= self.tbt_slo_s,
            f"the TBT SLO ({self.tbt_slo_s * 1000:g} ms) is shorter than one decode step of a request alone "
            f"({alone * 1000:.0f} ms), so every request would be rejected: raise the TBT SLO",
        )

    def transfer_s_per_block(self, block_size: int) -> float:
        """EstimateKVCacheTransferTime per block: bytes over the link, no congestion."""
        return block_size * self.kv_bytes_per_token * 8 / (self.bandwidth_gbps * 1e9)

    def verdict(self, ttft_s: float, tbt_s: float) -> int:
        """ACCEPTED, or the first SLO the predictions miss when rejection is on."""
        if not self.reject:
            return ACCEPTED
        return REJECTED_TTFT if ttft_s > self.ttft_slo_s else REJECTED_TBT if tbt_s > self.tbt_slo_s else ACCEPTED


@dataclass(frozen=True)
class ScheduleResult:
    """Per-request outcome of one scheduler over one trace.

    ``ttft_s`` and ``predicted_tbt_s`` hold the Conductor's predictions for every request, rejected
    ones too; the statistics (mean and p90 TTFT, hit ratio) are over the admitted requests.
    """

    scheduler: str
    ttft_s: np.ndarray
    instance: np.ndarray  # -1 if rejected
    prefix_blocks: np.ndarray  # blocks not recomputed, per request
    fetched_blocks: np.ndarray  # blocks fetched from another instance, per request
    n_blocks: np.ndarray
    busy_s: np.ndarray  # prefill + transfer seconds, per instance
    ttft_slo_s: float
    fetch_from: np.ndarray  # per request: the instance its fetched blocks came from, -1 if none
    fetch_start_s: np.ndarray  # per request: when that transfer started (NaN if none)
    outcome: np.ndarray  # per request: ACCEPTED, REJECTED_TTFT or REJECTED_TBT
    predicted_tbt_s: np.ndarray  # per request: TBT on its decode instance as predicted on arrival
    tbt_s: np.ndarray  # per request: mean time between its tokens while decoding (NaN if rejected)
    tbt_slo_s: float
    span_s: float  # first to last arrival of the replay
    peak_tbt_s: float  # the slowest decode step of the run
    # KVCache-centric only: every prefix ratio best / own (0 < own < best) Algorithm 1 compared with
    # the balancing threshold, and how many requests had one. Elsewhere the threshold decides
    # nothing: an instance with no prefix is always costed with a fetch, one with the best prefix never.
    threshold_ratios: np.ndarray = field(default_factory=lambda: np.empty(0))
    threshold_requests: int = 0

    @property
    def accepted(self) -> np.ndarray:
        return self.outcome == ACCEPTED

    @property
    def accepted_ttft_s(self) -> np.ndarray:
        return self.ttft_s[self.accepted]

    @property
    def mean_ttft_s(self) -> float:
        t = self.accepted_ttft_s
        return float(t.mean()) if len(t) else 0.0

    @property
    def p90_ttft_s(self) -> float:
        t = self.accepted_ttft_s
        return float(np.percentile(t, 90)) if len(t) else 0.0

    def rejected(self, reason: int) -> int:
        return int(np.count_nonzero(self.outcome == reason))

    @property
    def within_slo(self) -> int:
        """Admitted requests whose TTFT and mean TBT both met their SLOs."""
        ok = self.accepted & (self.ttft_s <= self.ttft_slo_s) & (self.tbt_s <= self.tbt_slo_s)
        return int(np.count_nonzero(ok))

    @property
    def goodput_rps(self) -> float:
        """Requests served within both SLOs per second of the replay."""
        return self.within_slo / self.span_s if self.span_s > 0 else 0.0

    @property
    def over_ttft_slo(self) -> float:
        """Share of the admitted requests whose TTFT missed the SLO."""
        t = self.accepted_ttft_s
        return float(np.mean(t > self.ttft_slo_s)) if len(t) else 0.0

    @property
    def over_tbt_slo(self) -> float:
        """Share of the admitted requests whose mean TBT missed the SLO."""
        t = self.tbt_s[self.accepted]
        return float(np.mean(t > self.tbt_slo_s)) if len(t) else 0.0

    @property
    def hit_ratio(self) -> float:
        """Blocks served from a cache (local or fetched) over all blocks the admitted requests asked for."""
        total = int(self.n_blocks[self.accepted].sum())
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
        tbt = self.tbt_s[self.accepted]
        return {
            "scheduler": self.scheduler,
            "requests": int(len(self.ttft_s)),
            "accepted": int(np.count_nonzero(self.accepted)),
            "rejected_ttft": self.rejected(REJECTED_TTFT),
            "rejected_tbt": self.rejected(REJECTED_TBT),
            "within_slo": self.within_slo,
            "goodput_rps": round(self.goodput_rps, 4),
            "mean_ttft_s": round(self.mean_ttft_s, 3),
            "p90_ttft_s": round(self.p90_ttft_s, 3),
            "over_ttft_slo": round(self.over_ttft_slo, 4),
            "mean_tbt_s": round(float(tbt.mean()), 4) if len(tbt) else 0.0,
            "peak_tbt_s": round(self.peak_tbt_s, 4),
            "hit_ratio": round(self.hit_ratio, 4),
            "busiest_over_mean_load": round(self.imbalance, 3),
            "remote_fetches": self.remote_fetches,
            "replicated_blocks": self.replicated_blocks,
        }


class _Record:
    """The per-request columns of a run, filled in as requests are placed."""

    def __init__(self, n: int):
        self.ttft, self.tbt = [0.0] * n, [0.0] * n
        self.outcome = [ACCEPTED] * n
        self.inst, self.prefix, self.fetched, self.source = [-1] * n, [0] * n, [0] * n, [-1] * n
        self.start = [math.nan] * n

    def place(self, r: int, c: Choice, t: float) -> None:
        self.inst[r], self.prefix[r], self.fetched[r] = c.instance, c.prefix_blocks, c.fetched_blocks
        if c.fetch_from is not None:
            self.source[r], self.start[r] = c.fetch_from, t + c.queue_s + c.waited_s


def _check(trace: Trace, config: ConductorConfig, scheduler: str) -> None:
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


def schedule(trace: Trace, config: ConductorConfig = ConductorConfig(), scheduler: str = "kvcentric") -> ScheduleResult:
    """Replay ``trace`` through the prefill and decode pools with one scheduler (and rejection, if on)."""
    _check(trace, config, scheduler)
    n = trace.n_requests
    arrival = (trace.requests["timestamp"].to_numpy(np.float64) / 1000.0 / config.speedup).tolist()
    length = trace.requests["input_length"].to_numpy(np.int64).tolist()
    output = trace.requests["output_length"].to_numpy(np.int64).tolist()
    fetching = Fetching(
        config.balancing_threshold, config.transfer_s_per_block(trace.block_size), config.transfer_latency_s
    )
    picks = np.random.default_rng(config.seed).integers(config.instances, size=n).tolist()
    caches = instance_caches(trace.blocks, trace.offsets, output, config.instances, config.cache_blocks)
    placer = Placer(scheduler, caches, trace.block_size, config.prefill, fetching, picks)
    pool = DecodePool(config.decode_instances, config.decode, n)
    free_at = [0.0] * config.instances
    rec = _Record(n)
    for r in range(n):
        t, L = arrival[r], length[r]
        pool.advance(t)
        c = placer.choose(r, L, t, [max(f - t, 0.0) for f in free_at])
        d, tbt = pool.choose(L)
        rec.ttft[r], rec.tbt[r], rec.outcome[r] = c.ttft_s, tbt, config.verdict(c.ttft_s, tbt)
        if rec.outcome[r] == ACCEPTED:
            placer.commit(c, r, t)
            free_at[c.instance] = t + c.ttft_s
            pool.admit(d, r, t + c.ttft_s, L, output[r])
            rec.place(r, c, t)
    pool.drain()
    return ScheduleResult(
        scheduler=scheduler,
        ttft_s=np.asarray(rec.ttft),
        instance=np.asarray(rec.inst, np.int64),
        prefix_blocks=np.asarray(rec.prefix, np.int64),
        fetched_blocks=np.asarray(rec.fetched, np.int64),
        n_blocks=trace.requests["n_blocks"].to_numpy(np.int64),
        busy_s=np.asarray(placer.busy),
        ttft_slo_s=config.ttft_slo_s,
        fetch_from=np.asarray(rec.source, np.int64),
        fetch_start_s=np.asarray(rec.start, np.float64),
        outcome=np.asarray(rec.outcome, np.int8),
        predicted_tbt_s=np.asarray(rec.tbt),
        tbt_s=pool.tbt_s(),
        tbt_slo_s=config.tbt_slo_s,
        span_s=arrival[-1] - arrival[0] if n else 0.0,
        peak_tbt_s=pool.peak_tbt_s,
        threshold_ratios=placer.threshold_ratios(),
        threshold_requests=placer.decided,
    )


def instance_caches(blocks: np.ndarray, offsets: np.ndarray, outputs, instances: int, capacity: int) -> list:
    """Each prefill instance's cache of ``capacity`` blocks: the cluster's (SGLang's radix cache, LRU),
    knowing when each block's KV exists."""
    shape = nodes_of(blocks, offsets, np.asarray(outputs, np.int64))
    return [TimedCache(shape, capacity) for _ in range(instances)]


def cost(trace: Trace, config: ConductorConfig, schedulers: int = 1) -> budget.Cost:
    """Estimated CPU time of replaying ``trace`` through ``schedulers`` schedulers: every request
    looks its blocks up on every prefill instance (the cache-aware ones do; the others on one), and
    each of its three decode events (pick, join, finish) scans the decode instances."""
    lookups = (int(trace.requests["n_blocks"].sum()) + trace.n_requests) * (config.instances + 1)
    scans = 3 * trace.n_requests * (config.decode_instances + 1)
    return budget.cost(
        "scheduling replay",
        (lookups + scans) * schedulers,
        "block lookups",
        BLOCK_VISITS_PER_S,
        "the number of requests or of instances",
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
            "Accepted": int(np.count_nonzero(r.accepted)),
            "Rejected: TTFT": r.rejected(REJECTED_TTFT),
            "Rejected: TBT": r.rejected(REJECTED_TBT),
            "Mean TTFT (s)": round(r.mean_ttft_s, 2),
            "P90 TTFT (s)": round(r.p90_ttft_s, 2),
            "Over TTFT SLO": f"{r.over_ttft_slo:.0%}",
            "Mean TBT (ms)": round(r.summary()["mean_tbt_s"] * 1000, 1),
            "Goodput (req/s)": round(r.goodput_rps, 3),
            "Hit ratio": round(r.hit_ratio, 3),
            "Busiest ÷ mean load": round(r.imbalance, 2),
            "Remote fetches": r.remote_fetches,
            "Replicated blocks": r.replicated_blocks,
        }
        for k, r in results.items()
    ]
    return pd.DataFrame(rows)
