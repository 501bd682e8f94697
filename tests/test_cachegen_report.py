"""The paper-vs-simulation rows: the numbers they print are the simulation's, computed right."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import streaming as S
from kvviz.cachegen import report


def test_stream_rows_quote_table_1_and_compute_the_ratios():
    setup = S.StreamSetup()
    summary = pd.DataFrame([
        {"policy": "paper", "violation_rate": 0.1, "mean_quality": 0.99, "mean_ttft_s": 0.5, "p95_ttft_s": 1},
        {"policy": "artifact", "violation_rate": 0.05, "mean_quality": 0.99, "mean_ttft_s": 0.4, "p95_ttft_s": 1},
        {"policy": "quant8", "violation_rate": 0.8, "mean_quality": 1.0, "mean_ttft_s": 2.0, "p95_ttft_s": 4},
        {"policy": "text", "violation_rate": 1.0, "mean_quality": 1.0, "mean_ttft_s": 1.5, "p95_ttft_s": 1.5}])
    rows = {r["quantity"]: r["this simulation"] for r in report.stream_rows(setup, summary, "test traces")}
    assert next(v for k, v in rows.items() if k.startswith("KV of")) == "622 MB vs 176 MB (level 2)"
    assert rows["Size reduction vs the 8-bit quantization baseline"] == "3.5×"
    assert next(v for k, v in rows.items() if k.startswith("SLO violations")).startswith("80% → 10% (paper rule), 5%")
    assert rows["Mean TTFT, 8-bit quant ÷ CacheGen adaptive"] == "4.0× (paper rule)"
    assert rows["Mean TTFT, text recompute ÷ CacheGen adaptive"] == "3.0× (paper rule)"


def test_slo_grid_contains_the_current_slo():
    grid = report.slo_grid(0.73)
    assert 0.73 in grid and grid[0] == 0.1 and grid[-1] == 5.0 and np.all(np.diff(grid) > 0)


@settings(max_examples=15, deadline=None)
@given(gbps=st.lists(st.floats(0.1, 10), min_size=7, max_size=7), factor=st.floats(1.0, 5.0),
       slo=st.floats(0.2, 3.0))
def test_more_bandwidth_never_hurts_fixed_levels_and_the_oracle_meets_whatever_they_meet(gbps, factor, slo):
    setup = S.StreamSetup(slo_s=slo)
    slow = S.Bandwidth("chunk", np.array([gbps]))
    fast = S.Bandwidth("chunk", np.array([gbps]) * factor)
    oracle = S.simulate(setup, slow, "oracle")
    for policy in ("level1", "level2", "level3", "quant8", "text"):
        assert S.simulate(setup, fast, policy).ttft[0] <= S.simulate(setup, slow, policy).ttft[0] + 1e-12
    for policy in ("level1", "level2", "level3", "text"):
        run = S.simulate(setup, slow, policy)
        if run.ttft[0] <= slo * (1 - 0.02):            # clear of the grid: 7 chunks x SLO/400
            assert oracle.met[0] and oracle.quality[0] >= run.quality[0] - 1e-9
