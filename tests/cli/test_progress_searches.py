"""``plan``'s searches and the sampled prefix curves count their runs for the progress line (runs done
of a total, so it can say how long is left), instead of elapsed time only."""

from __future__ import annotations

import json
import re

import pytest

from kvviz.common.progress import Progress
from tests.cli.test_progress import Terminal, drawn, eager, on_a_terminal, screen  # noqa: F401 (eager: a fixture)

EXAMPLE = "assets/example_trace.jsonl"
DEPLOYMENT = [EXAMPLE, "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "2GiB"]


@pytest.mark.usefixtures("eager")
def test_a_count_with_a_total_that_falls_and_one_with_none():
    out = Terminal()
    with Progress("w", None, "runs", stream=out) as p:
        p.count(2, 10)
        p.count(4, 5)  # the search learnt it needs fewer
        assert p.total == 5
        p.count(6, None)
    lines = drawn(out.getvalue())
    assert "2/10 runs" in lines[1] and "left" in lines[1]
    assert "4/5 runs" in lines[2]
    assert re.search(r": 6 runs, \d+ s elapsed$", lines[3])
    assert screen(out.getvalue()) == ""


def test_the_deployment_search_counts_each_replay():
    from kvviz.tiers import TierConfig
    from kvviz.tiers.search import Targets, search
    from kvviz.traces import load_trace

    calls = []
    found = search(
        load_trace(EXAMPLE),
        TierConfig("llama-3-8b", "h100", hbm_gib=2),
        Targets(100.0),
        instances=[1, 2],
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(n, None) for n in range(1, len(found.tried) + 1)] and calls


def test_the_grid_counts_its_bisections_then_its_points():
    from kvviz.prefix_cache import prepare
    from kvviz.tiers import TierConfig, plan
    from kvviz.tiers.plan import search_replays
    from kvviz.traces import load_trace

    prepared = prepare(load_trace(EXAMPLE))
    calls = []
    found = plan(
        prepared,
        TierConfig("llama-3-8b", "h100", hbm_gib=2),
        5.0,
        dram_sizes=[0, 64],
        storage_sizes=[0],
        workers=1,
        progress=lambda done, total: calls.append((done, total)),
    )
    bound = search_replays(prepared, 0) + 2
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and dones[-1] == found.replays
    assert all(d <= t for d, t in calls)
    assert {t for _, t in calls[:-2]} == {bound} and calls[-1] == (found.replays, found.replays)


def test_the_sampled_prefix_curve_counts_each_policy_on_each_sample():
    from kvviz.eviction.shards import REPLICAS
    from kvviz.prefix_cache.sampling import sampled_runs, sampled_sweep
    from kvviz.traces import load_trace

    calls = []
    sampled_sweep(
        load_trace(EXAMPLE), ["lru", "fifo"], [200, 400], 0.5, ("lru",), progress=lambda d, t: calls.append((d, t))
    )
    total = REPLICAS * 2 + 1
    assert sampled_runs(["lru", "fifo"], ("lru",)) == total
    assert calls == [(n, total) for n in range(1, total + 1)]


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["plan", *DEPLOYMENT, "--target-p90-ttft", "100", "--instances", "2"], "searching the deployments"),
        (
            ["plan", *DEPLOYMENT, "--target-p90-ttft", "100", "--router", "round-robin", "--engine", "all"],
            "searching behind 1 router(s) on 2 engine(s)",
        ),
        (
            ["hitcurve", EXAMPLE, "--cache", "prefix", "--policies", "lru", "--capacities", "400", "--sample", "0.5"],
            "replaying",
        ),
    ],
    ids=["search", "routers", "sampled"],
)
@pytest.mark.usefixtures("eager")
def test_commands_draw_their_counts_and_print_the_same(argv, what, monkeypatch, capsys):
    plain, out = on_a_terminal(argv, monkeypatch, capsys)
    counted = [line for line in drawn(out.getvalue()) if re.search(r": \d[\d,]*(/\d[\d,]*)? (runs|replays), ", line)]
    assert counted and all(what in line for line in counted), drawn(out.getvalue())
    assert " elapsed" not in screen(out.getvalue())  # erased; the sample's own notes stay
    if argv[0] == "plan":
        json.loads(plain)
