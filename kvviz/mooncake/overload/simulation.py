"""Overload-oriented admission in a disaggregated cluster (Mooncake arXiv v3 §7, Table 3, Figs. 9-10).

A discrete-event simulation of a prefill pool and a decode pool under overload:

* **prefill**: P instances, FIFO, prefill time from ``PrefillModel``; a new request goes to the
  instance whose queue clears first, and its TTFT is that queue plus its own prefill. With
  KVCache-centric placement (a trace with block ids) Algorithm 1 places it instead, over the
  instances' caches (:mod:`kvviz.mooncake.placement`): its TTFT is then that instance's queue,
  any fetch, and the prefill of what is not cached. Prefill load (paper: predicted TTFT / l_ttft)
  is that TTFT over the TTFT SLO.
* **decode**: D instances running continuous batches. With b requests in a batch every request
  gets a token each TBT(b) = tbt_base + tbt_per_request * b seconds (simulated exactly with a
  virtual token clock per instance). Decode load of an instance is max(TBT(b) / l_tbt,
  b / batch limit); a request joins the least-loaded instance, and the decode instance's own
  scheduler rejects it if that would push the load over the threshold (its prefill is wasted).

Admission policies, all with the same stage checks, differ in what they look at on arrival:

* ``baseline``: only the prefill load; decode load is checked when the prefill is done;
* ``early`` (Early Rejection): max(prefill load, current decode load);
* ``predict`` (Early Rejection based on Prediction): the decode load predicted for the moment
  this request's prefill will finish, with the paper's system-level predictor: every decode is
  assumed to last a uniform ``t_d``, requests whose prefill ends by then join, requests whose
  decode began more than ``t_d`` before then leave;
* ``oracle``: the same prediction with each request's true output length (the lecture notes'
  "ideal prediction"; the paper calls request-level prediction future work).

Outputs: totals, a windowed timeline, load samples and the oscillation strength of the prefill
load (:mod:`kvviz.mooncake.overload.stats`).

Work is bounded before anything runs: the load samples and timeline windows are capped in number
(a span of years is sampled more coarsely, not into gigabytes), and ``cost`` estimates a run's CPU
seconds from its arrivals and samples for :mod:`kvviz.common.budget`. Event times are compared exactly
(a decode event pops the request it was scheduled for), so no float tolerance can stall the loop
at large times.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common.errors import quote, require
from kvviz.mooncake.conductor import BLOCK_VISITS_PER_S, ConductorConfig, instance_caches
from kvviz.mooncake.overload.arrivals import Arrivals
from kvviz.mooncake.overload.config import POLICIES, ClusterConfig
from kvviz.mooncake.overload.stats import oscillation
from kvviz.mooncake.placement import Fetching, Placer

COMPLETED, REJECTED_EARLY, REJECTED_AFTER_PREFILL = 0, 1, 2
MAX_SAMPLES = 100_000  # load samples per run: a longer span is sampled more coarsely
MAX_WINDOWS = 10_000  # timeline windows per run
# Measured on this 2-core machine (bench/bench_cluster.py), rounded down: one policy over one run
# handles 80,000-120,000 arrivals and about 3 million load samples per CPU second.
ARRIVALS_PER_S = 50_000.0
SAMPLES_PER_S = 500_000.0
INSTANCES_PER_DOUBLING = 150.0
_INF = math.inf


def steps(span_s: float, config: ClusterConfig) -> tuple[float, float]:
    """(sample step, window) for a run spanning ``span_s``: the configured ones, or whole multiples
    of them large enough that at most MAX_SAMPLES samples and MAX_WINDOWS windows cover the span."""

    def step(base: float, most: int) -> float:
        return base * max(1, math.ceil(span_s / (base * most)))

    return step(config.sample_s, MAX_SAMPLES), step(config.window_s, MAX_WINDOWS)


def cost(n_arrivals: float, span_s: float, config: ClusterConfig, runs: int = 1, blocks: int = 0) -> budget.Cost:
    """Estimated CPU time of ``runs`` simulations of ``n_arrivals`` arrivals (holding ``blocks``
    block ids) over ``span_s`` seconds.

    An arrival costs more with more instances (each event scans the pools): measured, 6P+2D runs
    4.3× faster per arrival than 256P+256D, hence the factor 1 + instances / INSTANCES_PER_DOUBLING.
    KVCache-centric placement also looks every block up on every prefill instance.
    """
    samples = span_s / steps(span_s, config)[0] + 1
    per_arrival = (1 + (config.prefill_instances + config.decode_instances) / INSTANCES_PER_DOUBLING) / ARRIVALS_PER_S
    lookups = (blocks + n_arrivals) * (config.prefill_instances + 1) if config.placement == "kvcentric" else 0
    seconds = runs * (n_arrivals * per_arrival + samples / SAMPLES_PER_S + lookups / BLOCK_VISITS_PER_S)
    return budget.Cost(
        "cluster overload simulation",
        runs * n_arrivals,
        "arrivals",
        seconds,
        "the duration, the overload factor, the number of seeds or of instances",
    )


@dataclass(frozen=True)
class OverloadResult:
    """One run: totals, the windowed timeline and the sampled loads."""

    policy: str
    totals: dict
    timeline: pd.DataFrame  # per window: start_s, arrived, admitted, rejected_early, rejected_decode, completed
    loads: pd.DataFrame  # per sample: time_s, prefill_load, decode_load
    outcome: np.ndarray  # per request: COMPLETED, REJECTED_EARLY or REJECTED_AFTER_PREFILL
    finish_s: np.ndarray  # per request: when its last token was produced (NaN if rejected)


def auto_t_d(arrivals: Arrivals, config: ClusterConfig) -> float:
    """The predictor's default uniform decode time: mean output length x the TBT of a full batch."""
    mean_out = float(np.mean(arrivals.output_length)) if len(arrivals.output_length) else 1.0
    return mean_out * config.tbt(config.max_batch())


