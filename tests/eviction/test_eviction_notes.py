"""The Eviction page's leader marks and "why it wins" notes, on hand-made curves and replays."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.common.paper import problems
from kvviz.eviction.curves import MOONCAKE_TABLE1, TABLE1_CAPACITIES, paper_rows
from kvviz.eviction.grid import INFINITE
from kvviz.eviction.notes import TIE, TIE_MARGIN, lead_runs, leader_at, leaders, trace_facts, twins, why_notes
from kvviz.eviction.replay import Replay, hit_curve, replay_of
from kvviz.traces.workload import WorkloadConfig, generate


def _curve(rows: dict[str, list[float]], caps=(10, 100, 1000)) -> pd.DataFrame:
    out = [
        {"policy": p, "capacity": float(c), "hits": round(1000 * r), "accesses": 1000, "hit_ratio": r}
        for p, ratios in rows.items()
        for c, r in zip(caps, ratios)
    ]
    return pd.DataFrame(
        out + [{"policy": p, "capacity": INFINITE, "hits": 0, "accesses": 1000, "hit_ratio": 0.5} for p in rows]
    )


def _replay(ids: list[int], per_request: int = 1) -> Replay:
    a = np.asarray(ids, dtype=np.int64)
    offsets = np.arange(0, len(a) + 1, per_request, dtype=np.int64)
    return Replay(a, int(a.max()) + 1, offsets, np.zeros(len(offsets) - 1, dtype=np.int64), 1)


def test_leaders_runs_and_ties():
    curve = _curve({"lru": [0.10, 0.30, 0.40], "lfu": [0.20, 0.30 + TIE_MARGIN / 2, 0.35], "belady": [0.3, 0.4, 0.5]})
    best = leaders(curve, ["lru", "lfu"])
    assert best["policy"].tolist() == ["lfu", TIE, "lru"]
    assert np.allclose(best["lead"], [0.10, TIE_MARGIN / 2, 0.05])
    runs = lead_runs(curve, ["lru", "lfu"])
    assert [(r.policy, r.low, r.high) for r in runs] == [("lfu", 10, 10), (TIE, 100, 100), ("lru", 1000, 1000)]
    assert leader_at(curve, ["lru", "lfu"], 1000) == "lru"


def test_a_run_keeps_its_largest_lead_and_where():
    curve = _curve({"lru": [0.10, 0.20, 0.30], "lfu": [0.12, 0.25, 0.31]})
    (run,) = lead_runs(curve, ["lru", "lfu"])
    assert (run.policy, run.low, run.high, run.margin_at) == ("lfu", 10, 1000, 100)
    assert abs(run.margin - 0.05) < 1e-12


def test_trace_facts_exact_counts():
    # blocks 0 1 0 2 0 3: block 0 three times, 1/2/3 once
    facts = trace_facts(_replay([0, 1, 0, 2, 0, 3]))
    assert facts.distinct == 4 and facts.accesses == 6
    assert facts.one_shot_blocks == 0.75
    assert facts.first_accesses == 4 / 6
    assert facts.hot_share == 1.0  # the top block (one of four) takes both re-accesses
    assert facts.distances.tolist() == [1, 1] and facts.median_reuse == 1
    assert facts.reused_within(1) == 0.0 and facts.reused_within(2) == 1.0  # LRU of 2 blocks hits both


def test_notes_follow_the_numbers_and_never_claim_a_why_without_a_lead_over_lru():
    facts = trace_facts(_replay([0, 1, 0, 2, 0, 3]))
    curve = _curve({"lru": [0.10, 0.30, 0.40], "s3fifo": [0.20, 0.30, 0.35]})
    notes = why_notes(curve, ["lru", "s3fifo"], facts)
    assert notes[0].startswith("Best online policy along the curve: **S3-FIFO** at 10 blocks (by up to 0.100)")
    assert "75% of the 4 distinct blocks are used only once" in notes[1]
    assert any("one-shot pollution" in n and "+0.100 over LRU at 10 blocks" in n for n in notes)
    assert any(n.startswith("**LRU** leads at 1,000 blocks") for n in notes)
    tied = why_notes(_curve({"lru": [0.1, 0.2, 0.3], "lfu": [0.1, 0.2, 0.3]}), ["lru", "lfu"], facts)
    assert len(tied) == 3 and "every policy (a tie)" in tied[0]
    assert (
        tied[2] == "**LRU** and **LFU** hit exactly alike on this trace: the same number of hits at all 3 capacities."
    )


def test_on_a_generated_trace_every_run_names_a_shown_policy():
    trace = generate(WorkloadConfig(requests=300, seed=3))
    policies = ["lru", "lfu", "s3fifo"]
    curve = hit_curve(trace, [*policies, "belady"], [50, 200, 1000, 5000, INFINITE])
    runs = lead_runs(curve, policies)
    assert {r.policy for r in runs} <= {*policies, TIE}
    assert runs[0].low == 50 and runs[-1].high == 5000


def test_lfu_and_sieve_with_the_same_hits_are_said_to_tie_and_why():
    trace = generate(WorkloadConfig(requests=1000, seed=2))
    policies = ["lru", "lfu", "sieve", "s3fifo"]
    curve = hit_curve(trace, policies, [50, 200, 1000, 5000, INFINITE])
    assert twins(curve, policies) == [("lfu", "sieve")]
    assert why_notes(curve, policies, trace_facts(replay_of(trace)))[-1] == (
        "**LFU** and **SIEVE** hit exactly alike on this trace: the same number of hits at all 4 capacities. "
        "That is expected, not a bug: both evict first the oldest cached block that has not been hit since it "
        "came in, and they choose differently only when every such block is gone and a block that has been hit "
        "must go. On this trace 87% of the 10,061 distinct blocks are used only once (only 1,350 are ever "
        "reused): never-hit blocks are plentiful, and the equal hits show the two never parted ways in a way "
        "that changed a hit."
    )


def _table1_curve() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"policy": p, "capacity": c, "hit_ratio": r}
            for p, by_capacity in MOONCAKE_TABLE1.items()
            for c, r in by_capacity.items()
        ]
    )


def test_table1_grades_only_mooncakes_trace_in_its_own_blocks():
    graded = paper_rows(_table1_curve(), 512, graded=True)
    assert {r["status"] for r in graded} == {"agrees"} and len(graded) == len(TABLE1_CAPACITIES)
    assert paper_rows(_table1_curve(), 2048, graded=True)[0]["basis"] == (
        "not compared: Table 1 counts 512-token blocks and these hold 2,048 tokens, so the same count is 4× the memory"
    )
    other = paper_rows(_table1_curve(), 512, graded=False)
    assert {r["basis"] for r in other} == {"not compared: another trace than the one Table 1 replays"}
    assert not problems(other)
