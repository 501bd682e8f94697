"""Overload-oriented admission in a disaggregated cluster (Mooncake arXiv v3 §7, Table 3, Figs. 9-10).

A discrete-event simulation of a prefill pool and a decode pool under overload:

* **prefill**: P instances, FIFO, prefill time from ``PrefillModel``; a new request goes to the
  instance whose queue clears first, and its TTFT is that queue plus its own prefill. Prefill
  load (paper: predicted TTFT / l_ttft) is that TTFT over the TTFT SLO.
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

The paper gives no threshold or t_d; the threshold defaults to 1 (load = SLO) and t_d to the
mean output length times the TBT of a full batch. Outputs: totals, a windowed timeline, load samples and
the oscillation strength of the prefill load (std, dominant period and its amplitude, and the
correlation of prefill with decode load: negative means anti-phase).

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
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from kvviz.common import budget
from kvviz.common import paper
from kvviz.mooncake.conductor import PrefillModel
from kvviz.common.errors import quote, require
from kvviz.traces import Trace

COMPLETED, REJECTED_EARLY, REJECTED_AFTER_PREFILL = 0, 1, 2
POLICIES: tuple[str, ...] = ("baseline", "early", "predict", "oracle")
POLICY_LABELS = {"baseline": "Baseline", "early": "Early rejection",
                 "predict": "Early rejection + prediction", "oracle": "Oracle (true output lengths)"}
MAX_ARRIVALS = 500_000
MAX_SAMPLES = 100_000        # load samples per run: a longer span is sampled more coarsely
MAX_WINDOWS = 10_000         # timeline windows per run
# Measured on this 2-core machine (bench/bench_cluster.py), rounded down: one policy over one run
# handles 80,000-120,000 arrivals and about 3 million load samples per CPU second.
ARRIVALS_PER_S = 50_000.0
SAMPLES_PER_S = 500_000.0
INSTANCES_PER_DOUBLING = 150.0
_INF = math.inf


@dataclass(frozen=True)
class ClusterConfig:
    """Pool sizes, SLOs, the decode cost model and the admission knobs."""

    prefill_instances: int = 6
    decode_instances: int = 2
    batch_limit: int = 16                 # requests per decode batch (KV memory)
    ttft_slo_s: float = 20.0
    tbt_slo_s: float = 0.1
    tbt_base_s: float = 0.02              # TBT(b) = base + per_request * b
    tbt_per_request_s: float = 0.005
    threshold: float = 1.0                # admit while load <= threshold
    t_d_s: float | None = None            # uniform decode time of the predictor; None: auto
    sample_s: float = 1.0                 # load sampling step of the timeline
    window_s: float = 10.0                # counting window of the timeline
    prefill: PrefillModel = field(default_factory=PrefillModel)

    def validate(self) -> None:
        for name, label in (("prefill_instances", "prefill instances"), ("decode_instances", "decode instances"),
                            ("batch_limit", "decode batch limit")):
            require(1 <= getattr(self, name) <= 10_000, f"{label} must be in 1..10,000", field=name)
        for name, label in (("ttft_slo_s", "the TTFT SLO"), ("tbt_slo_s", "the TBT SLO"),
                            ("threshold", "the rejection threshold"), ("sample_s", "the sampling step"),
                            ("window_s", "the timeline window")):
            require(getattr(self, name) > 0, f"{label} must be positive", field=name)
        require(self.tbt_base_s >= 0 and self.tbt_per_request_s >= 0 and self.tbt_base_s + self.tbt_per_request_s > 0,
                "TBT(b) = base + per_request * b needs non-negative terms, not both zero", field="tbt_base_s")
        require(self.t_d_s is None or self.t_d_s > 0, "t_d must be positive", field="t_d_s")
        require(self.decode_load(1) <= self.threshold,
                f"a decode instance cannot run even one request within the TBT SLO: TBT(1) = "
                f"{self.tbt(1) * 1000:.0f} ms against an SLO of {self.tbt_slo_s * 1000:.0f} ms (x threshold "
                f"{self.threshold:g}); raise the TBT SLO or the threshold", field="tbt_slo_s")
        self.prefill.validate()

    def tbt(self, b: float) -> float:
        return self.tbt_base_s + self.tbt_per_request_s * b

    def decode_load(self, b: float) -> float:
        """Load of a decode instance running a batch of ``b``."""
        return max(self.tbt(b) / self.tbt_slo_s, b / self.batch_limit)

    def max_batch(self) -> int:
        """Largest batch whose load is within the threshold (at least 1)."""
        b = self.batch_limit
        while b > 1 and self.decode_load(b) > self.threshold:
            b -= 1
        return b


@dataclass(frozen=True)
class Arrivals:
    """The offered requests: arrival times (s), prompt and output lengths (tokens)."""

    time_s: np.ndarray
    input_length: np.ndarray
    output_length: np.ndarray
    source: str = "poisson"

    def __post_init__(self):
        require(len(self.time_s) == len(self.input_length) == len(self.output_length),
                "arrival columns differ in length", field="arrivals")
        require(len(self.time_s) <= MAX_ARRIVALS, f"at most {MAX_ARRIVALS:,} arrivals per run; shorten the "
                "duration or lower the load", field="arrivals")

    @property
    def span_s(self) -> float:
        return float(self.time_s[-1]) if len(self.time_s) else 0.0


def steps(span_s: float, config: ClusterConfig) -> tuple[float, float]:
    """(sample step, window) for a run spanning ``span_s``: the configured ones, or whole multiples
    of them large enough that at most MAX_SAMPLES samples and MAX_WINDOWS windows cover the span."""
    def step(base: float, most: int) -> float:
        return base * max(1, math.ceil(span_s / (base * most)))
    return step(config.sample_s, MAX_SAMPLES), step(config.window_s, MAX_WINDOWS)


def cost(n_arrivals: float, span_s: float, config: ClusterConfig, runs: int = 1) -> budget.Cost:
    """Estimated CPU time of ``runs`` simulations of ``n_arrivals`` arrivals over ``span_s`` seconds.

    An arrival costs more with more instances (each event scans the pools): measured, 6P+2D runs
    4.3× faster per arrival than 256P+256D, hence the factor 1 + instances / INSTANCES_PER_DOUBLING.
    """
    samples = span_s / steps(span_s, config)[0] + 1
    per_arrival = (1 + (config.prefill_instances + config.decode_instances) / INSTANCES_PER_DOUBLING) / ARRIVALS_PER_S
    seconds = runs * (n_arrivals * per_arrival + samples / SAMPLES_PER_S)
    return budget.Cost("cluster overload simulation", runs * n_arrivals, "arrivals", seconds,
                       "the duration, the overload factor, the number of seeds or of instances")


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, size: int) -> np.ndarray:
    return np.maximum(1, np.rint(rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, size))).astype(np.int64)


@dataclass(frozen=True)
class Capacity:
    """Sustainable request rates of each pool for a given mix of lengths (requests/s)."""

    prefill_rps: float
    decode_rps: float

    @property
    def rps(self) -> float:
        return min(self.prefill_rps, self.decode_rps)

    @property
    def bottleneck(self) -> str:
        return "prefill" if self.prefill_rps <= self.decode_rps else "decode"


def capacity(config: ClusterConfig, input_length: np.ndarray, output_length: np.ndarray) -> Capacity:
    """Each pool's capacity for requests with these lengths (prefill all busy, decode batches full)."""
    mean_prefill = float(np.mean(config.prefill.time(input_length)))
    b = config.max_batch()
    mean_decode = float(np.mean(output_length)) * config.tbt(b)
    return Capacity(config.prefill_instances / mean_prefill, config.decode_instances * b / mean_decode)