class _Decode:
    """One decode instance: a continuous batch advanced by a virtual token clock.

    ``done`` holds (virtual finish, request), sorted: a request finishes when the clock ``v``
    (tokens each member has produced since the clock started) reaches its entry.
    """

    __slots__ = ("b", "v", "last", "done", "version")

    def __init__(self):
        self.b, self.v, self.last, self.done, self.version = 0, 0.0, 0.0, [], 0

    def advance(self, t: float, cfg: ClusterConfig) -> None:
        if t <= self.last:
            return
        if self.b:
            self.v += (t - self.last) / cfg.tbt(self.b)
        self.last = t

    def next_finish(self, cfg: ClusterConfig) -> float:
        return self.last + (self.done[0][0] - self.v) * cfg.tbt(self.b) if self.b else _INF


def _batch(d: _Decode) -> int:
    return d.b


def _placer(arrivals: Arrivals, cfg: ClusterConfig) -> Placer | None:
    """Algorithm 1 over the prefill instances' caches, with the Conductor's fetch defaults; None
    when the queue that clears first places each request."""
    if cfg.placement != "kvcentric":
        return None
    c = ConductorConfig()
    fetching = Fetching(c.balancing_threshold, c.transfer_s_per_block(arrivals.block_size), c.transfer_latency_s)
    caches = instance_caches(
        arrivals.blocks, arrivals.offsets, arrivals.output_length, cfg.prefill_instances, cfg.cache_blocks
    )
    return Placer("kvcentric", caches, arrivals.block_size, cfg.prefill, fetching, [])


