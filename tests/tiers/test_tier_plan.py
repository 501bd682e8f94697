"""What to buy: reaches exact to the block, the Pareto front, and the grid (and the routers' runs) on a process
pool and on Ray."""

from __future__ import annotations

import pandas as pd
import pytest

from kvviz.common.errors import InputError
from kvviz.prefix_cache.replay import prepare, request_hits
from kvviz.tiers import TierConfig, plan
from kvviz.tiers.plan import pareto_front, smallest_reaching
from kvviz.tiers.pool import run_points
from kvviz.traces.workload import WorkloadConfig, generate


@pytest.fixture(scope="module")
def prepared():
    return prepare(generate(WorkloadConfig(requests=200, seed=11, documents=12)))


@pytest.fixture(scope="module")
def config():
    return TierConfig("llama-3-8b", "h100", hbm_gib=0.5, dram_gib=1.0)


def test_gpu_reaches_are_exact_to_the_block(prepared, config):
    """The GPU capacity found for each share reaches it, and one block less does not."""
    found = plan(prepared, config, 10.0, dram_sizes=[0.0], storage_sizes=[0.0], workers=1)
    ceiling = prepared.seen_before.sum()
    gpu = [r for r in found.reaches if r.tier == "gpu"]
    assert [r.share for r in gpu] == [0.8, 0.9, 0.95]
    for r in gpu:
        assert request_hits(prepared, config.policy, r.blocks).sum() >= r.share * ceiling
        assert request_hits(prepared, config.policy, r.blocks - 1).sum() < r.share * ceiling
    assert gpu[0].blocks <= gpu[1].blocks <= gpu[2].blocks
    assert gpu[0].gib == pytest.approx(gpu[0].blocks * 512 * 131072 / 2**30)


def test_bisection_finds_the_first_crossing():
    values = [0, 1, 1, 3, 7, 7, 9]
    assert smallest_reaching(lambda c: values[c], 7, 0, 6) == 4
    assert smallest_reaching(lambda c: values[c], 0, 0, 6) == 0
    assert smallest_reaching(lambda c: values[c], 10, 0, 6) is None


def test_pareto_front_keeps_what_no_cheaper_size_beats():
    grid = pd.DataFrame(
        {"cost_per_hour": [1.0, 2.0, 2.0, 3.0, 4.0], "ttft_p90_s": [5.0, 4.0, 6.0, 4.0, 1.0], "dram_gib": range(5)}
    )
    front = pareto_front(grid)
    assert front[["cost_per_hour", "ttft_p90_s"]].values.tolist() == [[1.0, 5.0], [2.0, 4.0], [4.0, 1.0]]


def test_cheapest_mix_meets_the_target(prepared, config):
    found = plan(prepared, config, 10.0, dram_sizes=[0.0, 0.25, 2.0], storage_sizes=[0.0], workers=1)
    assert len(found.grid) == 3
    best = found.best
    assert best["cost_per_hour"] == found.grid["cost_per_hour"].min()  # a generous target: the cheapest meets it
    strict = plan(prepared, config, 1e-9, dram_sizes=[0.0], storage_sizes=[0.0], workers=1)
    assert strict.best is None and strict.summary()["best"] is None


def test_bad_targets_and_grids_are_refused(prepared, config):
    with pytest.raises(InputError, match="TTFT target"):
        plan(prepared, config, 0.0)
    with pytest.raises(InputError, match="sizes to try"):
        plan(
            prepared, config, 1.0, dram_sizes=[float(i) for i in range(50)], storage_sizes=[float(i) for i in range(50)]
        )


@pytest.fixture(scope="module")
def points(prepared, config):
    """Three sizes and their points computed in this process."""
    configs = [config.with_sizes(dram_gib=d) for d in (0.0, 0.25, 1.0)]
    return configs, run_points(prepared, configs, workers=1)


def test_a_process_pool_gives_the_points_of_one_process(prepared, points):
    configs, here = points
    assert run_points(prepared, configs, workers=2) == here


def test_a_local_ray_instance_gives_the_points_of_one_process(prepared, points):
    """The grid, and the routers' runs, on a local Ray instance of one CPU (one worker process to start, not
    one per core): ``--ray local`` uses an instance already started in the process."""
    from kvviz.cluster.search import search_stacks
    from kvviz.tiers.search import Targets
    from kvviz.traces import load_trace

    ray = pytest.importorskip("ray")
    configs, here = points
    routed = (load_trace("assets/example_trace.jsonl"), TierConfig("llama-3-8b", "h100", hbm_gib=2))
    routers = (*routed, ["round-robin", "cache-aware"], ["sglang"], Targets(1e-6))  # met by none: every count runs
    in_process = search_stacks(*routers, instances=[2, 3], workers=1)
    assert all(len(s.tried) == 2 for s in in_process.searches.values())
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        assert run_points(prepared, configs, ray_address="local") == here
        on_ray = search_stacks(*routers, instances=[2, 3], ray_address="local")
    finally:
        ray.shutdown()
    assert all(on_ray.searches[r].tried.equals(s.tried) for r, s in in_process.searches.items())