def poisson_rate(config: ClusterConfig, load: float, mean_input: int = 20_000, mean_output: int = 200) -> float:
    """Arrivals per second at ``load`` times the cluster's capacity (the same for every seed)."""
    require(load > 0, "the overload factor must be positive", field="load")
    require(1 <= mean_input <= 1_000_000 and 1 <= mean_output <= 100_000,
            "mean lengths must be 1..1,000,000 input and 1..100,000 output tokens", field="mean_input")
    config.validate()
    # Capacity from a large fixed-seed sample, so every seed is offered the same rate.
    ref = np.random.default_rng(12345)
    cap = capacity(config, _lognormal(ref, mean_input, 0.6, 20_000), _lognormal(ref, mean_output, 0.6, 20_000))
    return load * cap.rps


def poisson_arrivals(config: ClusterConfig, load: float, duration_s: float, seed: int,
                     mean_input: int = 20_000, mean_output: int = 200) -> Arrivals:
    """Poisson arrivals at ``load`` times the cluster's capacity; log-normal lengths (sigma 0.6)."""
    require(0 < duration_s <= 7 * 24 * 3600, "the duration must be in (0, 1 week]", field="duration_s")
    rate = poisson_rate(config, load, mean_input, mean_output)
    expected = rate * duration_s
    require(expected <= MAX_ARRIVALS, f"{expected:,.0f} arrivals expected; at most {MAX_ARRIVALS:,} per run: "
            "shorten the duration or lower the load", field="duration_s")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, int(expected + 6 * math.sqrt(expected) + 20))
    times = np.cumsum(gaps)
    times = times[times < duration_s]
    n = len(times)
    return Arrivals(times, _lognormal(rng, mean_input, 0.6, n), _lognormal(rng, mean_output, 0.6, n), "poisson")


