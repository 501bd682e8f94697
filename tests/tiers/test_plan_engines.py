"""``kvviz plan --router R --engine E``: the engine fixed or searched like the router, checked against
``kvviz tiers --engine`` runs of every deployment, and what does not apply to an engine refused."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from kvviz.cli import main

EXAMPLE = "assets/example_trace.jsonl"
DEPLOYMENT = [EXAMPLE, "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "2GiB"]
ENGINES = ("sglang", "vllm-lmcache")
COUNTS = [2, 3]
ROUTER = "round-robin"


def tiers_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["tiers", *argv, "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def brute() -> dict:
    """Every engine at every count, each one `kvviz tiers --router --engine` run: what the search must pick from."""
    return {
        (e, n): tiers_json([*DEPLOYMENT, "--router", ROUTER, "--instances", str(n), "--engine", e])
        for e in ENGINES
        for n in COUNTS
    }


def cheapest(brute: dict, engine: str, target: float) -> int | None:
    meeting = [n for n in COUNTS if brute[(engine, n)]["ttft_s"]["p90"] <= target]
    return min(meeting) if meeting else None


def test_searching_both_engines_picks_the_cheaper_that_meets_the_target(brute):
    from kvviz.cluster.search import search_stacks
    from kvviz.tiers import TierConfig
    from kvviz.tiers.search import Targets
    from kvviz.traces import load_trace

    at_two = {e: brute[(e, 2)]["ttft_s"]["p90"] for e in ENGINES}
    assert at_two["sglang"] != at_two["vllm-lmcache"]  # else the test could not tell the engines apart
    target = min(at_two.values())  # only the faster engine meets it with 2 instances
    calls = []
    found = search_stacks(
        load_trace(EXAMPLE),
        TierConfig("llama-3-8b", "h100", hbm_gib=2),
        [ROUTER],
        list(ENGINES),
        Targets(target),
        instances=COUNTS,
        progress=lambda done, total: calls.append((done, total)),
    )
    for e in ENGINES:
        best = found.searches[(ROUTER, e)].best
        assert (None if best is None else int(best["instances"])) == cheapest(brute, e, target), e
        if best is not None:
            assert best["ttft_p90_s"] == pytest.approx(brute[(e, int(best["instances"]))]["ttft_s"]["p90"])
    overall = found.best
    faster = min(ENGINES, key=at_two.get)
    assert (overall["engine"], overall["router"], int(overall["instances"])) == (faster, ROUTER, 2)
    assert overall["cost_per_hour"] == pytest.approx(brute[(faster, 2)]["cost_per_hour"])
    runs = sum(len(s.tried) for s in found.searches.values())
    assert calls[0] == (0, len(ENGINES) * len(COUNTS)) and calls[-1] == (runs, runs)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert all(d <= t for d, t in calls)


def test_plan_with_every_engine_names_the_engine_of_its_answer(capsys, monkeypatch):
    argv = ["plan", *DEPLOYMENT, "--router", ROUTER, "--instances", "2", "--target-p90-ttft", "100"]
    assert main([*argv, "--engine", "all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["engines"]) == set(ENGINES) and out["runs"] == 2
    assert out["best"]["engine"] in ENGINES and out["best"]["router"] == ROUTER
    assert all(out["engines"][e][ROUTER]["engine"] == e for e in ENGINES)
    assert main([*argv, "--engine", "vllm-lmcache", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["engine"] == "vllm-lmcache" and one["router"] == ROUTER and one["runs"] == 1
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main([*argv, "--engine", "all"]) == 0
    words = capsys.readouterr().out
    assert words.startswith("Cheapest of 1 routers on 2 engines meeting TTFT p90 within 100 s: 2 instances of 1 ")
    assert f"{ROUTER} on SGLang: 2 at $" in words and f"{ROUTER} on vLLM + LMCache: 2 at $" in words


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "sglang"], "--engine applies with --router"),
        (["--router", ROUTER, "--engine", "tensorrt"], "unknown engine 'tensorrt'"),
        (["--router", ROUTER, "--engine", "vllm-lmcache", "--policy", "lfu"], "--policy applies to --engine sglang"),
        (["--router", ROUTER, "--engine", "all", "--policy", "fifo"], "--policy applies to --engine sglang"),
        (
            ["--router", ROUTER, "--engine", "vllm-lmcache", "--dram", "8GiB", "--write-policy", "back"],
            "--write-policy applies to SGLang's HiCache",
        ),
        (
            ["--router", ROUTER, "--engine", "all", "--dram", "8GiB", "--write-policy", "back"],
            "--write-policy applies to SGLang's HiCache",
        ),
        (["--router", ROUTER, "--engine", "all", "--dram", "inf"], "must be finite with --router"),
    ],
)
def test_plan_refuses_what_does_not_apply_to_an_engine(capsys, args, message):
    assert main(["plan", *DEPLOYMENT, "--target-p90-ttft", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_plan_with_every_engine_keeps_the_deployments_dram_on_both_stacks(capsys):
    """With --dram each stack's run keeps it: SGLang's HiCache host memory, LMCache's CPU backend; each
    engine's answer is its `kvviz tiers --router --engine --dram` run."""
    dram = ["--dram", "4GiB", "--instances", "2"]
    argv = ["plan", *DEPLOYMENT, "--router", ROUTER, "--target-p90-ttft", "100", *dram, "--engine", "all", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for e in ENGINES:
        alone = tiers_json([*DEPLOYMENT, "--router", ROUTER, "--engine", e, *dram])
        best = out["engines"][e][ROUTER]["best"]
        assert best["hit_ratio"] == alone["hit_ratio"] and best["cost_per_hour"] == pytest.approx(
            alone["cost_per_hour"]
        )
        assert best["ttft_p90_s"] == pytest.approx(alone["ttft_s"]["p90"])
        assert best["each_instance_keeps"] == alone["each_instance_keeps"]
    assert out["engines"]["vllm-lmcache"][ROUTER]["best"]["each_instance_keeps"]["cpu_chunks"] == 128
    assert out["engines"]["sglang"][ROUTER]["best"]["each_instance_keeps"]["dram_blocks"] == 64
    from kvviz.tiers.cli import routers_search_words

    best = out["best"]
    keeps = "64 blocks of host DRAM" if best["engine"] == "sglang" else "LMCache's CPU backend of 128 chunks"
    assert f"each with its own GPU memory and {keeps}, at $" in routers_search_words(out)[0]
