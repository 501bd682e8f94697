"""The streaming views' paper rows and notes: the numbers they print are the run's, and each status is computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cachegen import stream_report as report
from kvviz.cachegen import streaming as S
from kvviz.common.paper import problems
from tests.cachegen.cachegen_setup import real_setup

LEVELS = (S.Level("level1", 1.8, 0.97, 1e-3), S.Level("level2", 2.26, 0.98, 1e-4), S.Level("level3", 3.0, 0.99, 1e-5))
SETUP = S.StreamSetup(LEVELS, S.Level("quant8", 8.0, 1.0))


def summary(**ttft) -> pd.DataFrame:
    rates = {"paper": 0.1, "artifact": 0.05, "quant8": 0.8, "text": 1.0}
    return pd.DataFrame(
        [
            {"policy": p, "violation_rate": rates[p], "mean_quality": 0.99, "mean_ttft_s": t, "p95_ttft_s": 1}
            for p, t in ttft.items()
        ]
    )


def test_paper_rows_quote_table_1_beside_the_measured_sizes():
    rows = {
        r["quantity"]: r
        for r in report.paper_rows(
            SETUP, summary(paper=0.5, artifact=0.4, quant8=2.0, text=0.75), "test traces", "a test KV"
        )
    }
    eight, cachegen = rows["KV of a 9,490-token Mistral-7B context at 8 bits"], rows["… with CacheGen"]
    assert eight["paper"] == "622 MB (Table 1)" and eight["this simulation"].startswith("622 MB")
    assert eight["status"] == "agrees"
    assert cachegen["this simulation"].startswith("176 MB") and cachegen["status"] == "agrees"
    ratio = rows["Size reduction vs the 8-bit quantization baseline"]
    assert ratio["this simulation"] == "3.5×" and ratio["status"] == "agrees"
    assert rows["Mean TTFT, 8-bit quant ÷ CacheGen adaptive"]["this simulation"] == "4.0× (paper rule)"
    assert rows["Mean TTFT, 8-bit quant ÷ CacheGen adaptive"]["status"] == "agrees"  # 3.7 x 1.1 = 4.07
    text = rows["Mean TTFT, text recompute ÷ CacheGen adaptive"]
    assert text["this simulation"] == "1.5× (paper rule)" and text["status"] == "differs"
    assert not problems(rows.values())
    violations = next(r for q, r in rows.items() if q.startswith("SLO violations"))
    assert violations["this simulation"].startswith("80% → 10% (paper rule), 5%")
    assert violations["status"] == "agrees"


def test_the_measured_setting_differs_from_table_1_and_the_note_says_why():
    setup = real_setup()
    runs = S.run_all(setup, S.persistent_traces(300, setup.n_chunks, 0.9, seed=0))
    table = S.summary(runs)
    rows = {r["quantity"]: r for r in report.paper_rows(setup, table, "traces", "a synthetic KV")}
    assert rows["Mean TTFT, text recompute ÷ CacheGen adaptive"]["status"].startswith("differs")
    assert rows["Recomputing 9,600 tokens of Mistral-7B on an A40"]["status"].startswith("agrees")
    note = report.stream_note(setup, table)
    ratio = rows["Mean TTFT, text recompute ÷ CacheGen adaptive"]["this simulation"].split("×")[0]
    assert f"ratio is {ratio}×" in note and "recompute" in note


def test_stream_notice_claims_follow_the_numbers():
    table = summary(paper=0.5, artifact=0.4, quant8=2.0, text=0.75)
    table = pd.concat(
        [
            table,
            pd.DataFrame(
                [{"policy": "level2", "violation_rate": 0.2, "mean_quality": 1, "mean_ttft_s": 1, "p95_ttft_s": 1}]
            ),
        ]
    )
    assert report.stream_notice(table, "t") == [
        "**Compression is the biggest win**: 8-bit quantization misses 80% of SLOs, level 2 20%.",
        "**Adaptation helps on these traces**: the paper rule misses 10%, a fixed level 2 20%.",
        "The artifact rule misses 5% against the paper rule's 10%: it reads the *current* chunk's bandwidth, a "
        "glimpse of the future the paper's rule does not have.",
    ]
    table.loc[table.policy == "level2", "violation_rate"] = 0.05
    assert "Adaptation does not help" in " ".join(report.stream_notice(table, "t"))


def test_slo_grid_contains_the_current_slo():
    grid = report.slo_grid(0.73)
    assert 0.73 in grid and grid[0] == 0.1 and grid[-1] == 5.0 and np.all(np.diff(grid) > 0)


@settings(max_examples=15)
@given(gbps=st.lists(st.floats(0.1, 10), min_size=7, max_size=7), factor=st.floats(1.0, 5.0), slo=st.floats(0.2, 3.0))
def test_more_bandwidth_never_hurts_fixed_levels_and_the_oracle_meets_whatever_they_meet(gbps, factor, slo):
    setup = real_setup(slo_s=slo)
    slow = S.Bandwidth("chunk", np.array([gbps]))
    fast = S.Bandwidth("chunk", np.array([gbps]) * factor)
    oracle = S.simulate(setup, slow, "oracle")
    for policy in ("level1", "level2", "level3", "quant8", "text"):
        assert S.simulate(setup, fast, policy).ttft[0] <= S.simulate(setup, slow, policy).ttft[0] + 1e-12
    for policy in ("level1", "level2", "level3", "text"):
        run = S.simulate(setup, slow, policy)
        if run.ttft[0] <= slo * (1 - 0.02):  # clear of the grid: 7 chunks x SLO/400
            assert oracle.met[0] and oracle.quality[0] >= run.quality[0] - 1e-9