class _Sim:
    """The event loop state for one run."""

    def __init__(self, arrivals: Arrivals, cfg: ClusterConfig, policy: str):
        self.cfg, self.policy = cfg, policy
        self.t_in = arrivals.time_s.tolist()
        self.L = arrivals.input_length.tolist()
        self.out = arrivals.output_length.tolist()
        self.tp = np.asarray(cfg.prefill.time(arrivals.input_length), dtype=np.float64).reshape(-1).tolist()
        self.work = [0.0] * len(self.t_in)  # per admitted request: its prefill (and fetch) seconds
        self.placer = _placer(arrivals, cfg)
        self.t_d = cfg.t_d_s or auto_t_d(arrivals, cfg)
        self.free_at = [0.0] * cfg.prefill_instances
        self.dec = [_Decode() for _ in range(cfg.decode_instances)]
        self.events: list = []  # (time, seq, kind, payload)
        self.seq = 0
        self.pf_finish: list[float] = []  # predicted prefill ends of admitted requests, sorted
        self.pf_head = 0
        self.pf_decode_end: list[float] = []  # oracle: predicted decode ends of requests in prefill, sorted
        self.pf_decode_end_of: dict[int, float] = {}
        self.tbt_full = cfg.tbt(cfg.max_batch())
        self.starts: list[float] = []  # decode start times, in time order
        self.finished_starts: list[float] = []  # decode start times of finished requests, sorted
        self.start_of: dict[int, float] = {}
        self.outcome = [COMPLETED] * len(self.t_in)
        self.finish = [math.nan] * len(self.t_in)
        horizon = arrivals.span_s
        self.sample_s, self.window_s = steps(horizon, cfg)
        self.n_windows = int(horizon // self.window_s) + 1
        self.counts = [[0] * self.n_windows for _ in range(5)]
        self.load_table = [cfg.decode_load(b) for b in range(cfg.batch_limit + 2)]
        self.n_samples = int(horizon // self.sample_s) + 1
        self.pre_samples = np.zeros(self.n_samples)
        self.dec_samples = np.zeros(self.n_samples)
        self.next_k = 0  # index of the next load sample to take
        self.next_sample = 0.0  # its time
        self.dec_sum = cfg.decode_instances * self.load_table[0]  # sum of the decode instances' loads
        self.horizon = horizon
        self.wasted_s = 0.0
        self.busy_s = 0.0
        self.ttft_sum = 0.0

    # --- bookkeeping -------------------------------------------------------------------------
    def push(self, t: float, kind: int, payload) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def count(self, row: int, t: float) -> None:
        w = int(t // self.window_s)
        self.counts[row][w if w < self.n_windows else -1] += 1

    def load(self, b: int) -> float:
        """Decode load of an instance with a batch of ``b`` (tabulated)."""
        table = self.load_table
        return table[b] if b < len(table) else self.cfg.decode_load(b)

    def resize(self, d: _Decode, b: int) -> None:
        """Set decode instance ``d``'s batch to ``b``, keeping the sum of decode loads current."""
        self.dec_sum += self.load(b) - self.load(d.b)
        d.b = b

    def sample_until(self, t: float) -> None:
        """Take every load sample due by ``t`` (nothing changes between events but the clock)."""
        end = min(int(t // self.sample_s), self.n_samples - 1) + 1
        if end <= self.next_k:
            return
        s = np.arange(self.next_k, end) * self.sample_s
        free = np.sort(np.asarray(self.free_at))
        above = np.concatenate(([0.0], np.cumsum(free[::-1])))  # sum of the j largest queue ends
        n_above = len(free) - np.searchsorted(free, s, side="right")
        self.pre_samples[self.next_k : end] = (above[n_above] - s * n_above) / (len(free) * self.cfg.ttft_slo_s)
        self.dec_samples[self.next_k : end] = self.dec_sum / len(self.dec)
        self.next_k = end
        self.next_sample = end * self.sample_s

    # --- decode load as each policy sees it on arrival ----------------------------------------
    def decode_load_now(self) -> float:
        return self.load(min(d.b for d in self.dec) + 1)

    def predicted_decode_load(self, t: float, t_f: float) -> float:
        """System-level prediction: uniform decode time t_d (paper §7.3)."""
        x = t_f - self.t_d
        in_decode = (len(self.starts) - bisect_right(self.starts, x)) - (
            len(self.finished_starts) - bisect_right(self.finished_starts, x)
        )
        joining = bisect_right(self.pf_finish, t_f, self.pf_head) - bisect_right(self.pf_finish, x, self.pf_head)
        return self.load((in_decode + joining) // len(self.dec) + 1)

    def oracle_decode_load(self, t: float, t_f: float) -> float:
        """Request-level prediction with true output lengths: requests decoding now at their
        instance's current TBT, requests still in prefill at the TBT of a full batch."""
        cfg, n = self.cfg, 0
        for d in self.dec:
            if d.b:
                v_now = d.v + (t - d.last) / cfg.tbt(d.b)
                left = (t_f - t) / cfg.tbt(d.b)
                n += len(d.done) - bisect_right(d.done, (v_now + left, _INF))
        # requests still in prefill that will be decoding at t_f: prefill ended by then, decode not yet
        ended_prefill = bisect_right(self.pf_finish, t_f, self.pf_head) - self.pf_head
        n += ended_prefill - bisect_right(self.pf_decode_end, t_f)
        return self.load(n // len(self.dec) + 1)

    # --- events ------------------------------------------------------------------------------
    def place(self, r: int, t: float):
        """(instance, TTFT, prefill work, Algorithm 1's choice or None) for request ``r`` arriving at ``t``."""
        if self.placer is None:
            free = min(self.free_at)
            return self.free_at.index(free), (free - t if free > t else 0.0) + self.tp[r], self.tp[r], None
        c = self.placer.choose(r, self.L[r], t, [f - t if f > t else 0.0 for f in self.free_at])
        return c.instance, c.ttft_s, c.work_s, (c, r)

    def arrive(self, r: int, t: float) -> None:
        cfg = self.cfg
        self.count(0, t)
        k, ttft, work, choice = self.place(r, t)
        load = ttft / cfg.ttft_slo_s
        if load <= cfg.threshold and self.policy != "baseline":
            if self.policy == "early":
                load = max(load, self.decode_load_now())
            elif self.policy == "predict":
                load = max(load, self.predicted_decode_load(t, t + ttft))
            else:
                load = max(load, self.oracle_decode_load(t, t + ttft))
        if load > cfg.threshold:
            self.count(2, t)
            self.outcome[r] = REJECTED_EARLY
            return
        self.count(1, t)
        if choice:
            self.placer.commit(*choice, t)
        self.free_at[k] = t + ttft
        self.work[r] = work
        self.busy_s += work
        insort(self.pf_finish, t + ttft, self.pf_head)
        if self.policy == "oracle":
            end = t + ttft + self.out[r] * self.tbt_full
            self.pf_decode_end_of[r] = end
            insort(self.pf_decode_end, end)
        self.push(t + ttft, 0, r)

    def prefill_done(self, r: int, t: float) -> None:
        cfg = self.cfg
        self.pf_head += 1
        if self.policy == "oracle":
            end = self.pf_decode_end_of.pop(r)
            del self.pf_decode_end[bisect_left(self.pf_decode_end, end)]
        d = min(self.dec, key=_batch) if len(self.dec) > 1 else self.dec[0]
        if self.load(d.b + 1) > cfg.threshold:
            self.count(3, t)
            self.outcome[r] = REJECTED_AFTER_PREFILL
            self.wasted_s += self.work[r]
            return
        self.ttft_sum += t - self.t_in[r]
        d.advance(t, cfg)
        insort(d.done, (d.v + self.out[r], r))
        self.resize(d, d.b + 1)
        self.starts.append(t)
        self.start_of[r] = t
        self.reschedule(d)

    def decode_done(self, d: _Decode, version: int, t: float) -> None:
        """The event was scheduled for the head of ``d.done``: it finishes now, exactly (the clock
        snaps to its entry), with every member whose entry is not later; no tolerance involved."""
        if version != d.version:
            return
        d.advance(t, self.cfg)
        d.v = max(d.v, d.done[0][0])
        while d.done and d.done[0][0] <= d.v:
            _, r = d.done.pop(0)
            self.resize(d, d.b - 1)
            self.count(4, t)
            self.finish[r] = t
            insort(self.finished_starts, self.start_of.pop(r))
        self.reschedule(d)

    def reschedule(self, d: _Decode) -> None:
        d.version += 1
        if d.b:
            self.push(d.next_finish(self.cfg), 1, (d, d.version))

    def run(self) -> None:
        n, i, events = len(self.t_in), 0, self.events
        while i < n or events:
            ta = self.t_in[i] if i < n else _INF
            if events and events[0][0] <= ta:
                t, _, kind, payload = heapq.heappop(events)
                if self.next_sample <= t:
                    self.sample_until(t)
                if kind == 0:
                    self.prefill_done(payload, t)
                else:
                    self.decode_done(payload[0], payload[1], t)
            else:
                if self.next_sample <= ta:
                    self.sample_until(ta)
                self.arrive(i, ta)
                i += 1
        self.sample_until(self.horizon)


def simulate(arrivals: Arrivals, config: ClusterConfig = ClusterConfig(), policy: str = "baseline") -> OverloadResult:
    """Run one admission policy over the arrivals; in-flight requests drain after the last arrival."""
    config.validate()
    require(
        policy in POLICIES, f"unknown policy '{quote(policy)}'; choose one of {', '.join(POLICIES)}", field="policy"
    )
    require(
        config.placement != "kvcentric" or arrivals.blocks is not None,
        "KVCache-centric placement needs block ids (hash_ids) to find cached prefixes: replay a trace that "
        "has them, or place prefills by load balancing",
        field="placement",
    )
    budget.check(cost(len(arrivals.time_s), arrivals.span_s, config, blocks=arrivals.n_blocks))
    sim = _Sim(arrivals, config, policy)
    sim.run()
    c = np.asarray(sim.counts, dtype=np.int64)
    timeline = pd.DataFrame(
        {
            "start_s": np.arange(sim.n_windows) * sim.window_s,
            "arrived": c[0],
            "admitted": c[1],
            "rejected_early": c[2],
            "rejected_decode": c[3],
            "completed": c[4],
        }
    )
    loads = pd.DataFrame(
        {
            "time_s": np.arange(sim.n_samples) * sim.sample_s,
            "prefill_load": sim.pre_samples,
            "decode_load": sim.dec_samples,
        }
    )
    span = max(arrivals.span_s, 1e-9)
    completed = int(c[4].sum())
    totals = {
        "policy": policy,
        "arrived": int(c[0].sum()),
        "completed": completed,
        "rejected_early": int(c[2].sum()),
        "rejected_after_prefill": int(c[3].sum()),
        "rejected": int(c[2].sum() + c[3].sum()),
        "wasted_prefill_s": round(sim.wasted_s, 2),
        "prefill_busy_s": round(sim.busy_s, 2),
        "goodput_rps": round(completed / span, 4),
        "placement": config.placement,
        "mean_ttft_s": round(sim.ttft_sum / completed, 3) if completed else 0.0,
        "t_d_s": round(sim.t_d, 3),
        "sample_s": sim.sample_s,
        "window_s": sim.window_s,
        **oscillation(loads),
    }
    return OverloadResult(
        policy,
        totals,
        timeline,
        loads,
        np.asarray(sim.outcome, dtype=np.int8),
        np.asarray(sim.finish, dtype=np.float64),
    )


def compare(
    make_arrivals,
    config: ClusterConfig,
    policies: tuple[str, ...] = POLICIES,
    seeds: tuple[int, ...] = (0, 1, 2),
    progress=None,
) -> dict[str, list[OverloadResult]]:
    """Every policy over the same arrivals for each seed; ``make_arrivals(seed)`` builds them."""
    runs: dict[str, list[OverloadResult]] = {p: [] for p in policies}
    total, done = len(policies) * len(seeds), 0
    for seed in seeds:
        arrivals = make_arrivals(seed)
        for p in policies:
            runs[p].append(simulate(arrivals, config, p))
            done += 1
            if progress:
                progress(done / total)
    return runs
