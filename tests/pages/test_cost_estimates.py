"""Every cost estimate a page shows before long work agrees with the work it stands for, within 3×.

A page asks for a click when its estimate passes ``kvviz.common.budget.CONFIRM_S`` and refuses
work over ``LIMIT_S``: an estimate far from the run warns about work that takes a moment, or runs
without warning what takes long. Each test runs, on small inputs, the work a view caches (the
same calls its cached functions make) and compares the CPU seconds it took (``process_time``,
which a loaded machine does not inflate as it does wall time) with the view's estimate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from kvviz.cachegen import compare
from kvviz.cachegen import streaming as S
from kvviz.cachegen.kv import SyntheticKV, profile_context, synthetic_kv
from kvviz.cachegen.stream_report import slo_grid
from kvviz.eviction.curves import TABLE1_CAPACITIES
from kvviz.eviction.grid import BOUND, INFINITE, log_capacities
from kvviz.eviction.replay import replay_of, sweep
from kvviz.traces.workload import WorkloadConfig, generate
from tests.cachegen.cachegen_setup import real_setup
from ui.eviction.cached import TABLE1_POLICIES, sweep_cost

FACTOR = 3.0


def cpu_seconds(work: Callable[[], object], runs: int = 2) -> float:
    """The least CPU time of ``runs`` runs of ``work``: the process's clock also counts what another
    thread did meanwhile (the upload sweeper of an earlier page test collecting garbage), and a first run may
    load code once; the least run is the work's own."""
    return min(_timed(work) for _ in range(runs))


def _timed(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def assert_within(estimate: float, measured: float, what: str) -> None:
    assert measured / FACTOR <= estimate <= measured * FACTOR, (
        f"{what}: estimated {estimate:.3f} s, took {measured:.3f}"
    )


def test_the_eviction_estimate_is_the_replays_the_page_runs():
    trace = generate(WorkloadConfig(requests=3_000, seed=1))
    replay = replay_of(trace)
    policies = ["lru", "lfu", "length_aware", "s3fifo", BOUND]
    capacities = log_capacities(100, min(100_000, replay.n_ids), 20) + (INFINITE,)
    sweep(replay, policies, [100])  # the kernels are compiled (or loaded) before the clock starts

    def page() -> None:
        for policy in policies:
            sweep(replay, [policy], capacities)
        for policy in TABLE1_POLICIES:
            sweep(replay, [policy], TABLE1_CAPACITIES)

    estimate = sweep_cost(replay.accesses, policies, len(capacities), None).seconds
    assert_within(estimate, cpu_seconds(page), "eviction sweep")


@pytest.fixture(scope="module")
def setup() -> S.StreamSetup:
    return replace(real_setup(), context_tokens=10_000, chunk_tokens=1_000)  # 10 chunks: a second of work


@pytest.mark.parametrize("source", ["step", "i.i.d."])
def test_the_cachegen_sweep_estimate_is_its_run_for_a_step_and_for_random_traces(setup, source):
    """The step trace is one trace over time (K does not apply); K random traces cost the oracle's programme."""
    bw = S.step_trace() if source == "step" else S.iid_traces(50, setup.n_chunks)
    slos = np.array(slo_grid(setup.slo_s))
    policies = len(S.policy_names(setup))
    timed = bw.kind == "timed"
    sweep_cost = S.stream_cost(setup, bw.traces, policies, len(slos), timed=timed, shared_oracle=True)
    assert_within(sweep_cost.seconds, cpu_seconds(lambda: S.slo_sweep(setup, bw, slos)), f"{source} SLO sweep")
    summary_cost = S.stream_cost(setup, bw.traces, policies, timed=timed)
    assert_within(summary_cost.seconds, cpu_seconds(lambda: S.run_all(setup, bw)), f"{source} summary")


def test_the_cachegen_persistence_estimate_is_its_run(setup):
    grid = S.PERSISTENCE_GRID
    cost = S.stream_cost(setup, 50, len(S.policy_names(setup)), len(grid))
    assert_within(cost.seconds, cpu_seconds(lambda: S.persistence_sweep(setup, 50)), "persistence sweep")


def test_the_codec_estimate_is_its_run():
    spec = SyntheticKV(layers=4, tokens=256, channels=32)
    kv, profile = synthetic_kv(spec), synthetic_kv(profile_context(spec))
    measured = cpu_seconds(lambda: compare.study(kv, profile, 2, 10, 4.0, None, None))
    assert_within(compare.study_cost(spec.values).seconds, measured, "codec study")
