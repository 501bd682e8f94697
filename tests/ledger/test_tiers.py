"""The tiered KV cache simulation (lecture 27 §6.3, code 05's setup)."""

import pytest

from kvviz.common import hardware as hw
from kvviz.common.errors import InputError
from kvviz.ledger import tiers

L8 = hw.model("llama-3-8b")
H100 = hw.Compute(hw.gpu("h100"))
SMALL = tiers.ChatLoad(users=40, turns=6, rate_per_s=4.0)


def test_total_kv_matches_notes():
    """200 users × 12 turns of Llama-3-8B: 241 GB (224 GiB) of KV in all (±2%)."""
    assert tiers.total_kv_gib(L8, tiers.ChatLoad()) == pytest.approx(241e9 / 2**30, rel=0.02)


def test_requests_are_per_user_sequences():
    df = tiers.requests(SMALL)
    assert len(df) == 240 and df["arrival s"].is_monotonic_increasing
    for _, g in df.groupby("user"):
        assert list(g["turn"]) == list(range(1, 7))
        assert g["prompt"].is_monotonic_increasing
        hist = (g["prompt"] + g["reply"]).to_numpy()
        assert (g["prompt"].to_numpy()[1:] > hist[:-1]).all()


def test_lru_evicts_oldest_and_refuses_oversize():
    lru = tiers._LRU(100)
    assert lru.put(1, 40, 1) == [] and lru.put(2, 40, 1) == []
    assert lru.put(3, 40, 1) == [(1, 40)]
    assert lru.put(4, 500, 1) == [] and 4 not in lru.entries
    assert lru.used == 80


def test_ladder_direction_notes():
    """GPU-only recomputes most; a CPU tier cuts recompute; fast CPU reads beat slow ones by 3-7×."""
    summary, runs = tiers.compare(L8, H100, tiers.ChatLoad(), tiers.default_setups())
    s = summary.set_index("setup")
    gpu_only, slow, fast, ssd = (s.iloc[i] for i in range(4))
    assert gpu_only["recomputed %"] > 50 and gpu_only["CPU hit %"] == 0
    assert slow["recomputed %"] < gpu_only["recomputed %"]
    assert slow["CPU hit %"] == fast["CPU hit %"] > 0  # same capacity, same hits
    assert 3 <= slow["mean TTFT s"] / fast["mean TTFT s"] <= 7
    assert fast["mean TTFT s"] < gpu_only["mean TTFT s"] / 3
    assert ssd["recomputed %"] < 10  # everything fits with the SSD
    assert len(runs) == 4 * 2400 and (runs["TTFT s"] > 0).all()


def test_write_through_small_cpu_tier_adds_nothing():
    """LMCache-style write-through: a CPU tier smaller than the GPU's only holds what the GPU holds."""
    setups = tiers.default_setups(gpu_gib=20, cpu_gib=10, fill="write-through")[:2]
    summary, _ = tiers.compare(L8, H100, SMALL, setups)
    assert summary["CPU hit %"].iloc[1] == 0
    big = tiers.default_setups(gpu_gib=5, cpu_gib=60, fill="write-through")[:2]
    summary, _ = tiers.compare(L8, H100, SMALL, big)
    assert summary["CPU hit %"].iloc[1] > 0


def test_infinite_gpu_recomputes_only_new_tokens():
    run = tiers.simulate(L8, H100, SMALL, tiers.TierSetup("huge", gpu_gib=10_000))
    first = run["turn"] == 1
    assert (run.loc[first, "hit tokens"] == 0).all()
    assert (run.loc[~first, "tier"] == "GPU").all() and (run["load s"] == 0).all()


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: tiers.ChatLoad(users=0), "users"),
        (lambda: tiers.ChatLoad(rate_per_s=0), "request rate"),
        (lambda: tiers.ChatLoad(users=5000, turns=100), "users × turns"),
        (lambda: tiers.TierSetup("x", gpu_gib=0), "GPU KV room"),
        (lambda: tiers.TierSetup("x", cpu_read_gb_s=0), "CPU read"),
        (lambda: tiers.TierSetup("x", fill="lru"), "fill"),
    ],
)
def test_bad_parameters(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_ttft_by_source_counts_every_request():
    summary, runs = tiers.compare(L8, H100, SMALL, tiers.default_setups(gpu_gib=5, cpu_gib=5, ssd_gib=100))
    table = tiers.ttft_by_source(runs).set_index("setup")
    first = table.iloc[0]
    assert first["CPU"] == "–" and first["SSD"] == "–"
    counts = [int(str(v).split("(")[1].rstrip(")")) for v in table.iloc[3] if "(" in str(v)]
    assert sum(counts) == len(tiers.requests(SMALL))


def test_gpu_only_queue_explodes_late_in_the_run():
    """Lecture 27 §6.3: with the GPU alone the queue explodes; a fast CPU tier keeps it far lower."""
    summary, runs = tiers.compare(L8, H100, tiers.ChatLoad(), tiers.default_setups()[::2])
    gpu_only, fast = summary.iloc[0], summary.iloc[1]
    assert gpu_only["last 1/8: offered load"] > 1.2
    assert gpu_only["last 1/8: TTFT s"] > 5 * fast["last 1/8: TTFT s"]
    over = tiers.ttft_over_time(runs, bins=8)
    first = over[over["setup"] == gpu_only["setup"]]["TTFT s"].to_numpy()
    assert len(first) == 8 and first[-1] > 100 * first[0]
    rows = tiers.paper_rows(summary.iloc[[0, 1, 1]].assign(setup=["a", "b", "c"]), 224)
    assert rows[1]["status"] == "agrees"
