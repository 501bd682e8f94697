"""A Ray address nothing answers at ends in one line within the stated time-out, without Ray's own log:
an unknown host, and an address no route reaches (the time-out lowered here, so the test waits for it
and not for the 30 s a user's run would)."""

from __future__ import annotations

import pytest

from kvviz.cli import main
from kvviz.tiers import pool

pytest.importorskip("ray")
GRID = ["plan", "assets/example_trace.jsonl", "--model", "llama-3-8b", "--gpu", "h100", "--target-p90-ttft", "1"]
GRID += ["--dram-sizes", "0,1GiB"]


@pytest.mark.parametrize(
    "address",
    [
        "no-such-host.invalid:6379",  # .invalid never resolves (RFC 2606)
        "192.0.2.1:6379",  # TEST-NET-1 (RFC 5737): routed nowhere, so no answer or no route
    ],
)
def test_an_address_nothing_answers_at_is_one_line_within_the_time_out(address, monkeypatch, capsys):
    monkeypatch.setattr(pool, "CONNECT_TIMEOUT_S", 1.0)
    assert main([*GRID, "--ray", address]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"kvviz plan: field 'ray': cannot reach the Ray cluster at '{address}' within 1 s: "), err
