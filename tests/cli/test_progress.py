"""The progress line of long commands: drawn on a terminal's stderr only, counting up, erased at the end."""

from __future__ import annotations

import io
import json
import re
import sys
import time

import pytest

from kvviz.cli import main
from kvviz.common import progress as P
from kvviz.common.progress import Progress

EXAMPLE = "assets/example_trace.jsonl"
TIERS = [EXAMPLE, "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "2GiB"]


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def screen(text: str) -> str:
    """What a terminal shows after ``text``: each ``\\r`` returns to its row's start and overwrites."""
    shown = []
    for row in text.split("\n"):
        cells: list[str] = []
        for part in row.split("\r"):
            cells[: len(part)] = part
        shown.append("".join(cells).rstrip())
    return "\n".join(shown).strip()


def drawn(text: str) -> list[str]:
    """Each line drawn, in order (the text between returns), without the erasing blanks."""
    return [part.strip() for part in text.split("\r") if part.strip()]


@pytest.fixture
def eager(monkeypatch):
    """Every piece of work counts as long, and the ticker stays out of the way of exact counts."""
    monkeypatch.setattr(P, "THRESHOLD_S", 0.0)
    monkeypatch.setattr(P, "TICK_S", 60.0)


def test_counts_up_to_the_total_and_is_erased(eager):
    out = Terminal()
    with Progress("kvviz x: replaying", 3, "runs", stream=out) as p:
        for done in (1, 2, 3):
            p.step(done)
    lines = drawn(out.getvalue())
    assert [re.search(r"(\d)/3 runs", line).group(1) for line in lines] == ["0", "1", "2", "3"]
    assert all(line.startswith("kvviz x: replaying: ") and "elapsed" in line for line in lines)
    assert "left" in lines[1] and "\n" not in out.getvalue()
    assert screen(out.getvalue()) == ""


def test_fraction_callback_counts_units(eager):
    out = Terminal()
    with Progress("w", 8, "runs", stream=out) as p:
        p(0.5)
        assert p.done == 4
        p(1.0)
    assert "8/8 runs" in drawn(out.getvalue())[-1] and screen(out.getvalue()) == ""


def test_nothing_on_a_stream_that_is_no_terminal(eager):
    out = io.StringIO()
    with Progress("w", 3, "runs", 100.0, stream=out) as p:
        p.step(3)
    assert out.getvalue() == ""


def test_short_work_draws_nothing():
    out = Terminal()
    with Progress("w", 3, "runs", estimate_s=0.1, stream=out, threshold_s=60.0) as p:
        p.step(1)
    assert out.getvalue() == ""


def test_long_estimate_draws_at_once_with_time_left():
    out = Terminal()
    with Progress("w", None, "", estimate_s=600.0, stream=out, threshold_s=1.0, tick_s=60.0):
        pass
    line = drawn(out.getvalue())[0]
    assert line.startswith("w: 0 s elapsed, ~") and line.endswith(" left") and "min" in line


def test_ticker_keeps_the_line_current_between_units():
    out = Terminal()
    with Progress("w", 2, "runs", stream=out, threshold_s=0.0, tick_s=0.01):
        deadline = time.monotonic() + 5
        while len(drawn(out.getvalue())) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(drawn(out.getvalue())) >= 3 and screen(out.getvalue()) == ""


def test_ctrl_c_leaves_nothing_behind(eager):
    out = Terminal()
    with pytest.raises(KeyboardInterrupt), Progress("w", 3, "runs", stream=out) as p:
        p.step(1)
        raise KeyboardInterrupt
    assert drawn(out.getvalue()) and screen(out.getvalue()) == ""


def test_a_message_printed_meanwhile_gets_its_own_row(eager, monkeypatch):
    out = Terminal()
    monkeypatch.setattr("sys.stderr", out)
    with Progress("w", 2, "runs") as p:
        print("kvviz x: warning: something", file=sys.stderr)
        p.step(1)
    assert sys.stderr is out
    assert screen(out.getvalue()) == "kvviz x: warning: something"
    assert "1/2 runs" in drawn(out.getvalue())[-1]


def test_the_line_never_wraps(eager, monkeypatch):
    monkeypatch.setattr(P.shutil, "get_terminal_size", lambda: __import__("os").terminal_size((20, 5)))
    out = Terminal()
    with Progress("a long description of the work", 3, "runs", stream=out):
        pass
    assert max(len(part) for part in out.getvalue().split("\r")) <= 19


def on_a_terminal(argv: list[str], monkeypatch, capsys) -> tuple[str, Terminal]:
    """Run a command to a pipe, then with a terminal for its stderr: it prints the same; returns what it
    printed and the terminal."""
    assert main(argv) == 0
    plain = capsys.readouterr().out
    out = Terminal()
    monkeypatch.setattr("sys.stderr", out)
    assert main(argv) == 0
    assert capsys.readouterr().out == plain
    return plain, out


@pytest.mark.parametrize(
    "argv",
    [
        ["hitcurve", EXAMPLE, "--policies", "lru,fifo", "--capacities", "100,1000,inf"],
        ["hitcurve", EXAMPLE, "--cache", "prefix", "--policies", "lru,lfu", "--capacities", "100,inf"],
        ["cluster", EXAMPLE, "--instances", "2", "--router", "round-robin,cache-aware", "--blocks", "200"],
    ],
    ids=["hitcurve", "hitcurve-prefix", "cluster"],
)
def test_commands_count_their_runs_on_a_terminal_and_print_the_same(argv, eager, monkeypatch, capsys):
    _, out = on_a_terminal(argv, monkeypatch, capsys)
    lines = drawn(out.getvalue())
    assert lines[0].startswith(f"kvviz {argv[0]}: reading the trace: ")
    lines = [line for line in lines if "runs" in line]
    total = 1 if argv[0] == "cluster" else 2
    total *= 2 if argv[0] == "cluster" else len(argv[-1].split(","))
    assert f": 0/{total} runs" in lines[0]
    assert f"{total}/{total} runs" in lines[-1]
    assert screen(out.getvalue()) == ""


def test_tiers_json_is_unchanged_and_the_line_erased(eager, monkeypatch, capsys):
    argv = ["tiers", *TIERS, "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    out = Terminal()
    monkeypatch.setattr("sys.stderr", out)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == plain
    assert [line.split(":")[1] for line in drawn(out.getvalue())] == [" reading the trace", " replaying the trace"]
    assert screen(out.getvalue()) == ""


def test_plan_grid_draws_with_an_estimate_and_erases(eager, monkeypatch, capsys):
    out = Terminal()
    monkeypatch.setattr("sys.stderr", out)
    argv = ["plan", *TIERS, "--target-p90-ttft", "5", "--dram-sizes", "0,64GiB", "--ssd-sizes", "0", "--workers", "1"]
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert drawn(out.getvalue())[-1].startswith("kvviz plan: replaying 2 sizes: ")
    assert screen(out.getvalue()) == ""


def test_ctrl_c_during_a_command_leaves_its_one_line(eager, monkeypatch, capsys):
    from kvviz.eviction import replay

    def interrupted(*args, progress, **kwargs):
        progress(0.5)
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "counts", interrupted)
    out = Terminal()
    monkeypatch.setattr("sys.stderr", out)
    assert main(["hitcurve", EXAMPLE, "--policies", "lru", "--capacities", "100,inf"]) == 130
    assert "1/2 runs" in out.getvalue()
    assert screen(out.getvalue()) == "kvviz hitcurve: interrupted"
