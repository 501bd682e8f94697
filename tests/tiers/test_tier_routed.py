"""``kvviz tiers --router``: the instances keep their own GPU caches and the cluster's router chooses.

Round-robin through ``kvviz tiers`` is the cluster's round-robin (one implementation), the shared cache
stands beside it labelled as the reference, and what a routed cluster does not model is refused in one
line naming it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kvviz.cli import main
from kvviz.cluster import REFERENCE, ClusterConfig, compare
from kvviz.tiers.cli import routed_words
from kvviz.traces import load_trace

EXAMPLE = "assets/example_trace.jsonl"
ROUTED = ["tiers", EXAMPLE, "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "2GiB", "--mfu", "0.6"]
BLOCKS = 32  # 2 GiB of llama-3-8b's KV in the example's 512-token blocks (64 MiB each)


@pytest.fixture(scope="module")
def round_robin() -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*ROUTED, "--instances", "4", "--router", "round-robin", "--ttft-slo", "0.3", "--json"]) == 0
    return json.loads(out.getvalue())


def test_round_robin_is_the_clusters_round_robin(round_robin):
    table = compare(load_trace(EXAMPLE), ["round-robin"], ClusterConfig(4, BLOCKS, model="llama-3-8b", mfu=0.6))
    row, ref = table.iloc[0], table.iloc[1]
    assert round_robin["gpu_blocks_per_instance"] == BLOCKS
    assert round_robin["hit_blocks"] == row["hits"] and round_robin["fetched_blocks"] == 0
    assert round_robin["ttft_s"] == pytest.approx(
        {"p50": row["ttft_p50_s"], "p90": row["ttft_p90_s"], "p99": row["ttft_p99_s"]}
    )
    assert round_robin["load_imbalance"] == pytest.approx(row["imbalance"])
    assert round_robin["cost_per_hour"] == pytest.approx(row["dollars_per_hour"])
    assert round_robin["cost_per_million_input_tokens"] == pytest.approx(row["dollars_per_m_input_tokens"])
    assert round_robin["reference"] == {
        "label": REFERENCE,
        "gpu_blocks": 4 * BLOCKS,
        "hit_blocks": ref["hits"],
        "dram_hit_blocks": 0,
        "storage_hit_blocks": 0,
        "hit_ratio": pytest.approx(ref["hit_ratio"]),
    }
    assert round_robin["hit_blocks"] < ref["hits"]  # four small caches hit less than one cache of all four
    assert 0 <= round_robin["ttft_slo_met"] <= 1


def test_the_terminal_summary_labels_the_reference(round_robin):
    words = routed_words(round_robin)
    assert "behind round-robin" in words[0] and f"({BLOCKS:,} blocks)" in words[0]
    assert "Reference (not a deployment): one shared cache" in words[1] and f"{4 * BLOCKS:,} blocks" in words[1]
    assert "load imbalance" in words[2] and "Decode is not simulated" in words[-1]


def test_the_conductors_fetched_blocks_are_counted_apart(capsys):
    assert main([*ROUTED, "--instances", "4", "--router", "conductor", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    table = compare(load_trace(EXAMPLE), ["conductor"], ClusterConfig(4, BLOCKS, model="llama-3-8b", mfu=0.6))
    assert (out["hit_blocks"], out["fetched_blocks"]) == (table["hits"].iloc[0], table["fetched"].iloc[0])
    fetched = 100 * out["fetched_blocks"] / out["accesses"]
    assert out["fetched_blocks"] > 0 and f"{fetched:.1f}% fetched from another instance" in routed_words(out)[1]


def test_the_gpu_price_and_tensor_parallel_reach_the_cluster(capsys):
    argv = [*ROUTED, "--instances", "2", "--router", "least-load", "--gpus", "2", "--gpu-price", "1.5", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cost_per_hour"] == pytest.approx(2 * 2 * 1.5)
    assert out["deployment"]["tp"] == 2 and out["deployment"]["dram_gib"] == 0


TIERED = ["--instances", "2", "--dram", "4GiB", "--ssd", "8GiB", "--dram-price", "1", "--json"]


@pytest.mark.parametrize(("storage", "shared"), [(["--ssd", "8GiB"], False), (["--remote", "8GiB"], True)])
def test_dram_and_storage_behind_a_router_are_the_clusters_hicache(capsys, storage, shared):
    """Each instance's own DRAM (64 blocks of 64 MiB) over its own SSD or the one remote pool (128 blocks),
    as the cluster serves them; the DRAM's price is in the cost."""
    argv = [*ROUTED, "--instances", "2", "--router", "cache-aware", "--dram", "4GiB", *storage, "--json"]
    assert main([*argv, "--dram-price", "1", "--write-policy", "back"]) == 0
    out = json.loads(capsys.readouterr().out)
    config = ClusterConfig(
        2, BLOCKS, model="llama-3-8b", mfu=0.6, host_blocks=64, storage_blocks=128, shared_storage=shared
    )
    config = replace(config, write_policy="write_back", pool_gb_s=50.0)
    row = compare(load_trace(EXAMPLE), ["cache-aware"], config).iloc[0]
    assert out["found_blocks"] == {
        "gpu": row["hits"],
        "dram": row["dram_hits"],
        "remote" if shared else "ssd": row["storage_hits"],
    }
    assert out["found_blocks"]["dram"] > 0
    assert sum(i["dram"] for i in out["per_instance"]) == row["dram_hits"]
    assert out["dram_blocks_per_instance"] == 64 and out["storage_blocks"] == 128
    assert out["cost_per_hour"] > row["dollars_per_hour"]  # the DRAM's price
    assert "in host DRAM" in routed_words(out)[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--router", "round-robin"], "--router needs --instances 2 or more"),
        (["--instances", "1", "--router", "kv-aware"], "--router needs --instances 2 or more"),
        (["--instances", "2", "--router", "random"], "unknown router 'random'"),
        (["--instances", "2", "--router", "cache-aware", "--ssd", "1TiB"], "give DRAM too"),
        (
            [
                "--instances",
                "2",
                "--router",
                "kv-aware",
                "--engine",
                "vllm-lmcache",
                "--dram",
                "8GiB",
                "--write-policy",
                "back",
            ],
            "--write-policy applies to SGLang's HiCache",
        ),
        (["--instances", "2", "--router", "kv-aware", "--engine", "vllm-lmcache", "--ssd", "1TiB"], "give DRAM too"),
        (
            ["--instances", "2", "--router", "cache-aware", "--dram", "8GiB", "--ssd", "1TiB", "--ssd-drives", "2"],
            "--ssd-drives does not apply",
        ),
        (["--instances", "2", "--router", "conductor", "--no-overlap"], "--no-overlap does not apply with --router"),
        (["--instances", "2", "--router", "conductor", "--load", "fastest"], "--load does not apply with --router"),
        (["--instances", "2", "--router", "prefix-hash", "--gpus", "2", "--tp", "1"], "one model replica"),
    ],
)
def test_what_a_routed_cluster_does_not_model_is_refused(capsys, args, message):
    assert main([*ROUTED, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


LMCACHE_TIERS = ["--instances", "2", "--router", "round-robin", "--engine", "vllm-lmcache", "--dram-price", "1"]


@pytest.mark.parametrize(
    ("storage", "cpu", "disk", "remote"),
    [
        ([], 128, 0, 0),
        (["--ssd", "8GiB", "--ssd-price", "0"], 128, 256, 0),
        (["--remote", "8GiB", "--remote-gbps", "10", "--remote-price", "0"], 128, 0, 256),
    ],
)
def test_dram_and_storage_with_lmcache_are_its_backends(capsys, storage, cpu, disk, remote):
    """4 GiB of DRAM per instance is LMCache's CPU backend of 128 chunks of 256 tokens (32 MiB each, as
    LMCache sizes it: max_local_cpu_size GiB over the chunk's bytes), the SSD its disk backend, the remote
    pool one remote backend at the remote link: the cluster's run with that LMCacheConfig, priced with the DRAM."""
    from kvviz.lmcache import LMCacheConfig

    assert main([*ROUTED, *LMCACHE_TIERS, "--dram", "4GiB", *storage, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lm = LMCacheConfig(cpu_chunks=cpu, disk_chunks=disk, remote_chunks=remote)
    config = ClusterConfig(2, BLOCKS, model="llama-3-8b", mfu=0.6, engine="vllm-lmcache", lmcache=lm)
    config = replace(config, pool_gb_s=10.0 if remote else 50.0)
    row = compare(load_trace(EXAMPLE), ["round-robin"], config).iloc[0]
    assert out["lmcache"] == {
        "chunk_size": 256,
        "cpu_chunks_per_instance": cpu,
        "disk_chunks_per_instance": disk,
        "remote_chunks": remote,
        "remote_is": "one backend every instance stores to and looks up in",
    }
    assert out["hit_blocks"] == row["hits"]
    assert [out["found_tokens"][b] for b in ("cpu", "disk", "remote")] == [
        row[f"lmcache_{b}_tokens"] for b in ("cpu", "disk", "remote")
    ]
    assert out["found_tokens"]["cpu"] > 0 and (out["found_tokens"]["disk"] > 0) == bool(disk)
    assert out["found_tokens"]["remote"] > 0 if remote else out["found_tokens"]["remote"] == 0
    assert out["ttft_s"] == pytest.approx(
        {"p50": row["ttft_p50_s"], "p90": row["ttft_p90_s"], "p99": row["ttft_p99_s"]}
    )
    dram_per_hour = 2 * 4 * 2**30 / 1e9  # two instances' 4 GiB at $1 per GB-hour
    assert out["cost_per_hour"] == pytest.approx(row["dollars_per_hour"] + dram_per_hour)
    assert "write_policy" not in out["deployment"]
    assert "LMCache loaded" in routed_words(out)[1] and "from its CPU memory" in routed_words(out)[1]


@pytest.mark.parametrize("router", ["round-robin", "prefix-hash", "cache-aware"])
def test_an_unbounded_lmcache_remote_reaches_the_traces_ceiling_behind_every_router(capsys, router):
    """With an unbounded remote backend every instance finds every chunk any instance stored: each router's
    prompt tokens found (GPU and backends) are the trace's ceiling in tokens."""
    import numpy as np

    from kvviz.prefix_cache import prepare, request_hits

    argv = [*ROUTED, *LMCACHE_TIERS, "--router", router, "--dram", "1GiB", "--remote", "inf", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    replay = prepare(load_trace(EXAMPLE))
    ceiling = np.minimum(request_hits(replay, "lru", float("inf")) * replay.block_size, replay.input_lengths)
    assert out["lmcache"]["remote_chunks"] is None  # unbounded
    assert sum(out["found_tokens"].values()) == int(ceiling.sum())


def searched(trace, config, router: str, targets, **options):
    """One router's search on SGLang (``plan --router R``)."""
    from kvviz.cluster.search import search_stacks

    return search_stacks(trace, config, [router], ["sglang"], targets, **options).searches[(router, "sglang")]


def test_plan_behind_a_router_is_the_cheapest_count_that_meets_the_target():
    from kvviz.cluster.deployment import routed
    from kvviz.tiers import TierConfig
    from kvviz.tiers.search import Targets

    trace = load_trace(EXAMPLE)
    config = TierConfig("llama-3-8b", "h100", hbm_gib=2, mfu=0.6)
    counts = [2, 3, 4, 5]
    brute = {n: routed(trace, TierConfig("llama-3-8b", "h100", hbm_gib=2, mfu=0.6, instances=n), "kv-aware").summary()
             for n in counts}  # fmt: skip
    target = brute[4]["ttft_s"]["p90"]
    found = searched(trace, config, "kv-aware", Targets(target), instances=counts)
    meeting = [n for n in counts if brute[n]["ttft_s"]["p90"] <= target]
    best = found.best
    assert best is not None and best["instances"] == min(meeting)
    assert best["ttft_p90_s"] == pytest.approx(brute[min(meeting)]["ttft_s"]["p90"])
    assert found.tried["instances"].tolist() == counts[: counts.index(min(meeting)) + 1]  # cheapest first, then stop
    missed = searched(trace, config, "kv-aware", Targets(1e-6), instances=counts)
    assert missed.best is None and len(missed.tried) == len(counts)
    assert missed.summary()["warnings"] == ["no deployment searched meets the targets"]


def test_a_search_behind_a_router_keeps_each_instances_dram():
    """Every instance count searched is run with the deployment's DRAM per instance, as one routed run is."""
    from kvviz.cluster.deployment import routed
    from kvviz.tiers import TierConfig
    from kvviz.tiers.search import Targets

    trace = load_trace(EXAMPLE)
    config = TierConfig("llama-3-8b", "h100", hbm_gib=2, dram_gib=4, mfu=0.6)
    found = searched(trace, config, "round-robin", Targets(100.0), instances=[2])
    alone = routed(trace, replace(config, instances=2), "round-robin").summary()
    assert alone["found_blocks"]["dram"] > 0
    assert found.best["hit_ratio"] == alone["hit_ratio"] and found.best["cost_per_hour"] == alone["cost_per_hour"]


def test_plan_with_a_router_prints_its_answer(capsys):
    argv = ["plan", *ROUTED[1:], "--router", "round-robin", "--instances", "3", "--target-p90-ttft", "100", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["router"] == "round-robin" and out["runs"] == 1
    assert out["best"]["instances"] == 3 and out["best"]["cost_per_hour"] == pytest.approx(3 * 3.99)
    assert 0 < out["best"]["hit_ratio"] <= out["best"]["shared_hit_ratio"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--instances", "1"], "--router needs --instances 2 or more"),
        (["--dram-sizes", "0,8GiB"], "--dram-sizes does not apply with --router"),
        (["--tp", "1"], "--tp does not apply with --router"),
        (["--no-overlap"], "--no-overlap does not apply with --router"),
    ],
)
def test_plan_refuses_what_a_router_search_does_not_model(capsys, args, message):
    assert main(["plan", *ROUTED[1:], "--router", "cache-aware", "--target-p90-ttft", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


# ---- every router searched ----------------------------------------------------------------------

COUNTS = [2, 3, 4, 5]


@pytest.fixture(scope="module")
def brute() -> dict:
    """Every router at every count, each run alone: the brute force the search must agree with."""
    from kvviz.cluster import ROUTERS
    from kvviz.cluster.deployment import routed
    from kvviz.tiers import TierConfig

    trace = load_trace(EXAMPLE)
    return {
        (r, n): routed(trace, TierConfig("llama-3-8b", "h100", hbm_gib=2, instances=n), r).summary()
        for r in ROUTERS
        for n in COUNTS
    }


def cheapest_by_brute_force(brute: dict, router: str, target: float) -> int | None:
    meeting = [n for n in COUNTS if brute[(router, n)]["ttft_s"]["p90"] <= target]
    return min(meeting) if meeting else None


def test_searching_every_router_agrees_with_brute_force(brute):
    from kvviz.cluster import ROUTERS
    from kvviz.cluster.search import search_stacks
    from kvviz.tiers import TierConfig
    from kvviz.tiers.search import Targets

    target = sorted(s["ttft_s"]["p90"] for s in brute.values())[len(brute) // 2]  # some routers meet it sooner
    config = TierConfig("llama-3-8b", "h100", hbm_gib=2)
    found = search_stacks(load_trace(EXAMPLE), config, list(ROUTERS), ["sglang"], Targets(target), instances=COUNTS)
    answers = {}
    for r in ROUTERS:
        expected, best = cheapest_by_brute_force(brute, r, target), found.searches[(r, "sglang")].best
        assert (None if best is None else int(best["instances"])) == expected, r
        if best is not None:
            assert best["ttft_p90_s"] == pytest.approx(brute[(r, expected)]["ttft_s"]["p90"])
            answers[r] = (best["cost_per_hour"], best["ttft_p90_s"])
    overall = found.best
    assert overall is not None
    assert (overall["cost_per_hour"], overall["ttft_p90_s"]) == min(answers.values())
    assert answers[overall["router"]] == (overall["cost_per_hour"], overall["ttft_p90_s"])


def test_plan_searches_every_router_and_names_the_cheapest(capsys, monkeypatch):
    argv = ["plan", *ROUTED[1:], "--router", "round-robin,kv-aware", "--target-p90-ttft", "100", "--json"]
    assert main([*argv, "--instances", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["routers"]) == {"round-robin", "kv-aware"} and out["runs"] == 2
    assert out["best"]["router"] in out["routers"] and out["best"]["instances"] == 3
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["plan", *ROUTED[1:], "--router", "all", "--target-p90-ttft", "100", "--instances", "2"]) == 0
    words = capsys.readouterr().out
    assert words.startswith("Cheapest of 6 routers meeting TTFT p90 within 100 s: 2 instances of 1 GPU(s) behind ")
    assert "6 deployment(s) run, each router's cheapest first. Each router's cheapest: round-robin: 2 at $" in words
