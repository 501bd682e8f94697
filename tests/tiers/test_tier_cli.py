"""``kvviz tiers`` and ``kvviz plan``: the JSON keys the issue lists, the same numbers as the API, and bad
sizes, prices, SLOs and options that do not apply refused in one line naming the option."""

from __future__ import annotations

import json
import re

import pytest

from kvviz.cli import main
from kvviz.common import hardware as hw
from kvviz.common.args import size_gib
from kvviz.tiers import TierConfig, replay
from kvviz.traces import load_trace

EXAMPLE = "assets/example_trace.jsonl"
BASE = [EXAMPLE, "--model", "llama-3-8b", "--gpu", "h100"]


def test_tiers_prints_the_answer_as_json(capsys):
    argv = ["tiers", *BASE, "--hbm", "2GiB", "--dram", "8GiB", "--ssd", "64GiB", "--ttft-slo", "0.5"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("accesses", "hit_ratio", "prefill_gpu_s_saved", "cost_per_hour", "cost_per_million_input_tokens"):
        assert isinstance(out[key], (int, float)), key
    assert set(out["hit_blocks"]) >= {"gpu", "dram", "ssd"}
    for key in ("ttft_s", "ttft_no_cache_s"):
        assert set(out[key]) == {"p50", "p90", "p99"}
    expected = replay(load_trace(EXAMPLE), TierConfig("llama-3-8b", "h100", hbm_gib=2, dram_gib=8, ssd_gib=64))
    assert out["hit_blocks"] == expected.hit_blocks
    assert out["ttft_s"] == pytest.approx(expected.ttft())
    assert out["accesses"] == 30384
    assert 0 <= out["ttft_slo_met"] <= 1


def test_sizes_take_units():
    assert size_gib("500GiB") == 500
    assert size_gib("2TiB") == 2048
    assert size_gib("64GB") == pytest.approx(64e9 / 2**30)
    assert size_gib("512 MiB") == 0.5
    assert size_gib("3") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dram", "lots"], "argument --dram: expected a size such as 500GiB"),
        (["--hbm=-5GiB"], "argument --hbm: expected a size"),
        (["--gpu-price", "-1"], "argument --gpu-price: must be in"),
        (["--ttft-slo", "0"], "argument --ttft-slo: must be in"),
        (["--kv-fraction", "0.8", "--hbm", "10GiB"], "--kv-fraction does not apply with --hbm"),
        (["--ssd-drives", "4"], "--ssd-drives applies to an SSD tier"),
        (["--remote-gbps", "10"], "--remote-gbps applies to a remote pool"),
        (["--ssd", "1TiB"], "give DRAM too"),
        (["--tp", "3", "--gpus", "4"], "tp (3) must divide"),
    ],
)
def test_bad_options_are_one_line_naming_them(capsys, args, message):
    assert main(["tiers", *BASE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_plan_finds_the_cheapest_mix(capsys):
    argv = ["plan", *BASE, "--hbm", "1GiB", "--target-p90-ttft", "0.75", "--dram-sizes", "0,2GiB,8GiB"]
    assert main([*argv, "--ssd-sizes", "0,32GiB", "--workers", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sizes_tried"] == 5  # DRAM 0 with an SSD is not a HiCache deployment
    assert {(r["tier"], r["share"]) for r in out["reaches"]} == {
        (t, s) for t in ("gpu", "dram", "ssd") for s in (0.8, 0.9, 0.95)
    }
    front = out["pareto_front"]
    assert [p["cost_per_hour"] for p in front] == sorted(p["cost_per_hour"] for p in front)
    assert [p["ttft_p90_s"] for p in front] == sorted((p["ttft_p90_s"] for p in front), reverse=True)
    if out["best"] is not None:
        assert out["best"]["ttft_p90_s"] <= 0.75


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target-p90-ttft", "-1"], "argument --target-p90-ttft: must be in"),
        (["--target-p90-ttft", "1", "--dram-sizes", "1GiB,x"], "argument --dram-sizes: expected a size"),
        (["--target-p90-ttft", "1", "--ray", "local", "--workers", "2"], "--workers applies to the local process pool"),
        (["--target-p90-ttft", "1", "--ray", "not an address"], "--ray"),
    ],
)
def test_plan_bad_options(capsys, args, message):
    assert main(["plan", *BASE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_cluster_of_too_many_replicas_is_refused_before_it_runs(capsys):
    """409.6M replicas: the queue's scan of every replica is counted in the work budget."""
    assert main(["tiers", *BASE, "--gpus", "4096", "--tp", "1", "--instances", "100000"]) == 2
    err = capsys.readouterr().err
    assert "over the limit" in err and "instances and GPUs" in err and err.count("\n") == 1


def test_warnings_go_to_stderr_and_into_the_json(capsys):
    """One H100 with DRAM smaller than its KV HBM, the trace's times read as microseconds: both warnings."""
    argv = ["tiers", *BASE, "--dram", "8GiB", "--time-unit", "us"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    dram, overload = out["warnings"]
    assert dram.startswith("host DRAM (8 GiB per instance) is not larger than the GPU memory for KV (")
    assert overload.startswith(f"overloaded: the trace asks for {out['offered_load']:,.2f} times the prefill")
    needed = int(re.search(r"at least ([\d,]+) instances", overload).group(1).replace(",", ""))
    assert needed == int(out["offered_load"]) + 1
    assert f"warning: {dram}\nwarning: {overload}\n" in captured.err


def test_cost_per_million_input_tokens_is_at_the_traces_own_rate(capsys):
    assert main(["tiers", *BASE, "--instances", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    trace = load_trace(EXAMPLE)
    span_h = (trace.requests["timestamp"].max() - trace.requests["timestamp"].min()) / 1000 / 3600
    per_hour = trace.requests["input_length"].sum() / span_h
    assert out["cost_per_million_input_tokens"] == pytest.approx(out["cost_per_hour"] / per_hour * 1e6, rel=1e-9)
    assert out["cost_per_million_input_tokens_fully_busy"] < out["cost_per_million_input_tokens"]


def test_a_terminal_gets_a_summary_in_words(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["tiers", *BASE, "--hbm", "2GiB", "--dram", "8GiB", "--ssd", "64GiB"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 instance(s) of 1 × h100 serving llama-3-8b: 2 GiB of GPU memory for KV, 8 GiB of DRAM")
    assert "TTFT p50 " in out and "per million input tokens at the trace's own rate" in out
    assert "Decode is not simulated." in out and "{" not in out


def test_the_mfu_is_fitted_to_one_measured_ttft():
    """8,000 tokens of Llama-3-8B in 0.25 s on one H100: the MFU whose FLOPs take that long."""
    m, g = hw.model("llama-3-8b"), hw.gpu("h100")
    flops = 2 * m.params_b * 1e9 * 8000 + 4 * m.layers * m.d_attn * 8000 * 8001 / 2
    assert hw.fit_mfu(m, g, 1, 8000, 0.25) == pytest.approx(flops / (0.25 * 989.4e12), rel=1e-12)
    args = ["tiers", *BASE, "--mfu-from-ttft", "8000:0.01"]
    assert main(args) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mfu-from-ttft", "8000"], "argument --mfu-from-ttft: expected TOKENS:SECONDS"),
        (["--mfu-from-ttft", "8000:0.01"], "more than all of it"),
        (["--mfu", "0.5", "--mfu-from-ttft", "8000:1"], "not allowed with argument"),
    ],
)
def test_bad_measured_ttfts_are_one_line(capsys, args, message):
    assert main(["tiers", *BASE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# ---- rented or bought ----------------------------------------------------------------------------


def test_bought_hardware_is_priced_as_its_purchase_over_the_years_plus_power(capsys):
    argv = ["tiers", *BASE, "--dram", "128GiB", "--prices", "buy", "--years", "4", "--electricity", "0.1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    hours = 4 * 8760
    gpu = 317_000 / 8 / hours + 10_200 / 8 / 1000 * 0.1  # the H100's sourced price and power
    dram = hw.DRAM_PURCHASE.value / hours
    assert out["deployment"]["prices"]["gpu_per_hour"] == pytest.approx(gpu)
    assert out["cost_per_hour"] == pytest.approx(gpu + 128 * 2**30 / 1e9 * dram)
    assert out["deployment"]["prices"]["basis"].startswith("bought: purchase prices over 4 years")
    assert main(["tiers", *BASE, "--dram", "128GiB", "--json"]) == 0
    rented = json.loads(capsys.readouterr().out)
    assert rented["deployment"]["prices"]["basis"] == "rented at hourly list prices"
    assert rented["cost_per_hour"] > 3 * out["cost_per_hour"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prices", "buy", "--gpu-price", "2"], "--gpu-price is an hourly rent: with --prices buy give purchase"),
        (["--gpu-cost", "30000"], "--gpu-cost applies to bought hardware: give --prices buy"),
        (["--years", "3"], "--years applies to bought hardware"),
        (["--prices", "buy", "--years", "0"], "argument --years: must be in"),
        (["--prices", "buy", "--gpu", "a40"], "no published purchase price is stored for a40 servers; give --gpu-cost"),
        (["--prices", "buy", "--gpu", "a40", "--gpu-cost", "9000"], "no published power draw is stored for a40"),
    ],
)
def test_prices_of_the_other_mode_and_unsourced_purchases_are_refused(capsys, args, message):
    argv = ["tiers", EXAMPLE, "--model", "llama-3-8b", *(["--gpu", "h100"] if "--gpu" not in args else []), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
