"""Admission rules of kvviz.mooncake.overload on hand-built cases with known outcomes, and laws that hold."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.mooncake.conductor import PrefillModel
from kvviz.mooncake.overload import (
    COMPLETED,
    POLICIES,
    REJECTED_AFTER_PREFILL,
    REJECTED_EARLY,
    Arrivals,
    ClusterConfig,
    capacity,
    compare,
    oscillation,
    poisson_arrivals,
    simulate,
    summary_table,
    trace_arrivals,
)
from kvviz.traces import from_records

# 1 s per 1,000 prompt tokens; decode: 0.1 s per token, one request per instance.
ONE_SLOT = ClusterConfig(
    prefill_instances=1,
    decode_instances=1,
    batch_limit=1,
    ttft_slo_s=100,
    tbt_slo_s=1.0,
    tbt_base_s=0.1,
    tbt_per_request_s=0.0,
    window_s=1.0,
    prefill=PrefillModel(overhead_s=0.0, per_token_s=0.001, per_token2_s=0.0),
)


def arrivals(times, inputs, outputs) -> Arrivals:
    return Arrivals(np.asarray(times, float), np.asarray(inputs, np.int64), np.asarray(outputs, np.int64))


def totals(arr, config, policy):
    return simulate(arr, config, policy).totals


def test_baseline_wastes_the_prefill_that_early_rejection_refuses():
    # r0 decodes from t=1 to t=11; r1 (t=2) finds the only decode slot taken.
    arr = arrivals([0.0, 2.0], [1000, 1000], [100, 10])
    result = simulate(arr, ONE_SLOT, "baseline")
    assert result.outcome.tolist() == [COMPLETED, REJECTED_AFTER_PREFILL]
    assert result.finish_s[0] == pytest.approx(11.0)
    base = result.totals
    assert (base["rejected_early"], base["rejected_after_prefill"], base["completed"]) == (0, 1, 1)
    assert base["wasted_prefill_s"] == pytest.approx(1.0)
    assert simulate(arr, ONE_SLOT, "early").outcome.tolist() == [COMPLETED, REJECTED_EARLY]
    early = totals(arr, ONE_SLOT, "early")
    assert (early["rejected_early"], early["rejected_after_prefill"], early["completed"]) == (1, 0, 1)
    assert early["wasted_prefill_s"] == 0.0


def test_prediction_admits_a_request_that_early_rejection_refuses():
    # r0 decodes 1..4 s; r1 arrives at 2.5 with a 2 s prefill, so its decode starts at 4.5: free by then.
    arr = arrivals([0.0, 2.5], [1000, 2000], [30, 10])
    config = replace(ONE_SLOT, t_d_s=3.0)
    early = totals(arr, config, "early")
    assert (early["rejected_early"], early["completed"]) == (1, 1)
    for policy in ("predict", "oracle"):
        result = totals(arr, config, policy)
        assert (result["rejected"], result["completed"]) == (0, 2), policy


def test_prediction_refuses_what_early_rejection_admits_and_wastes():
    # Two prefill instances: r0 reaches decode at t=2, r1 (admitted on an empty decode pool) at 2.5.
    config = replace(ONE_SLOT, prefill_instances=2, t_d_s=10.0)
    arr = arrivals([0.0, 0.5], [2000, 2000], [100, 100])
    early = totals(arr, config, "early")
    assert (early["rejected_after_prefill"], early["wasted_prefill_s"]) == (1, pytest.approx(2.0))
    predict = totals(arr, config, "predict")
    assert (predict["rejected_early"], predict["rejected_after_prefill"], predict["completed"]) == (1, 0, 1)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_rejects_a_request_whose_ttft_would_break_the_slo(policy):
    config = replace(ONE_SLOT, ttft_slo_s=1.5, batch_limit=4)
    result = totals(arrivals([0.0, 0.0], [1000, 1000], [5, 5]), config, policy)
    assert (result["rejected_early"], result["completed"]) == (1, 1)


def test_decode_batch_slows_every_member_and_speeds_up_when_one_leaves():
    # TBT(b) = 0.1 + 0.1 b: both decode at 0.3 s/token from t=1; r0 (5 tokens) leaves at 2.5,
    # r1 then runs alone at 0.2 s/token for its last 5 tokens and leaves at 3.5.
    config = replace(ONE_SLOT, prefill_instances=2, batch_limit=4, tbt_slo_s=10.0, tbt_per_request_s=0.1, sample_s=0.5)
    result = simulate(arrivals([0.0, 0.0], [1000, 1000], [5, 10]), config, "baseline")
    assert result.outcome.tolist() == [COMPLETED, COMPLETED]
    assert result.finish_s == pytest.approx([2.5, 3.5])


def test_capacity_and_poisson_rate():
    config = ClusterConfig()
    cap = capacity(config, np.full(10, 20_000), np.full(10, 200))
    prefill_s = config.prefill.time(20_000)
    assert cap.prefill_rps == pytest.approx(6 / prefill_s)
    assert cap.decode_rps == pytest.approx(2 * 16 / (200 * config.tbt(16)))
    assert cap.bottleneck == "decode"
    arr = poisson_arrivals(config, 2.0, 1800, seed=1)
    assert len(arr.time_s) == pytest.approx(2 * 1.6 * 1800, rel=0.1)
    again = poisson_arrivals(config, 2.0, 1800, seed=1)
    assert np.array_equal(arr.time_s, again.time_s)


def test_trace_replay_speeds_up_timestamps():
    trace = from_records([1000, 3000, 5000], [100, 200, 300], [1, 2, 0], None)
    arr = trace_arrivals(trace, speedup=2.0)
    assert arr.time_s.tolist() == [0.0, 1.0, 2.0]
    assert arr.output_length.tolist() == [1, 2, 1]


@pytest.mark.parametrize(
    "bad",
    [
        dict(prefill_instances=0),
        dict(decode_instances=-1),
        dict(ttft_slo_s=0),
        dict(tbt_slo_s=-1.0),
        dict(t_d_s=0.0),
        dict(threshold=0),
    ],
)
def test_bad_configs_are_input_errors(bad):
    with pytest.raises(InputError):
        simulate(arrivals([0.0], [10], [1]), ClusterConfig(**bad), "baseline")


def test_bad_speedup_policy_and_load_are_input_errors():
    trace = from_records([0, 1000], [10, 10], [1, 1], None)
    with pytest.raises(InputError, match="speed-up"):
        trace_arrivals(trace, 0)
    with pytest.raises(InputError, match="unknown policy"):
        simulate(arrivals([0.0], [10], [1]), ClusterConfig(), "greedy")
    with pytest.raises(InputError, match="overload"):
        poisson_arrivals(ClusterConfig(), 0, 60, 0)
    with pytest.raises(InputError, match="at most"):
        poisson_arrivals(ClusterConfig(), 1000, 7 * 24 * 3600, 0)


def test_oscillation_of_a_known_sine():
    t = np.arange(0, 2000, 1.0)
    pre = 0.5 + 0.3 * np.sin(2 * np.pi * t / 50)
    osc = oscillation(pd.DataFrame({"time_s": t, "prefill_load": pre, "decode_load": 1 - pre}), warmup_share=0)
    assert osc["period_s"] == pytest.approx(50, rel=0.02)
    assert osc["amplitude"] == pytest.approx(0.3, rel=0.02)
    assert osc["anti_phase_corr"] == pytest.approx(-1.0)
    assert osc["anti_phase_lag_s"] == 0.0
    # decode trailing prefill by 5 s: the strongest anti-phase is found at that lag
    late = pd.DataFrame({"time_s": t, "prefill_load": pre, "decode_load": 1 - np.roll(pre, 5)})
    osc = oscillation(late, warmup_share=0)
    assert (osc["anti_phase_corr"], osc["anti_phase_lag_s"]) == (pytest.approx(-1.0, abs=1e-6), -5.0)


def test_default_cluster_reproduces_the_lecture_notes_direction():
    """Early rejection wastes less prefill than baseline and swings prefill load harder;
    prediction damps the swing (lecture 9 §2.5, code 04 demo 2)."""
    config = ClusterConfig()
    runs = compare(
        lambda s: poisson_arrivals(config, 2.0, 1200, s), config, ("baseline", "early", "predict"), seeds=(0, 1)
    )
    table = summary_table(runs).set_index("policy")
    assert table.loc["early", "wasted_prefill_s"] < table.loc["baseline", "wasted_prefill_s"]
    assert table.loc["predict", "wasted_prefill_s"] < table.loc["early", "wasted_prefill_s"]
    assert table.loc["early", "prefill_load_std"] > 2 * table.loc["baseline", "prefill_load_std"]
    assert table.loc["predict", "prefill_load_std"] < table.loc["early", "prefill_load_std"]


@settings(max_examples=25)
@given(
    st.lists(st.tuples(st.floats(0, 60), st.integers(1, 5000), st.integers(1, 300)), min_size=1, max_size=40),
    st.sampled_from(POLICIES),
    st.integers(1, 3),
    st.integers(1, 4),
)
def test_every_request_is_accounted_for_and_admitted_ttft_meets_the_slo(reqs, policy, p, batch):
    reqs.sort()
    arr = arrivals([r[0] for r in reqs], [r[1] for r in reqs], [r[2] for r in reqs])
    config = ClusterConfig(
        prefill_instances=p,
        decode_instances=1,
        batch_limit=batch,
        ttft_slo_s=5.0,
        tbt_slo_s=0.5,
        tbt_base_s=0.01,
        tbt_per_request_s=0.01,
        prefill=PrefillModel(0.0, 0.001, 0.0),
    )
    result = simulate(arr, config, policy)
    t = result.totals
    assert t["arrived"] == len(reqs) == t["completed"] + t["rejected_early"] + t["rejected_after_prefill"]
    assert t["mean_ttft_s"] <= config.ttft_slo_s + 1e-9
    assert (result.loads["decode_load"] <= 1 + 1e-9).all()
    assert t["wasted_prefill_s"] <= t["prefill_busy_s"] + 1e-9
    if policy == "baseline":
        assert t["rejected_after_prefill"] == 0 or batch < len(reqs)


def test_a_decode_pool_that_cannot_meet_the_tbt_slo_is_refused():
    with pytest.raises(InputError, match="TBT SLO"):
        ClusterConfig(tbt_slo_s=0.02).validate()


def test_cli_overload_prints_json_and_writes_the_timeline(capsys, tmp_path):
    import json

    from kvviz.cli import main

    out = tmp_path / "timeline.csv"
    assert main(["overload", "--policy", "early", "--duration", "120", "--seed", "3", "--timeline", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    (result,) = summary["results"]
    assert result["policy"] == "early"
    assert result["arrived"] == result["completed"] + result["rejected"]
    timeline = pd.read_csv(out)
    assert timeline["arrived"].sum() == result["arrived"]
    assert main(["overload", "--prefill", "0"]) == 2
    assert "prefill" in capsys.readouterr().err
    assert main(["overload", "--prefill", "5000", "--decode", "5000", "--duration", "60"]) == 2
    err = capsys.readouterr().err
    assert "over the limit" in err and "reduce the duration" in err and len(err.strip().splitlines()) == 1


def test_cli_schedule_on_the_example_trace(capsys):
    import json

    from kvviz.cli import main

    assert main(["schedule", "--trace", "assets/example_trace.jsonl", "--scheduler", "kvcentric"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["scheduler"] == "kvcentric" and result["requests"] > 0


def test_two_requests_thirty_days_apart_finish_within_a_second():
    """A float tolerance that vanishes at large times once stalled the decode loop forever; and one
    load sample per second of span allocated gigabytes. Both are bounded now."""
    import time

    from kvviz.mooncake.overload import MAX_SAMPLES, MAX_WINDOWS

    trace = from_records([0, 2_592_000_000], [8000, 8000], [100, 100], None)
    arr = trace_arrivals(trace, 2.0)
    start = time.process_time()
    for policy in POLICIES:
        result = simulate(arr, ClusterConfig(), policy)
        assert result.outcome.tolist() == [COMPLETED, COMPLETED], policy
        assert len(result.loads) <= MAX_SAMPLES + 1 and len(result.timeline) <= MAX_WINDOWS + 1
        assert result.totals["sample_s"] > 1.0 and result.totals["window_s"] > 10.0
    assert time.process_time() - start < 1.0


def test_a_tiny_date_time_csv_spanning_centuries_runs_or_says_why():
    from kvviz.common.errors import InputError
    from kvviz.traces import load_trace

    csv = b"TIMESTAMP,ContextTokens,GeneratedTokens\n1700-01-01 00:00:00,100,10\n2200-01-01 00:00:00,100,10\n"
    try:
        arr = trace_arrivals(load_trace(csv, name="t.csv"), 2.0)
    except InputError as exc:
        assert "ten years" in str(exc) or "TIMESTAMP" in str(exc)
        return
    assert simulate(arr, ClusterConfig(), "oracle").totals["completed"] == 2


def test_the_work_budget_refuses_before_running_and_names_the_knob():
    from kvviz.common import budget
    from kvviz.common.errors import InputError
    from kvviz.mooncake.overload import cost

    config = ClusterConfig()
    small = cost(1000, 600, config)
    assert not budget.needs_confirmation(small)
    assert budget.needs_confirmation(cost(23_000, 3600, config, runs=20))  # 60 min x load 4 x 5 seeds
    with pytest.raises(InputError, match="reduce the duration"):
        budget.check(cost(500_000, 7 * 24 * 3600, config, runs=40))
    # the estimate counts samples too: a span of years costs at most MAX_SAMPLES of them
    assert cost(2, 1e10, config).seconds < 1.0
