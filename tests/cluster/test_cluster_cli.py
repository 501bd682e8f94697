"""``kvviz cluster``: one CSV row per router and the reference; bad input gets one line and exit 2."""

from __future__ import annotations

import io

import pandas as pd

from kvviz.cli import main
from kvviz.cluster import REFERENCE, ROUTERS, SUMMARY_COLUMNS
from kvviz.cluster.routers import MAX_INSTANCES
from kvviz.commands import cluster as command

EXAMPLE = "assets/example_trace.jsonl"


def test_a_row_per_router_and_the_reference(capsys):
    assert main(["cluster", EXAMPLE, "--instances", "2", "--blocks", "200", "--router", "round-robin,kv-aware"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table.columns) == list(SUMMARY_COLUMNS)
    assert table["router"].tolist() == ["round-robin", "kv-aware", REFERENCE]
    assert table["hits"].iloc[0] <= table["hits"].iloc[-1]  # round-robin never beats one cache of all the blocks


def test_bad_input_is_one_line(capsys):
    assert main(["cluster", EXAMPLE, "--router", "random"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown router 'random'" in err[0]
    assert main(["cluster", EXAMPLE, "--instances", "64"]) == 2
    assert "must be in 1..63" in capsys.readouterr().err


def test_the_command_names_the_routers_and_limit_of_the_package():
    assert command.ROUTER_NAMES.split(",") == list(ROUTERS) and command.MAX_INSTANCES == MAX_INSTANCES


def test_several_instance_counts_and_the_cheapest_that_meets_a_target(capsys):
    argv = ["cluster", EXAMPLE, "--instances", "1,2,1", "--blocks", "200", "--router", "round-robin,least-load"]
    assert main([*argv, "--target-p90-ttft", "1000"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table["instances"].tolist() == [1, 1, 1, 2, 2, 2]
    assert list(table.columns[-2:]) == ["meets_target", "cheapest"]
    assert not table.loc[table["router"] == REFERENCE, "meets_target"].any()
    cheapest = table[table["cheapest"]]
    assert len(cheapest) == 1 and cheapest["instances"].iloc[0] == 1  # every run meets 1000 s: one GPU is cheapest
    assert cheapest["hits"].iloc[0] == table.loc[table["meets_target"] & (table["instances"] == 1), "hits"].max()


def test_a_target_nobody_meets_marks_no_row():
    from kvviz.cluster import ClusterConfig, compare
    from kvviz.traces import load_trace

    table = compare(load_trace(EXAMPLE).head(50), ["round-robin"], ClusterConfig(2, 100), target_p90_s=1e-9)
    assert not table["meets_target"].any() and not table["cheapest"].any()