def trace_arrivals(trace: Trace, speedup: float = 2.0) -> Arrivals:
    """A trace's arrivals replayed ``speedup`` times faster (the paper replays at 2x)."""
    require(speedup > 0, "the speed-up must be positive", field="speedup")
    require(trace.n_requests > 0, "the trace has no requests", field="timestamp")
    ts = trace.requests["timestamp"].to_numpy(np.float64)
    require(bool(np.all(np.isfinite(ts))), "the trace needs a timestamp for every request", field="timestamp")
    times = (ts - ts[0]) / 1000.0 / speedup
    return Arrivals(times, trace.requests["input_length"].to_numpy(np.int64),
                    np.maximum(1, trace.requests["output_length"].to_numpy(np.int64)), f"trace x{speedup:g}")


@dataclass(frozen=True)
class OverloadResult:
    """One run: totals, the windowed timeline and the sampled loads."""

    policy: str
    totals: dict
    timeline: pd.DataFrame     # per window: start_s, arrived, admitted, rejected_early, rejected_decode, completed
    loads: pd.DataFrame        # per sample: time_s, prefill_load, decode_load
    outcome: np.ndarray        # per request: COMPLETED, REJECTED_EARLY or REJECTED_AFTER_PREFILL
    finish_s: np.ndarray       # per request: when its last token was produced (NaN if rejected)


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


