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
