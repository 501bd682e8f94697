"""The oracle: knows the whole bandwidth trace and picks the best quality that meets the SLO (dynamic
programming on a time grid), else the earliest finish. It is the bound the rules are measured against."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.cachegen.streaming.bandwidth import Bandwidth
from kvviz.cachegen.streaming.setup import StreamSetup
from kvviz.cachegen.streaming.transfer import Run, adaptive_configs, stream

ORACLE_GRID = 400


@dataclass(frozen=True)
class OraclePlan:
    """The oracle's dynamic programme: ``plan[i, k, g]`` is the option to send chunk i in at grid
    point g; ``value[k, g]`` the best total utility (``StreamSetup.utility``) from the start. For
    per-chunk traces the grid is *remaining* time (so one programme serves every SLO up to
    ``horizon``); for timed traces it is elapsed time on [0, SLO]."""

    plan: np.ndarray
    value: np.ndarray
    dt: float
    remaining: bool

    def index(self, t: np.ndarray, slo: float) -> np.ndarray:
        g = (slo - t) / self.dt if self.remaining else t / self.dt
        g = np.floor(g + 1e-9) if self.remaining else np.ceil(g - 1e-9)
        return np.clip(g, 0, self.plan.shape[2] - 1).astype(np.int64)


def _durations(
    setup: StreamSetup,
    bw: Bandwidth,
    i: int,
    start: np.ndarray,
    options: np.ndarray,
    bits: np.ndarray,
    recompute: np.ndarray,
) -> list:
    """How long each option takes for chunk ``i`` begun at ``start`` (``bits``, ``recompute``: the setup's)."""
    return [bw.finish(i, start, bits[i, c]) - start + (recompute[i] if c == setup.text_index else 0.0) for c in options]


def oracle_plan(setup: StreamSetup, bw: Bandwidth, horizon: float | None = None) -> OraclePlan:
    """Solve the oracle's programme. Durations are rounded *up* to the grid and start times
    conservatively, so every plan it returns is truly feasible; it is optimal to within the grid."""
    k, n, options = bw.traces, setup.n_chunks, adaptive_configs(setup)
    costs = setup.bits(), setup.recompute_s()
    remaining = bw.kind == "chunk"
    dt = (horizon or setup.slo_s) / ORACLE_GRID
    grid = np.arange(ORACLE_GRID + 1) * dt
    weight = setup.tokens / setup.context_tokens
    value = np.zeros((k, ORACLE_GRID + 2))  # column 0 = "out of time" (-inf), then the grid
    value[:, 0] = -np.inf
    plan = np.zeros((n, k, ORACLE_GRID + 1), np.int8)
    g = np.arange(ORACLE_GRID + 1)
    for i in range(n - 1, -1, -1):
        cands = np.empty((len(options), k, ORACLE_GRID + 1))
        if remaining:
            for j, d in enumerate(_durations(setup, bw, i, np.zeros(k), options, *costs)):
                steps = np.ceil(d / dt - 1e-9).astype(np.int64)
                idx = np.maximum(g[None, :] - steps[:, None] + 1, 0)
                cands[j] = setup.utility[i, options[j]] * weight[i] + np.take_along_axis(value, idx, axis=1)
        else:
            start = np.broadcast_to(grid, (k, grid.size))
            for j, d in enumerate(_durations(setup, bw, i, start, options, *costs)):
                idx = np.ceil((start + d) / dt - 1e-9).astype(np.int64) + 1
                idx = np.where(idx > ORACLE_GRID + 1, 0, idx)
                cands[j] = setup.utility[i, options[j]] * weight[i] + np.take_along_axis(value, idx, axis=1)
        plan[i] = cands.argmax(axis=0)
        value = np.concatenate([np.full((k, 1), -np.inf), cands.max(axis=0)], axis=1)
    return OraclePlan(plan, value[:, 1:], dt, remaining)


def oracle_run(setup: StreamSetup, bw: Bandwidth, solved: OraclePlan | None = None) -> Run:
    """Follow the plan; where no plan meets the SLO, send each chunk the fastest way (earliest
    finish is optimal then, since a later start never finishes earlier)."""
    solved = solved or oracle_plan(setup, bw)
    k, options = bw.traces, adaptive_configs(setup)
    costs = setup.bits(), setup.recompute_s()
    rows = np.arange(k)
    feasible = np.isfinite(solved.value[rows, solved.index(np.zeros(k), setup.slo_s)])

    def choose(i: int, t: np.ndarray, seen: np.ndarray):
        planned = options[solved.plan[i, rows, solved.index(t, setup.slo_s)]]
        fastest = options[np.argmin(np.stack(_durations(setup, bw, i, t, options, *costs), axis=1), axis=1)]
        return np.where(feasible, planned, fastest), None

    return stream(setup, bw, "oracle", choose)
