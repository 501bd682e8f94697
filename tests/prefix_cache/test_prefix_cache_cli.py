"""``hitcurve --cache prefix`` and ``--model``: the prefix curve as CSV, capacity in GiB, one-line errors."""

from __future__ import annotations

import pytest

from kvviz.cli import main
from kvviz.prefix_cache import prepare, request_hits
from kvviz.traces import load_trace

EXAMPLE = "assets/example_trace.jsonl"


def test_prefix_cache_curve_with_all_six_policies_by_default(capsys):
    assert main(["hitcurve", EXAMPLE, "--cache", "prefix", "--capacities", "300,inf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "policy,capacity,hits,accesses,hit_ratio"
    assert [line.split(",")[0] for line in lines[1::2]] == ["lru", "lfu", "fifo", "mru", "filo", "slru"]
    replay = prepare(load_trace(EXAMPLE))
    assert int(lines[1].split(",")[2]) == request_hits(replay, "lru", 300).sum()
    assert int(lines[2].split(",")[2]) == replay.seen_before.sum()


def test_model_adds_the_capacity_in_gib(capsys):
    main(
        [
            "hitcurve",
            EXAMPLE,
            "--cache",
            "prefix",
            "--policies",
            "lru",
            "--capacities",
            "100,inf",
            "--model",
            "llama-3-8b",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",capacity_gib")
    assert lines[1].split(",")[-1] == "6.2500"  # 100 blocks x 512 tokens x 128 KiB
    assert lines[2].split(",")[-1] == "inf"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cache", "prefix", "--policies", "arc"], "unknown prefix-cache policy 'arc'"),
        (["--model", "gpt-9"], "unknown model 'gpt-9'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, args, message):
    assert main(["hitcurve", EXAMPLE, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
