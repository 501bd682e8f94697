"""Adaptive streaming: the policies' rules on hand-made traces with known answers, the bandwidth
sources, validation, and the oracle as a bound."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cachegen import streaming as S
from kvviz.common import hardware
from kvviz.common.errors import InputError
from tests.cachegen.cachegen_setup import real_setup

# Two 1,000-token chunks, 1 value per token: a level's size in bits is bits_per_value * 1,000.
LEVELS = (S.Level("level1", 1e6, 0.90), S.Level("level2", 2e6, 0.95), S.Level("level3", 4e6, 0.99))
TOY = S.StreamSetup(
    context_tokens=2000,
    chunk_tokens=1000,
    slo_s=1.0,
    levels=LEVELS,
    quant8=S.Level("quant8", 8e6, 1.0),
    values_per_token=1,
    recompute="fixed",
    fixed_recompute_s=0.45,
    initial_gbps=10.0,
)
# Chunk sizes: level1 1 Gb, level2 2 Gb, level3 4 Gb, quant8 8 Gb, text 32 kb (4 bytes a token) + 0.45 s.


def chunk_bw(*rows):
    return S.Bandwidth("chunk", np.array(rows, float))


def configs(run, trace=0):
    return [TOY.config_names[c] for c in run.config[trace]]


def test_chunks_sizes_and_recompute_come_from_the_hardware_model():
    setup = real_setup()
    assert setup.tokens.tolist() == [1500] * 6 + [500]
    assert setup.kv_values == 65_536  # 2 x 32 layers x 8 KV heads x 128
    quant8 = dict(zip(setup.config_names, setup.bits()[0] / 8))["quant8"]
    assert quant8 / 1500 * 9490 / 1e6 == pytest.approx(622, rel=0.01)  # Table 1's 622 MB, measured
    # kvviz.common.hardware's prefill model: Mistral-7B's 7.11e9 matmul parameters on an A40 at MFU 0.735.
    m = hardware.model("mistral-7b")
    flops = 2 * m.params_b * 1e9 * 9600 + 4 * m.layers * m.d_attn * 9600 * 9601 / 2
    assert S.prefill_seconds(9600) == pytest.approx(flops / (149.7e12 * 0.735))
    assert S.prefill_seconds(9600) == pytest.approx(1.51, rel=0.05)  # lecture 9 exercise 3
    # Recomputing later chunks costs more: they attend over a longer prefix.
    assert np.all(np.diff(setup.recompute_s()[:-1]) > 0)


def test_levels_are_measured_and_ordered():
    setup = real_setup()
    bits = [lv.bits_per_value for lv in setup.levels]
    assert bits == sorted(bits) and 1.5 < bits[0] and bits[-1] < 8  # finer levels cost more bits
    kl = [lv.kl for lv in setup.levels]
    assert kl[0] > kl[1] > kl[2] > 0  # and lose less
    assert (setup.utility[:, setup.text_index] == 0.0).all()  # text is lossless
    assert (setup.utility[:, : len(kl)] < 0).all()  # every level loses a little


def test_artifact_rule_uses_the_current_chunk_and_a_fixed_budget():
    # Budget 0.5 s per chunk. Chunk 0 at 10 Gb/s: level3 takes 0.4 s, fits. Chunk 1 at 1 Gb/s:
    # level1 takes 1 s, nothing fits, so text (0.45 s), whatever time is left.
    run = S.simulate(TOY, chunk_bw([10, 1]), "artifact")
    assert configs(run) == ["level3", "text"]
    assert run.end[0].tolist() == pytest.approx([0.4, 0.4 + 32e3 / 1e9 + 0.45])
    assert run.estimate_gbps[0].tolist() == [10, 1]
    # At 5 Gb/s level3 needs 0.8 s > 0.5; level2 needs 0.4 s: the best level that fits.
    assert configs(S.simulate(TOY, chunk_bw([5, 5]), "artifact")) == ["level2", "level2"]


def test_paper_rule_estimates_from_the_previous_chunk():
    # Chunk 0: estimate 10 Gb/s (the prior), budget 0.5 s: level3 (0.4 s) fits but text
    # (0.45 s, no loss) fits too and loses nothing, so text. Chunk 0's transfer sees 1 Gb/s.
    run = S.simulate(TOY, chunk_bw([1, 10]), "paper")
    # Chunk 1: estimate = chunk 0's measured throughput (1 Gb/s) although chunk 1 will see 10;
    # remaining 0.55 s: level1 would need 1 s, text 0.45 s fits: text again.
    assert configs(run) == ["text", "text"]
    assert run.estimate_gbps[0].tolist() == [10, 1]
    assert run.seen_gbps[0].tolist() == pytest.approx([1, 10])


def test_paper_rule_reacts_one_chunk_late():
    setup = replace(TOY, fixed_recompute_s=5.0)  # text never fits
    run = S.simulate(setup, chunk_bw([10, 1]), "paper")
    # Chunk 0 at the prior 10 Gb/s: budget 0.5 s, level3 0.4 s. Chunk 1 still estimates 10 Gb/s
    # (what chunk 0 saw), remaining 0.6 s, picks level3 again, and pays 4 s at the real 1 Gb/s.
    assert configs(run) == ["level3", "level3"]
    assert run.ttft[0] == pytest.approx(4.4)
    assert not run.met[0]
    assert configs(S.simulate(setup, chunk_bw([10, 1]), "artifact")) == ["level3", "text"]


def test_paper_budget_is_the_remaining_slo_shared_by_remaining_tokens():
    setup = replace(TOY, fixed_recompute_s=5.0, slo_s=1.2)
    # Chunk 0: budget 0.6 s at 10 Gb/s: level3 (0.4). Chunk 1: remaining 0.8 s, all of it: level3.
    assert configs(S.simulate(setup, chunk_bw([10, 10]), "paper")) == ["level3", "level3"]
    tight = replace(setup, slo_s=0.5)
    # Chunk 0: budget 0.25 s: level2 (0.2 s). Chunk 1: remaining 0.3 s: level2 again.
    assert configs(S.simulate(tight, chunk_bw([10, 10]), "paper")) == ["level2", "level2"]


def test_fixed_policies_and_ttft():
    bw = chunk_bw([2, 4])
    assert S.simulate(TOY, bw, "level2").ttft[0] == pytest.approx(1.0 + 0.5)
    assert S.simulate(TOY, bw, "quant8").ttft[0] == pytest.approx(4 + 2)
    text = S.simulate(TOY, bw, "text")
    assert text.ttft[0] == pytest.approx(0.9 + 32e3 / 2e9 + 32e3 / 4e9)
    assert text.quality[0] == 1.0


def test_oracle_finds_the_best_plan_that_meets_the_slo():
    # 10 then 2 Gb/s, SLO 1 s, text costs 0.7 s. Chunk 0 takes 0.1/0.2/0.4 s at levels 1/2/3,
    # chunk 1 0.5/1/2 s; text+text 1.4 s and level3+text 1.1 s miss; of the plans that fit,
    # level2 (0.2 s) + text (0.7 s) has the best quality, (0.95 + 1) / 2.
    setup = replace(TOY, fixed_recompute_s=0.7)
    run = S.simulate(setup, chunk_bw([10, 2]), "oracle")
    assert configs(run) == ["level2", "text"]
    assert run.met[0] and run.quality[0] == pytest.approx((0.95 + 1.0) / 2)
    # With text at 0.45 s, text + text (0.9 s, lossless) beats everything.
    assert configs(S.simulate(TOY, chunk_bw([10, 2]), "oracle")) == ["text", "text"]
    # Nothing meets 0.05 s: the oracle sends everything as fast as it can.
    fast = S.simulate(replace(setup, slo_s=0.05), chunk_bw([10, 2]), "oracle")
    assert configs(fast) == ["level1", "level1"] and not fast.met[0]


def test_oracle_bounds_the_other_policies():
    setup = real_setup()
    bw = S.persistent_traces(400, setup.n_chunks, 0.8, seed=3)
    oracle = S.simulate(setup, bw, "oracle")
    for policy in ("paper", "artifact", "level1", "level2", "level3", "text"):
        other = S.simulate(setup, bw, policy)
        assert np.mean(other.met & ~oracle.met) <= 0.01, policy
        both = other.met & oracle.met
        if both.any():
            assert np.mean(oracle.quality[both] < other.quality[both] - 1e-9) <= 0.01, policy


def test_vectorised_runs_equal_one_trace_at_a_time():
    setup = real_setup()
    bw = S.persistent_traces(5, setup.n_chunks, 0.9, seed=7)
    for policy in S.policy_names(setup):
        together = S.simulate(setup, bw, policy)
        for k in range(5):
            alone = S.simulate(setup, S.Bandwidth("chunk", bw.gbps[k : k + 1]), policy)
            assert alone.config[0].tolist() == together.config[k].tolist(), policy
            assert alone.ttft[0] == pytest.approx(together.ttft[k]), policy


def test_timed_trace_integrates_the_bandwidth():
    bw = S.step_trace()  # 10 Gb/s to 0.3 s, 1 to 3 s, then 5
    assert bw.finish(0, np.array([0.0]), np.array([4e9]))[0] == pytest.approx(1.3)
    assert bw.finish(0, np.array([2.5]), np.array([3e9]))[0] == pytest.approx(3.0 + 2.5 / 5)
    assert bw.at(0, np.array([0.31]))[0] == 1.0


def test_paper_rule_ranks_a_confident_models_tiny_kl_before_the_delay():
    # Every level answers as full precision does; only the KL, far below 1e-12 nats, tells them apart.
    tiny = tuple(replace(lv, quality=1.0, kl=kl) for lv, kl in zip(LEVELS, (3e-14, 2e-14, 1e-14)))
    setup = replace(TOY, levels=tiny, fixed_recompute_s=5.0)  # text never fits
    # Budget 0.5 s at 10 Gb/s: level1 (0.1 s), level2 (0.2 s) and level3 (0.4 s) fit; the least KL wins.
    assert configs(S.simulate(setup, chunk_bw([10, 10]), "paper")) == ["level3", "level3"]
    # Text (0.45 s) fits too and loses nothing: it wins over level3's 1e-14 nats, although slower.
    lossless = replace(setup, fixed_recompute_s=0.45)
    assert configs(S.simulate(lossless, chunk_bw([10, 10]), "paper")) == ["text", "text"]
    # The oracle sums the same ranking over chunks: level3 twice (0.8 s) meets the SLO and loses least.
    assert configs(S.simulate(setup, chunk_bw([10, 10]), "oracle")) == ["level3", "level3"]


def test_paper_rule_falls_back_to_text_when_only_text_fits():
    # SLO 2 s at 0.5 Gb/s: a chunk's share of the SLO is at most 0.33 s (chunk 0: 2 s x 1,500 / 9,500);
    # level1 alone needs 0.5 s, so no level fits, and text (its recompute, 0.09-0.25 s) always does.
    setup = real_setup(slo_s=2.0, initial_gbps=0.5)
    bits, recompute = setup.bits(), setup.recompute_s()
    assert (bits[:, 0] / 0.5e9 > 2.0 * setup.tokens / setup.context_tokens).all()  # level1 never fits
    run = S.simulate(setup, chunk_bw([0.5] * setup.n_chunks), "paper")
    assert [setup.config_names[c] for c in run.config[0]] == ["text"] * setup.n_chunks
    assert run.ttft[0] == pytest.approx(recompute.sum() + bits[:, -1].sum() / 0.5e9)
    assert run.met[0]


def test_step_trace_paper_rule_moves_to_text_before_the_drop():
    setup = real_setup(slo_s=1.0)
    run = S.simulate(setup, S.step_trace(), "paper")
    table = S.timeline(setup, run)
    # Chunks 0-2 at 10 Gb/s: text's recompute exceeds their share of the SLO, so the best level.
    assert (table["config"].iloc[:3] == "level3").all()
    # From chunk 3 the remaining SLO per token covers the recompute: text, lossless, wins over level3
    # and carries the stream through the drop to 1 Gb/s at 0.3 s.
    assert (table["config"].iloc[3:] == "text").all()
    assert table["start_s"].iloc[3] < 0.3 < table["end_s"].iloc[3]
    assert run.met[0] and run.ttft[0] == pytest.approx(0.924, abs=5e-4)


def test_random_traces_share_the_artifacts_marginal():
    iid = S.iid_traces(4000, 10, seed=1)
    assert iid.gbps.min() >= 0.1 and iid.gbps.max() <= 10
    assert iid.gbps.mean() == pytest.approx(5.05, abs=0.05)
    lag1 = lambda g: np.corrcoef(g[:, :-1].ravel(), g[:, 1:].ravel())[0, 1]  # noqa: E731
    assert abs(lag1(iid.gbps)) < 0.03
    persistent = S.persistent_traces(4000, 10, 0.9, seed=1)
    assert persistent.gbps.mean() == pytest.approx(5.05, abs=0.15)
    assert lag1(persistent.gbps) > 0.8


def test_slo_sweep_is_monotone_for_fixed_policies():
    setup = real_setup()
    bw = S.iid_traces(300, setup.n_chunks, seed=2)
    sweep = S.slo_sweep(setup, bw, np.array([0.3, 0.6, 1.2, 2.4]))
    for policy in ("level1", "level2", "quant8", "text", "oracle"):
        rates = sweep[sweep.policy == policy]["violation_rate"].to_numpy()
        assert np.all(np.diff(rates) <= 1e-12), policy


@pytest.mark.parametrize(
    "text, message",
    [
        (b"", "no data rows"),
        (b"time_s,gbps\n", "no data rows"),
        (b"0,5\n1,-2\n", "line 2, field 'gbps': must be in [0.001, 10000], got -2"),
        (b"0,5\n1,fast\n", "line 2, field 'gbps': expected a number in [0.001, 10000], got 'fast'"),
        (b"0,5\nsoon,3\n", "line 2, field 'time_s': expected a number in [0, 86400], got 'soon'"),
        (b"0,5\n2,4\n1,3\n", "line 3, field 'time_s': times must increase"),
        (b"0,5\n0,4\n", "times must increase"),
        (b"0\n", "line 1: expected two columns"),
        (b"0,5,7\n", "line 1: expected two columns, time_s and gbps; got 3"),
        (b"0,inf\n", "line 1, field 'gbps': must be a finite number in [0.001, 10000], got inf"),
        (b"0,nan\n", "line 1, field 'gbps': must be a finite number in [0.001, 10000], got nan"),
        (b"0,1e-300\n", "line 1, field 'gbps': must be in [0.001, 10000], got 1e-300"),
        (b"0,5\n1,1e308\n", "line 2, field 'gbps': must be in [0.001, 10000], got 1e308"),
        (b"1e400,5\n", "line 1, field 'time_s': must be a finite number in [0, 86400], got 1e400"),
        (b"0,5\n1e6,5\n", "line 2, field 'time_s': must be in [0, 86400], got 1e6"),
        (b"0,5\n1," + b"1" * 200_000 + b"\n", "line 2: the line is 200,002 characters long"),
        (b"0,5\n" + b"x" * 300 + b"\n", "line 2: the line is 300 characters"),
        (b"0,5\n1," + b"x" * 100 + b"\n", "got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (100 characters)'"),
        (b"\xff\xfe\x00", "UTF-8"),
        (b"0,1\n" * 2 + b"", "times must increase"),
    ],
)
def test_bad_bandwidth_csv(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        S.load_bandwidth_csv(text)


def test_bandwidth_csv_row_cap_and_size_cap():
    rows = "".join(f"{i / 10:g},5\n" for i in range(S.MAX_CSV_ROWS + 1)).encode()
    with pytest.raises(InputError, match=f"line {S.MAX_CSV_ROWS + 1}: more than 100,000 rows"):
        S.load_bandwidth_csv(rows)
    with pytest.raises(InputError, match="larger than 1 MiB"):
        S.load_bandwidth_csv(b"0,5\n" * 300_000)


@settings(max_examples=60)
@given(
    st.binary(max_size=300)
    | st.lists(st.tuples(st.floats(allow_nan=True), st.floats(allow_nan=True)), max_size=6).map(
        lambda rows: "".join(f"{t},{b}\n" for t, b in rows).encode()
    )
)
def test_any_bandwidth_file_loads_and_streams_or_is_one_input_error(data):
    try:
        bw = S.load_bandwidth_csv(data)
    except InputError:
        return
    run = S.simulate(TOY, bw, "oracle")
    assert np.isfinite(run.ttft).all() and (run.ttft > 0).all()


def test_good_bandwidth_csv():
    bw = S.load_bandwidth_csv(b"time_s,gbps\n# comment\n0.5,10\n1.0,2\n\n")
    assert bw.kind == "timed" and bw.times[0].tolist() == [0.0, 0.5] and bw.gbps[0].tolist() == [10, 2]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"slo_s": 0}, "SLO must be > 0"),
        ({"slo_s": -1}, "SLO must be > 0"),
        ({"chunk_tokens": 20_000}, "larger than the context"),
        ({"context_tokens": 0}, "at least 1 token"),
        ({"recompute": "gpu"}, "recompute"),
    ],
)
def test_bad_setup(change, message):
    with pytest.raises(InputError, match=message):
        S.simulate(real_setup(**change), S.iid_traces(2, 7), "paper")


def test_unknown_policy_and_short_trace():
    with pytest.raises(InputError, match="unknown policy"):
        S.simulate(real_setup(), S.iid_traces(2, 7), "magic")
    with pytest.raises(InputError, match="chunk values"):
        S.simulate(real_setup(), S.iid_traces(2, 3), "paper")


def test_by_mean_bandwidth_groups_traces_and_low_bandwidth_fails_more():
    setup = real_setup()
    bw = S.persistent_traces(800, setup.n_chunks, 0.9, seed=5)
    runs = S.run_all(setup, bw, ("level2", "quant8"))
    table = S.by_mean_bandwidth(runs, bw, bins=4)
    assert (table.groupby("policy").traces.sum() == 800).all()
    level2 = table[table.policy == "level2"].sort_values("mean_gbps")
    assert level2.violation_rate.iloc[0] > level2.violation_rate.iloc[-1]
    assert level2.violation_rate.iloc[-1] == 0.0


def test_persistence_helps_the_paper_rule_and_not_the_artifact_rule():
    # Lecture 9 §3.4 / lecture 27 §4.2: the previous chunk predicts the next only when bandwidth persists.
    setup = real_setup()
    sweep = S.persistence_sweep(setup, 1500, seed=1, persistences=(0.0, 0.99))
    rate = sweep.set_index(["policy", "persistence"]).violation_rate
    assert rate["paper", 0.99] < rate["paper", 0.0] - 0.05
    assert rate["paper", 0.0] > rate["level2", 0.0]  # i.i.d.: chasing noise loses to a fixed level
    assert rate["artifact", 0.0] < rate["artifact", 0.99]  # it reads the current chunk: i.i.d. is easy
