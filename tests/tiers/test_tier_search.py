"""The cheapest deployment: exact on its steps (brute force over every step on a small trace), the
lower bound that skips instance counts never above a replay, and ``kvviz plan``'s search, its words
and its refusals (nothing to search, more workers than memory holds, a Ray address out of range)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.common import hardware as hw
from kvviz.common.errors import InputError
from kvviz.prefix_cache.replay import prepare
from kvviz.tiers import TierConfig, replay
from kvviz.tiers.pool import check_address, worker_bytes
from kvviz.tiers.search import Steps, Targets, lower_bound_ttft, search
from kvviz.traces.workload import WorkloadConfig, generate

STEPS = Steps(dimm_gib=0.5, dimm_slots=6, drive_tb=1.0, drive_bays=2)
BASE = ["assets/example_trace.jsonl", "--model", "llama-3-8b", "--gpu", "h100"]


@pytest.fixture(scope="module")
def prepared():
    return prepare(generate(WorkloadConfig(requests=300, seed=3, documents=12)))


def brute_force(prepared, targets: Targets) -> tuple[float, float] | None:
    """(cost, p90) of the cheapest deployment meeting the targets among every step, no bound, no order."""
    best = None
    for n, dimms, drives in itertools.product(range(1, 5), range(STEPS.dimm_slots + 1), range(STEPS.drive_bays + 1)):
        if dimms == 0 and drives > 0:
            continue
        config = TierConfig(
            "llama-3-8b", "h100", hbm_gib=0.25, instances=n, dram_gib=dimms * STEPS.dimm_gib,
            ssd_gib=drives * STEPS.drive_gib, ssd_drives=max(drives, 1),
        )  # fmt: skip
        ttft = replay(prepared, config, baselines=False).ttft()
        if targets.met(ttft) and (best is None or config.cost_per_hour() < best[0] - 1e-9):
            best = (config.cost_per_hour(), ttft["p90"])
    return best


@pytest.mark.parametrize("targets", [Targets(0.9), Targets(1.5), Targets(3.0, 6.0), Targets(0.5)])
def test_the_search_finds_what_brute_force_finds(prepared, targets):
    found = search(
        prepared, TierConfig("llama-3-8b", "h100", hbm_gib=0.25), targets, instances=range(1, 5), steps=STEPS
    )
    expected = brute_force(prepared, targets)
    if expected is None:
        assert found.best is None and found.warnings() == ["no deployment searched meets the targets"]
    else:
        assert (found.best["cost_per_hour"], found.best["ttft_p90_s"]) == pytest.approx(expected, rel=1e-12)
        assert len(found.tried) < 4 * 19  # the bound and the cost order spared replays


@pytest.mark.parametrize(("instances", "dram"), [(1, 0.0), (2, 1.0), (3, 0.25)])
def test_the_lower_bound_is_never_above_a_replay(prepared, instances, dram):
    config = TierConfig("llama-3-8b", "h100", hbm_gib=0.25, instances=instances, dram_gib=dram)
    bound, actual = lower_bound_ttft(prepared, config), replay(prepared, config).ttft()
    assert all(bound[q] <= actual[q] + 1e-12 for q in ("p50", "p90", "p99"))


def test_plan_searches_the_instances_and_its_best_replays_to_the_target(capsys):
    assert main(["plan", *BASE, "--hbm", "1GiB", "--target-p90-ttft", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    best = out["best"]
    assert set(best) == {
        "instances", "gpus", "dram_gib", "storage_gib", "ssd_tb", "ssd_drives", "cost_per_hour",
        "cost_per_instance_hour", "hit_ratio", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s",
    }  # fmt: skip
    assert best["cost_per_hour"] == pytest.approx(best["instances"] * best["cost_per_instance_hour"])
    argv = ["tiers", *BASE, "--hbm", "1GiB", "--instances", str(best["instances"]), "--json"]
    if best["dram_gib"]:
        argv += ["--dram", f"{best['dram_gib']}GiB"]
    if best["storage_gib"]:
        argv += ["--ssd", f"{best['ssd_tb']}TB", "--ssd-drives", str(best["ssd_drives"])]
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ttft_s"]["p90"] == pytest.approx(best["ttft_p90_s"]) and again["ttft_s"]["p90"] <= 0.5
    cheaper = [t for t in out["tried"] if t["cost_per_hour"] < best["cost_per_hour"]]
    assert all(t["ttft_p90_s"] > 0.5 for t in cheaper)


def test_a_terminal_gets_the_answer_as_a_sentence(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["plan", *BASE, "--target-p90-ttft", "0.5", "--target-p99-ttft", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Cheapest deployment meeting TTFT p90 within 0.5 s and p99 within 1 s: ")
    assert "per hour for the whole cluster ($" in out and "32 GiB DIMMs" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dram-sizes", "0", "--ssd-sizes", "10GiB"], "nothing to search"),
        (["--workers", "2"], "--workers applies to a grid of sizes"),
        (["--dram-sizes", "0,1GiB", "--target-p99-ttft", "2"], "--target-p99-ttft applies to the search"),
        (["--dram-sizes", "0,1GiB", "--ray", "127.0.0.1:0"], "the port must be from 1 to 65535, got 0"),
        (["--dram-sizes", "0,1GiB", "--ray", "127.0.0.1:99999"], "the port must be from 1 to 65535"),
        (["--dram-sizes", "0,1GiB", "--ray", "127.0.0.1:1"], "cannot reach the Ray cluster at '127.0.0.1:1'"),
        (["--dram-sizes", "0,1GiB", "--workers", "1024"], "--workers 1024: each worker needs about"),
    ],
)
def test_plan_refusals_are_one_line(capsys, args, message):
    assert main(["plan", *BASE, "--target-p90-ttft", "1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_worker_is_counted_with_the_trace_it_holds(prepared):
    assert worker_bytes(prepared) > 250 * 2**20 + 3 * prepared.nodes.nbytes
    check_address("ray://head.example:10001")
    assert np.isfinite(worker_bytes(prepared))


def test_gpus_per_instance_are_searched_and_must_fit_the_tensor_parallel_size(prepared):
    """One replica of all its GPUs per instance, or several of a smaller tensor-parallel size that divides them."""
    whole = search(prepared, TierConfig("llama-3-8b", "h100"), Targets(0.5), gpus=[1, 2], instances=[1, 2])
    assert set(whole.tried["gpus"]) <= {1, 2} and whole.best is not None
    with pytest.raises(InputError, match="tp \\(2\\) must divide every GPU count searched, not 3"):
        search(prepared, TierConfig("llama-3-8b", "h100", gpus=4, tp=2), Targets(0.5), gpus=[2, 3])


def test_buying_makes_dram_cheap_enough_to_change_the_cheapest_deployment(prepared):
    """Two instances meet the target only with host DRAM, three without: rented, a DIMM of 640 GiB costs more
    an hour than the third GPU, so the third GPU wins; bought, the DIMM costs less and DRAM wins."""
    steps = Steps(dimm_gib=640, dimm_slots=1, drive_tb=1.0, drive_bays=0)
    h100 = hw.gpu("h100")
    bought = hw.Purchase(*(p.value for p in hw.purchase_defaults(h100))).hourly()
    best = {}
    for name, prices in (("rent", hw.DevicePrices.for_gpu(h100)), ("buy", bought)):
        config = TierConfig("llama-3-8b", "h100", hbm_gib=0.25, prices=prices)
        found = search(prepared, config, Targets(2.45), instances=range(1, 5), steps=steps).best
        best[name] = (int(found["instances"]), float(found["dram_gib"]))
        assert found["cost_per_hour"] == pytest.approx(
            found["instances"] * (prices.gpu_per_hour + found["dram_gib"] * 2**30 / 1e9 * prices.dram_per_gb_hour)
        )
    assert best == {"rent": (3, 0.0), "buy": (2, 640.0)}