class _Sim:
    """The event loop state for one run."""

    def __init__(self, arrivals: Arrivals, cfg: ClusterConfig, policy: str):
        self.cfg, self.policy = cfg, policy
        self.t_in = arrivals.time_s.tolist()
        self.L = arrivals.input_length.tolist()
        self.out = arrivals.output_length.tolist()
        self.tp = np.asarray(cfg.prefill.time(arrivals.input_length), dtype=np.float64).reshape(-1).tolist()
        self.t_d = cfg.t_d_s or auto_t_d(arrivals, cfg)
        self.free_at = [0.0] * cfg.prefill_instances
        self.dec = [_Decode() for _ in range(cfg.decode_instances)]
        self.events: list = []                       # (time, seq, kind, payload)
        self.seq = 0
        self.pf_finish: list[float] = []             # predicted prefill ends of admitted requests, sorted
        self.pf_head = 0
        self.pf_decode_end: list[float] = []         # oracle: predicted decode ends of requests in prefill, sorted
        self.pf_decode_end_of: dict[int, float] = {}
        self.tbt_full = cfg.tbt(cfg.max_batch())
        self.starts: list[float] = []                # decode start times, in time order
        self.finished_starts: list[float] = []       # decode start times of finished requests, sorted
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
        self.next_k = 0                              # index of the next load sample to take
        self.next_sample = 0.0                       # its time
        self.dec_sum = cfg.decode_instances * self.load_table[0]   # sum of the decode instances' loads
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
        above = np.concatenate(([0.0], np.cumsum(free[::-1])))     # sum of the j largest queue ends
        n_above = len(free) - np.searchsorted(free, s, side="right")
        self.pre_samples[self.next_k:end] = (above[n_above] - s * n_above) / (len(free) * self.cfg.ttft_slo_s)
        self.dec_samples[self.next_k:end] = self.dec_sum / len(self.dec)
        self.next_k = end
        self.next_sample = end * self.sample_s

    # --- decode load as each policy sees it on arrival ----------------------------------------
    def decode_load_now(self) -> float:
        return self.load(min(d.b for d in self.dec) + 1)

    def predicted_decode_load(self, t: float, t_f: float) -> float:
        """System-level prediction: uniform decode time t_d (paper §7.3)."""
        x = t_f - self.t_d
        in_decode = (len(self.starts) - bisect_right(self.starts, x)) - (
            len(self.finished_starts) - bisect_right(self.finished_starts, x))
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
    def arrive(self, r: int, t: float) -> None:
        cfg = self.cfg
        self.count(0, t)
        free = min(self.free_at)
        k = self.free_at.index(free)
        ttft = (free - t if free > t else 0.0) + self.tp[r]
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
        self.free_at[k] = t + ttft
        self.busy_s += self.tp[r]
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
            self.wasted_s += self.tp[r]
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
    require(policy in POLICIES, f"unknown policy '{quote(policy)}'; choose one of {', '.join(POLICIES)}",
            field="policy")
    budget.check(cost(len(arrivals.time_s), arrivals.span_s, config))
    sim = _Sim(arrivals, config, policy)
    sim.run()
    c = np.asarray(sim.counts, dtype=np.int64)
    timeline = pd.DataFrame({"start_s": np.arange(sim.n_windows) * sim.window_s, "arrived": c[0],
                             "admitted": c[1], "rejected_early": c[2], "rejected_decode": c[3], "completed": c[4]})
    loads = pd.DataFrame({"time_s": np.arange(sim.n_samples) * sim.sample_s, "prefill_load": sim.pre_samples,
                          "decode_load": sim.dec_samples})
    span = max(arrivals.span_s, 1e-9)
    completed = int(c[4].sum())
    totals = {
        "policy": policy, "arrived": int(c[0].sum()), "completed": completed,
        "rejected_early": int(c[2].sum()), "rejected_after_prefill": int(c[3].sum()),
        "rejected": int(c[2].sum() + c[3].sum()), "wasted_prefill_s": round(sim.wasted_s, 2),
        "prefill_busy_s": round(sim.busy_s, 2),
        "goodput_rps": round(completed / span, 4),
        "mean_ttft_s": round(sim.ttft_sum / completed, 3) if completed else 0.0,
        "t_d_s": round(sim.t_d, 3), "sample_s": sim.sample_s, "window_s": sim.window_s,
        **oscillation(loads),
    }
    return OverloadResult(policy, totals, timeline, loads, np.asarray(sim.outcome, dtype=np.int8),
                          np.asarray(sim.finish, dtype=np.float64))


def lagged_correlation(x: np.ndarray, y: np.ndarray, max_lag: int) -> tuple[float, int]:
    """The most negative correlation of x(t + k) with y(t) over lags |k| <= max_lag samples, and its k."""
    best, best_k = 0.0, 0
    for k in range(-max_lag, max_lag + 1):
        a, b = (x[k:], y[:len(y) - k]) if k >= 0 else (x[:len(x) + k], y[-k:])
        if len(a) > 2 and a.std() > 0 and b.std() > 0:
            c = float(np.corrcoef(a, b)[0, 1])
            if c < best:
                best, best_k = c, k
    return best, best_k


