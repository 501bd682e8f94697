"""Every policy swept over the bandwidth's persistence or over the SLO."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from kvviz.cachegen.streaming.bandwidth import Bandwidth, persistent_traces
from kvviz.cachegen.streaming.oracle import oracle_plan, oracle_run
from kvviz.cachegen.streaming.policies import policy_names, run_all, simulate
from kvviz.cachegen.streaming.results import summary
from kvviz.cachegen.streaming.setup import StreamSetup

PERSISTENCE_GRID = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99)


def persistence_sweep(
    setup: StreamSetup, traces: int, seed: int = 0, persistences: tuple[float, ...] = PERSISTENCE_GRID, progress=None
) -> pd.DataFrame:
    """Violation rate and mean quality per policy as the bandwidth's persistence grows from i.i.d.
    (0) towards constant, with the marginal Uniform(0.1, 10) Gb/s held fixed: the test of "the last
    chunk predicts the next"."""
    frames = []
    for j, phi in enumerate(persistences):
        frame = summary(run_all(setup, persistent_traces(traces, setup.n_chunks, phi, seed)))
        frame.insert(0, "persistence", float(phi))
        frames.append(frame)
        if progress:
            progress((j + 1) / len(persistences))
    return pd.concat(frames, ignore_index=True)


def slo_sweep(
    setup: StreamSetup,
    bw: Bandwidth,
    slos: np.ndarray,
    policies: tuple[str, ...] | None = None,
    progress=None,
    horizon: float | None = None,
) -> pd.DataFrame:
    """Violation rate and mean quality per policy at each SLO, over all K traces.

    The oracle's programme is solved once on a grid up to ``horizon`` (default: the largest SLO),
    so a sweep computed one SLO at a time with the same horizon gives the same numbers."""
    frames = []
    policies = policies or policy_names(setup)
    horizon = float(horizon if horizon is not None else max(slos))
    shared = oracle_plan(setup, bw, horizon) if bw.kind == "chunk" and "oracle" in policies else None
    for j, slo in enumerate(slos):
        s = replace(setup, slo_s=float(slo))
        runs = [oracle_run(s, bw, shared) if p == "oracle" and shared else simulate(s, bw, p) for p in policies]
        frame = summary(runs)
        frame.insert(0, "slo_s", float(slo))
        frames.append(frame)
        if progress:
            progress((j + 1) / len(slos))
    return pd.concat(frames, ignore_index=True)
