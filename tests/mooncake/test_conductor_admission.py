"""Algorithm 1's admission: the decode pool's TBT, rejection by TTFT or TBT SLO, and overload."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.mooncake.conductor import (
    ACCEPTED,
    REJECTED_TBT,
    REJECTED_TTFT,
    SCHEDULERS,
    ConductorConfig,
    DecodeModel,
    PrefillModel,
    compare,
    fig8_order_holds,
    schedule,
)
from kvviz.mooncake.decode_pool import DecodePool
from kvviz.traces import from_records, load_trace
from kvviz.traces.workload import WorkloadConfig, generate
from tests.mooncake.test_conductor import _requests, _trace_from

BS = 512
ONE_S_PER_BLOCK = PrefillModel(0.0, 1.0 / BS, 0.0)
EXAMPLE = "assets/example_trace.jsonl"


def _trace(times_s, n_blocks, outputs):
    """Requests with distinct blocks (no reuse), at these times, of these many blocks and output tokens."""
    ids, next_id = [], 0
    for n in n_blocks:
        ids.append(list(range(next_id, next_id + n)))
        next_id += n
    return from_records([t * 1000 for t in times_s], [n * BS for n in n_blocks], outputs, ids, block_size=BS)


def test_a_request_whose_ttft_would_miss_the_slo_is_rejected_and_takes_no_queue():
    # One instance, 2 s per request: r0 2 s, r1 4 s, r2 would be 6 s > 5 s. r3 at 5 s finds the
    # instance free at 4 s when r2 was rejected, and would queue behind r2 until 6 s otherwise.
    trace = _trace([0, 0, 0, 5], [2, 2, 2, 2], [1, 1, 1, 1])
    config = ConductorConfig(instances=1, decode_instances=1, prefill=ONE_S_PER_BLOCK, ttft_slo_s=5.0, reject=True)
    r = schedule(trace, config, "kvcentric")
    assert r.outcome.tolist() == [ACCEPTED, ACCEPTED, REJECTED_TTFT, ACCEPTED]
    assert r.ttft_s.tolist() == [2.0, 4.0, 6.0, 2.0]  # r2's is the prediction it was rejected on
    assert r.instance.tolist() == [0, 0, -1, 0]
    assert np.isnan(r.tbt_s[2])
    assert (r.mean_ttft_s, r.within_slo) == (pytest.approx(8 / 3), 3)
    admit_all = schedule(trace, replace(config, reject=False), "kvcentric")
    assert admit_all.ttft_s.tolist() == [2.0, 4.0, 6.0, 3.0]
    assert admit_all.within_slo == 3 and admit_all.over_ttft_slo == 0.25


def test_a_request_whose_tbt_would_miss_the_slo_is_rejected_while_its_decode_instance_is_full():
    # TBT(b) = 0.05 + 0.05 b: one request alone 0.1 s, two 0.15 s > 0.12 s. r0 counts on the only
    # decode instance from its admission (its prefill runs 0-1 s) to its last token (1 + 10 x 0.1 = 2 s).
    trace = _trace([0, 0.5, 2.5], [1, 1, 1], [10, 10, 10])
    config = ConductorConfig(
        instances=2,
        decode_instances=1,
        prefill=ONE_S_PER_BLOCK,
        decode=DecodeModel(0.05, 0.05, 0.0),
        tbt_slo_s=0.12,
        reject=True,
    )
    r = schedule(trace, config, "balance")
    assert r.outcome.tolist() == [ACCEPTED, REJECTED_TBT, ACCEPTED]
    assert r.predicted_tbt_s.tolist() == pytest.approx([0.1, 0.15, 0.1])
    assert r.tbt_s[[0, 2]].tolist() == pytest.approx([0.1, 0.1])
    assert r.summary()["rejected_tbt"] == 1 and r.summary()["rejected_ttft"] == 0


def test_the_decode_batch_slows_every_member_exactly():
    # TBT(b) = 0.1 + 0.1 b. r0 decodes 10 tokens from 0 s, alone (0.2 s a token) until r1 joins at
    # 1 s after 5 tokens; both then take 0.3 s a token: r1's 2 tokens end at 1.6 s, r0 has 3 left
    # at 0.2 s each: it ends at 2.2 s.
    pool = DecodePool(1, DecodeModel(0.1, 0.1, 0.0), 2)
    pool.admit(0, 0, 0.0, 1000, 10)
    pool.admit(0, 1, 1.0, 1000, 2)
    pool.drain()
    assert pool.end_s.tolist() == pytest.approx([2.2, 1.6])
    assert pool.tbt_s().tolist() == pytest.approx([0.22, 0.3])
    assert pool.peak_tbt_s == pytest.approx(0.3)


def test_the_decode_pick_weighs_kv_load_as_well_as_the_batch():
    # Instance 0 holds one 10,000-token prompt, instance 1 two of 1,000: a 5,000-token request's
    # TBT would be 0.02 + 2 x 0.001 + 15,000 x 1e-6 = 0.037 s on 0 and 0.02 + 0.003 + 0.007 = 0.030 s on 1.
    pool = DecodePool(2, DecodeModel(0.02, 0.001, 1e-6), 5)
    pool.admit(0, 0, 5.0, 10_000, 10)
    pool.admit(1, 1, 5.0, 1_000, 10)
    pool.admit(1, 2, 5.0, 1_000, 10)
    d, tbt = pool.choose(5_000)
    assert (d, tbt) == (1, pytest.approx(0.030))
    pool.admit(1, 3, 5.0, 1_000, 10)  # now 0.02 + 0.004 + 8,000 x 1e-6 = 0.032 s on 1: still below 0.037 s
    assert pool.choose(5_000) == (1, pytest.approx(0.032))
    pool.admit(1, 4, 5.0, 6_000, 10)  # 0.02 + 0.005 + 14,000 x 1e-6 = 0.039 s on 1: instance 0 wins
    assert pool.choose(5_000) == (0, pytest.approx(0.037))


def test_decode_model_of_the_cluster_is_the_paper_gpus():
    m = ConductorConfig().decode
    # 69.5 B BF16 weights over 8 x 2.039 TB/s at 80%, plus 10 ms; 327,680 KV bytes a token likewise.
    bytes_s = 8 * 2.039e12 * 0.8
    assert m.base_s == pytest.approx(0.01 + 69.503033344e9 * 2 / bytes_s)
    assert m.per_kv_token_s == pytest.approx(327_680 / bytes_s)
    assert m.per_request_s == pytest.approx(2 * 69.503033344e9 / (8 * 312e12 * 0.5))


@settings(max_examples=30)
@given(_requests, st.integers(1, 3), st.integers(1, 2), st.floats(0.3, 3.0), st.sampled_from(SCHEDULERS))
def test_admitted_requests_meet_both_slos_and_every_rejection_names_a_missed_one(reqs, p, d, slo, scheduler):
    trace = _trace_from(reqs)
    config = ConductorConfig(
        instances=p,
        decode_instances=d,
        cache_blocks=12,
        decode=DecodeModel(0.02, 0.02, 1e-6),
        ttft_slo_s=slo,
        tbt_slo_s=0.07,
        reject=True,
    )
    r = schedule(trace, config, scheduler)
    ok = r.accepted
    assert np.all(r.ttft_s[ok] <= slo)
    assert np.all(r.predicted_tbt_s[ok] <= 0.07) and r.peak_tbt_s <= 0.07 + 1e-12
    assert np.all(r.tbt_s[ok] <= 0.07 + 1e-9) and np.all(np.isnan(r.tbt_s[~ok]))
    assert np.all(r.instance[~ok] == -1) and np.all(r.prefix_blocks[~ok] == 0)
    assert np.all(r.ttft_s[r.outcome == REJECTED_TTFT] > slo)
    tbt_rejected = r.outcome == REJECTED_TBT
    assert np.all(r.ttft_s[tbt_rejected] <= slo) and np.all(r.predicted_tbt_s[tbt_rejected] > 0.07)
    assert r.within_slo == np.count_nonzero(ok)
    admit_all = schedule(trace, replace(config, reject=False), scheduler)
    assert np.all(admit_all.accepted)


def test_under_overload_the_kvcentric_conductor_rejects_and_keeps_p90_ttft_within_the_slo():
    """The bundled example at 8.6x: the prefill work, after reuse, is twice what the pool can do."""
    trace = load_trace(EXAMPLE)
    config = ConductorConfig(speedup=8.6)
    admit_all = schedule(trace, config, "kvcentric")
    assert admit_all.busy_s.sum() / (admit_all.span_s * config.instances) == pytest.approx(2.0, abs=0.02)
    assert (admit_all.p90_ttft_s, admit_all.over_ttft_slo) == (pytest.approx(60.725, abs=1e-3), 0.616)
    assert admit_all.within_slo == 768
    r = schedule(trace, ConductorConfig(speedup=8.6, reject=True), "kvcentric")
    assert (r.rejected(REJECTED_TTFT), r.rejected(REJECTED_TBT)) == (182, 0)
    assert r.p90_ttft_s == pytest.approx(29.558, abs=1e-3) and r.p90_ttft_s <= config.ttft_slo_s
    assert r.over_ttft_slo == 0.0 and r.within_slo == 1818
    assert r.goodput_rps == pytest.approx(1818 / r.span_s) and r.goodput_rps > 2.3 * admit_all.goodput_rps


def test_below_saturation_rejection_changes_nothing_and_fig8s_order_holds():
    trace = generate(WorkloadConfig(requests=600, seed=0))
    runs = compare(trace, ConductorConfig(speedup=3.0, reject=True))
    assert all(np.all(r.accepted) for r in runs.values())
    assert fig8_order_holds(runs)
    assert [round(r.mean_ttft_s, 2) for r in runs.values()] == [5.7, 2.32, 0.92, 0.74]


@pytest.mark.parametrize("field", ["ttft_slo_s", "tbt_slo_s"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_a_bad_slo_is_an_input_error_naming_it(field, value):
    with pytest.raises(InputError, match=f"field '{field}'.*SLO must be a positive number of seconds"):
        ConductorConfig(**{field: value}).validate()


def test_a_tbt_slo_below_one_decode_step_is_refused_when_rejecting():
    with pytest.raises(InputError, match=r"^the TBT SLO \(1 ms\) is shorter than one decode step .* \(21 ms\)"):
        ConductorConfig(tbt_slo_s=0.001, reject=True).validate()
    ConductorConfig(tbt_slo_s=0.001).validate()  # counted only, nothing rejected


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("--ttft-slo", "0", "argument --ttft-slo: must be in (0, 1e+12], got 0"),
        ("--ttft-slo", "-3", "argument --ttft-slo: must be in (0, 1e+12], got -3"),
        ("--tbt-slo", "nan", "argument --tbt-slo: must be a finite number in (0, 1e+12], got nan"),
    ],
)
def test_the_cli_names_a_bad_slo_on_one_line(option, value, message, capsys):
    assert main(["schedule", "--requests", "30", "--reject", f"{option}={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"kvviz schedule: {message}"


def test_the_cli_reports_rejections_and_writes_each_outcome(tmp_path, capsys):
    out = tmp_path / "per_request.csv"
    argv = ["schedule", "--trace", EXAMPLE, "--scheduler", "kvcentric", "--speedup", "8.6", "--reject"]
    assert main([*argv, "--per-request", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)["results"][0]
    assert (summary["accepted"], summary["rejected_ttft"], summary["p90_ttft_s"]) == (1818, 182, 29.558)
    rows = pd.read_csv(out)
    assert rows["outcome"].value_counts().to_dict() == {"accepted": 1818, "rejected: TTFT": 182}
