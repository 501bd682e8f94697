"""``hitcurve --cache vllm``: vLLM's curve as CSV, in GiB with --model, and the options that do not apply refused."""

from __future__ import annotations

import pytest

from kvviz.cli import main

EXAMPLE = "assets/example_trace.jsonl"


def test_vllm_curve_is_the_pool_replay(capsys):
    assert main(["hitcurve", EXAMPLE, "--cache", "vllm", "--capacities", "100,300,1000,3000,inf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "policy,capacity,hits,accesses,hit_ratio"
    rows = [line.split(",") for line in lines[1:]]
    assert [r[0] for r in rows] == ["vllm"] * 5
    assert [int(r[2]) for r in rows] == [2714, 5202, 8231, 11059, 13221]
    assert {r[3] for r in rows} == {"30384"}


def test_vllm_with_a_model_adds_gib(capsys):
    assert main(["hitcurve", EXAMPLE, "--cache", "vllm", "--capacities", "100", "--model", "llama-3-8b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",capacity_gib") and lines[1].split(",")[-1] == "6.2500"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "0.1"], "vLLM's block pool replays exactly"),
        (["--prefix"], "--prefix applies to --cache block; every hit of vLLM's block pool is a prefix hit"),
        (["--policies", "lru"], "--policies does not apply to --cache vllm"),
        (["--capacities", "-3"], "capacity '-3'"),
    ],
)
def test_what_does_not_apply_is_refused_in_one_line(capsys, args, message):
    assert main(["hitcurve", EXAMPLE, "--cache", "vllm", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
