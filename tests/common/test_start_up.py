"""``make run``'s start: the kernels compiled before the server, and the server's port read from its options."""

from __future__ import annotations

import pytest

from kvviz import precompile
from ui.kit.serve import port_of


@pytest.mark.parametrize(
    ("options", "port"),
    [
        ([], "8501"),
        (["--server.headless", "true"], "8501"),
        (["--server.headless", "true", "--server.port", "9000"], "9000"),
        (["--server.port=9001", "--server.headless", "true"], "9001"),
    ],
)
def test_the_ready_line_names_the_port_the_server_was_given(options, port):
    assert port_of(options) == port


def test_the_start_up_compiles_through_commands_that_exist():
    """Each command the start-up runs is a kvviz command taking a trace, in two groups (two processes)."""
    from kvviz.cli import build_parser

    assert len(precompile.COMMANDS) == 2
    for group in precompile.COMMANDS:
        for argv in group:
            assert "@" in argv
            build_parser(argv).parse_args(["trace.jsonl" if a == "@" else a for a in argv])


def test_the_start_up_says_what_it_did(monkeypatch):
    """A cache that gained kernels means a compile; one that did not, only loading."""
    counts = iter([0, 40])
    monkeypatch.setattr(precompile, "cached_kernels", lambda: next(counts))
    monkeypatch.setattr(precompile, "compile_all", lambda in_process: None)
    said = []
    monkeypatch.setattr(precompile, "say", said.append)
    seconds, compiled = precompile.compile_with_progress()
    assert compiled and seconds >= 0
    assert said == [
        f"kvviz: compiling the simulators once for this checkout ({precompile.FRESH_ESTIMATE}; later starts reuse them)"
    ]


@pytest.mark.parametrize("limit", ["lots", "0.3"])
def test_a_memory_limit_that_leaves_no_room_stops_the_start_in_one_line(limit):
    """An operator's limit that is not a number, or too low for even the tiny compile trace, ends the
    start with one line naming it, before the server starts, never with a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "KVVIZ_MEMORY_GIB": limit, "HOME": str(root)}
    run = subprocess.run(
        [sys.executable, "-m", "ui.kit.serve", "--server.headless", "true", "--server.port", "8798"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 2 and "Traceback" not in run.stdout + run.stderr
    assert lines[-1].startswith("kvviz: cannot start: ") and "memory" in lines[-1].lower()
