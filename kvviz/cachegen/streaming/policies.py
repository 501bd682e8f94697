"""The streaming policies by name (CLI names) and the work of running them:

- ``paper``: estimate the bandwidth from the previous chunk's measured throughput, and pick the
  least-loss configuration whose expected delay fits this chunk's share of the remaining SLO
  (its share of the remaining tokens); when nothing fits, the fastest one.
- ``artifact``: the released code (``run_adaptation.py``): a fixed budget SLO/n per chunk, the
  *current* chunk's bandwidth, levels tried best first, else text at the recompute cost.
- ``level1``..: one level throughout; ``quant8``: 8-bit quantisation; ``text``: text only.
- ``oracle``: knows the whole bandwidth trace; the best quality that meets the SLO (dynamic
  programming on a time grid), else the earliest finish. It is the bound.
"""

from __future__ import annotations

import numpy as np

from kvviz.cachegen.streaming.bandwidth import Bandwidth
from kvviz.cachegen.streaming.oracle import ORACLE_GRID, oracle_run
from kvviz.cachegen.streaming.setup import StreamSetup
from kvviz.cachegen.streaming.transfer import Run, adaptive_configs, check_bandwidth, stream
from kvviz.common import budget
from kvviz.common.errors import quote, require

# Calibrated on this 2-core machine (bench/bench_cachegen.py streams 1,000 i.i.d. traces under 8 policies;
# tests/pages/test_cost_estimates.py keeps each estimate within 3x of its run): the oracle's programme dominates.
ORACLE_CELLS_PER_S = 8.0e7  # (trace x chunk x grid point x option) cells per CPU s
CHUNK_STEPS_PER_S = 4.0e6  # (trace x chunk x policy) steps of the other rules per CPU second
CHUNK_OVERHEAD_S = 6.5e-5  # a rule's work per chunk whatever the traces
TIMED_ORACLE_CHUNK_S = 7.5e-4  # the oracle on a trace over time, per trace and chunk


def policy_names(setup: StreamSetup) -> tuple[str, ...]:
    return ("paper", "artifact", *(lv.name for lv in setup.levels), "quant8", "text", "oracle")


def simulate(setup: StreamSetup, bw: Bandwidth, policy: str) -> Run:
    """Stream the context under one policy over every trace in ``bw``."""
    setup.validate()
    check_bandwidth(setup, bw)
    names = policy_names(setup)
    require(policy in names, f"unknown policy '{quote(policy)}'; choose one of {', '.join(names)}", field="policy")
    if policy == "oracle":
        return oracle_run(setup, bw)
    bits, recompute = setup.bits(), setup.recompute_s()
    fixed = {name: i for i, name in enumerate(setup.config_names)}
    prior = bw.mean_gbps() if setup.initial_gbps is None else np.full(bw.traces, setup.initial_gbps)

    def choose(i: int, t: np.ndarray, seen: np.ndarray):
        if policy == "paper":
            estimate = prior if i == 0 else seen[:, i - 1]
            return _paper_choice(setup, i, t, estimate, bits[i], recompute[i]), estimate
        if policy == "artifact":
            now = bw.at(i, t)
            return _artifact_choice(setup, now, bits[i]), now
        return np.full(bw.traces, fixed[policy]), None

    return stream(setup, bw, policy, choose)


def _paper_choice(
    setup: StreamSetup, i: int, t: np.ndarray, est: np.ndarray, bits: np.ndarray, recompute: float
) -> np.ndarray:
    """Least loss whose expected delay fits this chunk's share of the remaining SLO."""
    tokens = setup.tokens
    share = tokens[i] / tokens[i:].sum()
    allowed_s = (setup.slo_s - t) * share  # [K]
    options = adaptive_configs(setup)
    delay = bits[options][None, :] / (np.maximum(est, 1e-9)[:, None] * 1e9)  # [K, C]
    delay[:, options == setup.text_index] += recompute
    fits = delay <= allowed_s[:, None]
    quality, kl = (np.broadcast_to(x[i, options], delay.shape) for x in (setup.quality, setup.kl))
    # Ranked in order, never summed: the fitting ones first, then quality, then least KL, then the faster.
    # A confident model's KL differences are far below any weight a sum could give the delay.
    best = np.lexsort((delay, kl, -quality, ~fits), axis=1)[:, 0]
    fastest = np.argmin(delay, axis=1)
    return options[np.where(fits.any(axis=1), best, fastest)]


def _artifact_choice(setup: StreamSetup, now_gbps: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """run_adaptation.py: the first level (best first) whose transfer fits SLO / n, else text."""
    allowed_s = setup.slo_s / setup.n_chunks
    choice = np.full(now_gbps.shape, setup.text_index)
    for level in range(len(setup.levels)):  # worst first, so the best fit wins
        fits = bits[level] / (now_gbps * 1e9) < allowed_s
        choice = np.where(fits, level, choice)
    return choice


def run_all(setup: StreamSetup, bw: Bandwidth, policies: tuple[str, ...] | None = None) -> list[Run]:
    return [simulate(setup, bw, p) for p in (policies or policy_names(setup))]


def stream_cost(
    setup: StreamSetup,
    traces: int,
    policies: int,
    repeats: int = 1,
    *,
    timed: bool = False,
    shared_oracle: bool = False,
) -> budget.Cost:
    """The work of streaming ``traces`` traces under ``policies`` policies (one of them the oracle),
    ``repeats`` times (points of a sweep), estimated from the inputs before anything runs. ``timed``
    traces (bandwidth over time) cost the oracle a search per chunk instead of its programme;
    ``shared_oracle``: the sweep solves the oracle's programme once for all its points (an SLO sweep)."""
    chunks = setup.n_chunks
    rules = repeats * (policies - 1) * chunks * (CHUNK_OVERHEAD_S + traces / CHUNK_STEPS_PER_S)
    if timed:
        oracle = traces * chunks * TIMED_ORACLE_CHUNK_S
    else:
        oracle = traces * chunks * (ORACLE_GRID + 1) * (len(setup.levels) + 1) / ORACLE_CELLS_PER_S
    plans = 1 if shared_oracle and not timed else repeats
    return budget.Cost(
        "streaming every policy",
        repeats * traces * chunks * policies,
        "trace-chunk-policy steps",
        rules + plans * (oracle + chunks * CHUNK_OVERHEAD_S),
        "the random traces (K) or the chunk count" if not timed else "the chunk count",
    )