def oscillation(loads: pd.DataFrame, warmup_share: float = 0.1, max_lag_s: float = 30.0) -> dict:
    """How strongly the prefill load swings: its std, dominant period and amplitude, and the
    anti-phase with decode load: the most negative correlation of prefill load (lagged by up to
    ``max_lag_s`` either way) with decode load, and that lag (positive: prefill trails decode).
    The first ``warmup_share`` of the samples is skipped."""
    pre = loads["prefill_load"].to_numpy()
    dec = loads["decode_load"].to_numpy()
    skip = int(len(pre) * warmup_share)
    pre, dec = pre[skip:], dec[skip:]
    if len(pre) < 8:
        return {"prefill_load_std": 0.0, "decode_load_std": 0.0, "period_s": 0.0, "amplitude": 0.0,
                "anti_phase_corr": 0.0, "anti_phase_lag_s": 0.0}
    step = float(loads["time_s"].iloc[1] - loads["time_s"].iloc[0])
    spectrum = np.abs(np.fft.rfft(pre - pre.mean())) * 2 / len(pre)
    k = int(np.argmax(spectrum[1:])) + 1
    corr, lag = lagged_correlation(pre, dec, min(int(max_lag_s / step), len(pre) // 4))
    return {"prefill_load_std": round(float(pre.std()), 4), "decode_load_std": round(float(dec.std()), 4),
            "period_s": round(len(pre) * step / k, 1), "amplitude": round(float(spectrum[k]), 4),
            "anti_phase_corr": round(corr, 3), "anti_phase_lag_s": round(lag * step, 1)}


SUMMARY_COLUMNS = ("completed", "rejected", "rejected_early", "rejected_after_prefill", "wasted_prefill_s",
                   "goodput_rps", "prefill_load_std", "period_s", "anti_phase_corr")


def compare(make_arrivals, config: ClusterConfig, policies: tuple[str, ...] = POLICIES,
            seeds: tuple[int, ...] = (0, 1, 2), progress=None) -> dict[str, list[OverloadResult]]:
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


def summary_table(runs: dict[str, list[OverloadResult]]) -> pd.DataFrame:
    """Mean and standard deviation over seeds of each total, one row per policy."""
    rows = []
    for policy, results in runs.items():
        frame = pd.DataFrame([r.totals for r in results])
        row = {"policy": policy, "seeds": len(results), "arrived": float(frame["arrived"].mean())}
        for col in SUMMARY_COLUMNS:
            row[col] = float(frame[col].mean())
            row[f"{col}_sd"] = float(frame[col].std(ddof=0))
        rows.append(row)
    return pd.DataFrame(rows)


def with_defaults(config: ClusterConfig, **changes) -> ClusterConfig:
    """A copy of ``config`` with some fields changed (validated)."""
    new = replace(config, **changes)
    new.validate()
    return new


# Mooncake v3 Table 3 (8P+8D, 23,000 real requests replayed at 2x): rejected requests.
PAPER_TABLE3_REJECTED = {"baseline": 4183, "early": 3771, "predict": 3589}


PAPER_TABLE3_ARRIVALS = 23_000


def compare_with_paper(table: pd.DataFrame) -> pd.DataFrame:
    """Table 3 and the lecture notes' findings beside this simulation's means over seeds, each row
    with a status computed from the numbers (:mod:`kvviz.common.paper`)."""
    t = table.set_index("policy")
    rows = []

    def change(policy: str, col: str) -> float:
        base = t.loc["baseline", col]
        return float((t.loc[policy, col] - base) / base) if base else math.nan

    for policy, reported in PAPER_TABLE3_REJECTED.items():
        if policy in t.index:
            share = t.loc[policy, "rejected"] / max(t.loc[policy, "arrived"], 1)
            rows.append(paper.close(f"Rejected requests: {POLICY_LABELS[policy]}",
                                  f"{reported:,} of ~{PAPER_TABLE3_ARRIVALS:,} ({reported / PAPER_TABLE3_ARRIVALS:.0%})",
                                  f"{t.loc[policy, 'rejected']:,.0f} of {t.loc[policy, 'arrived']:,.0f} ({share:.0%})",
                                  (reported / PAPER_TABLE3_ARRIVALS, share), 0.25))
    if "baseline" not in t.index:
        return pd.DataFrame(rows)
    base_paper = PAPER_TABLE3_REJECTED["baseline"]
    for policy in ("early", "predict"):
        if policy in t.index:
            reported = (PAPER_TABLE3_REJECTED[policy] - base_paper) / base_paper
            rows.append(paper.close(f"Rejected vs baseline: {POLICY_LABELS[policy]}", f"{reported:+.1%}",
                                  f"{change(policy, 'rejected'):+.1%}", (reported, change(policy, "rejected")), 0.5))
    if "early" in t.index:
        waste = change("early", "wasted_prefill_s")
        rows.append(paper.close("Wasted prefill, early rejection vs baseline (lecture notes)", "about −1/3",
                              f"{waste:+.1%}", (-1 / 3, waste), 0.25))
        ratio = t.loc["early", "prefill_load_std"] / max(t.loc["baseline", "prefill_load_std"], 1e-12)
        rows.append(paper.close("Prefill-load swing (std), early rejection vs baseline (lecture notes)", "about ×2",
                              f"×{ratio:.1f}", (2.0, ratio), 0.5))
        early, base = t.loc["early", "anti_phase_corr"], t.loc["baseline", "anti_phase_corr"]
        rows.append(paper.check("Prefill vs decode load under early rejection (Fig. 9)", "strong anti-phase swing",
                              f"correlation {early:+.2f} (baseline {base:+.2f})", early <= base - 0.05,
                              "early rejection's correlation at least 0.05 below baseline's"))
    done = {p: change(p, "completed") for p in ("early", "predict", "oracle") if p in t.index}
    if done:
        rows.append(paper.check("Completed, early-rejection variants vs baseline (lecture notes)", "−3% to −7%",
                              " / ".join(f"{v:+.1%}" for v in done.values()),
                              all(-0.07 <= v <= -0.03 for v in done.values()), "every variant within −7%…−3%"))
    return pd.DataFrame(rows)


def prediction_effect(table: pd.DataFrame) -> str:
    """What prediction does to the swing and to the anti-phase coupling, in words, from ``table``."""
    t = table.set_index("policy")
    swing = {p: t.loc[p, "prefill_load_std"] for p in ("early", "predict")}
    corr = {p: t.loc[p, "anti_phase_corr"] for p in ("early", "predict")}
    return (f"it {'damps' if swing['predict'] < swing['early'] else 'does not damp'} the prefill-load swing "
            f"(std {swing['early']:.2f} → {swing['predict']:.2f}) and "
            f"{'strengthens' if corr['predict'] < corr['early'] else 'weakens'} the anti-phase correlation "
            f"({corr['early']:+.2f} → {corr['predict']:+.2f})")


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The summary table with readable column names and rounded numbers, for a page or report."""
    columns = {"policy": "Policy", "completed": "Completed", "rejected_early": "Rejected on arrival",
               "rejected_after_prefill": "Rejected after prefill", "wasted_prefill_s": "Wasted prefill (s)",
               "goodput_rps": "Goodput (req/s)", "prefill_load_std": "Prefill-load std",
               "period_s": "Swing period (s)", "anti_phase_corr": "Anti-phase correlation"}
    out = table[list(columns)].rename(columns=columns)
    out["Policy"] = table["policy"].map(POLICY_LABELS)
    return out.round({"Completed": 0, "Rejected on arrival": 0, "Rejected after prefill": 0, "Wasted prefill (s)": 0,
                      "Goodput (req/s)": 3, "Prefill-load std": 3, "Swing period (s)": 0,
                      "Anti-phase correlation": 2})
