"""The command line holds against what the machine and the shell do to it: special files are refused
unread (never waited on), a full disk, a closed pipe, Ctrl-C and exhausted memory each end in one
line, and every command that reads a trace says its warnings and skipped rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from kvviz.cli import main
from kvviz.traces import fingerprint, load_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "example_trace.jsonl"
# 4 rows: fractional ms (a time-unit warning), one with too few ids, one with a text length, one good
DOUBTFUL = (
    b'{"timestamp": 0.5, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n'
    b'{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n'
    b'{"timestamp": 2, "input_length": "x", "output_length": 1, "hash_ids": [1, 2]}\n'
    b'{"timestamp": 3, "input_length": 600, "output_length": 1, "hash_ids": [1, 3]}\n'
)
SKIPPED = (
    "skipped 2 bad rows: 1 × input_length: not an integer (line 3); "
    "1 × the block-hash column: wrong number of ids (line 2)"
)
FRACTIONS = "the times have fractions and were read as milliseconds"


def _kvviz(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """``python -m kvviz ARGS`` as a user runs it; the time-out turns a hang into a failure."""
    return subprocess.run(
        [sys.executable, "-m", "kvviz", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, **kwargs
    )


def _one_line(text: str) -> str:
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text.strip()


# --- special files: refused, never blocking in open() ----------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "@"],
        ["import", "@"],
        ["radix", "--trace", "@"],
        ["hitcurve", "@", "--capacities", "10"],
        ["radix", "@"],
    ],
)
def test_a_fifo_is_refused_not_waited_on(argv, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # nobody writes to it: opening it the ordinary way waits for ever
    res = _kvviz(*[str(fifo) if a == "@" else a for a in argv], env=os.environ | {"KVVIZ_TRACES": str(tmp_path)})
    assert res.returncode == 2 and "'pipe' is a pipe, not a regular file" in _one_line(res.stderr)


def test_a_fifo_as_a_bandwidth_file_is_refused(tmp_path):
    fifo = tmp_path / "bw"
    os.mkfifo(fifo)
    res = _kvviz("stream", "--bandwidth", str(fifo), "--policy", "level1")
    assert res.returncode == 2 and "is not a regular file" in _one_line(res.stderr)


def test_a_bandwidth_file_swapped_for_a_fifo_after_its_check_is_refused(tmp_path, capsys):
    from kvviz.commands.stream import _bandwidth_file
    from kvviz.common.errors import InputError

    os.mkfifo(tmp_path / "bw")
    with pytest.raises(InputError, match="'bw' is a pipe"):
        _bandwidth_file(str(tmp_path / "bw"))


# --- a full disk, a closed pipe, Ctrl-C, memory ---------------------------------------------------------


def test_stdout_on_a_full_disk_is_one_line():
    with open("/dev/full", "w") as full:
        res = subprocess.run(
            [sys.executable, "-m", "kvviz", "stats", str(EXAMPLE)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert res.returncode == 2
    assert _one_line(res.stderr) == "kvviz stats: cannot write the output: No space left on device"


@pytest.mark.parametrize(
    "argv",
    [
        ["schedule", "--scheduler", "balance", "--requests", "200", "--per-request", "/dev/full"],
        ["overload", "--policy", "baseline", "--duration", "60", "--timeline", "/dev/full"],
    ],
)
def test_an_output_file_on_a_full_disk_is_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert _one_line(err) == f"kvviz {argv[0]}: cannot write the output: No space left on device"


def _generating(requests: int) -> subprocess.Popen:
    """``kvviz generate`` writing a synthetic trace into a pipe this test reads."""
    argv = [sys.executable, "-m", "kvviz", "generate", "--seed", "1", "--requests", str(requests)]
    return subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_as_a_shell_starts
    )


def _as_a_shell_starts() -> None:
    """Ctrl-C delivered and handled, as in a command a shell starts in the foreground: a child inherits
    a blocked or ignored SIGINT from the process that starts it, and a test worker may have one."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sigint_held(pid: int) -> dict[str, bool]:
    """Whether the process blocks or ignores SIGINT (its masks in /proc)."""
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
    )
    bit = 1 << (signal.SIGINT - 1)
    return {mask: bool(int(status[mask], 16) & bit) for mask in ("SigBlk", "SigIgn")}


def test_a_closed_pipe_ends_quietly():
    proc = _generating(20_000)
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # as `| head -c1` does
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_ctrl_c_is_one_line_and_exit_130():
    proc = _generating(20_000)  # megabytes of requests: it fills the pipe and waits there, still writing
    proc.stdout.readline()  # it is writing requests: inside the command
    held = _sigint_held(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert held == {"SigBlk": False, "SigIgn": False}
    assert proc.returncode == 130 and _one_line(err.decode()) == "kvviz generate: interrupted"


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    import numpy as np

    def too_large(trace):
        return np.zeros(1 << 58, np.int64)  # 2 EiB: numpy's _ArrayMemoryError, as a trace too large would raise

    monkeypatch.setattr("kvviz.commands.stats.trace_stats", too_large)
    assert main(["stats", str(EXAMPLE)]) == 2
    assert "not enough free memory for this run" in _one_line(capsys.readouterr().err)


# --- pzstd: a skippable frame first ---------------------------------------------------------------------


def test_a_pzstd_file_reads_as_zstd_reads_it():
    text = EXAMPLE.read_bytes()
    frame = zstandard.ZstdCompressor().compress(text)
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + len(frame).to_bytes(4, "little")
    trace = load_trace(skippable + frame)
    assert fingerprint(trace) == fingerprint(load_trace(text))
    assert "zstd-compressed" in trace.how_read[0]


# --- nothing dropped or read differently without a word ---------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "@"],
        ["hitcurve", "@", "--policies", "lru", "--capacities", "10"],
        ["radix", "--trace", "@"],
        ["schedule", "--scheduler", "balance", "--trace", "@"],
        ["overload", "--policy", "baseline", "--trace", "@"],
    ],
)
def test_every_command_says_the_warnings_and_skipped_rows(argv, tmp_path, capsys):
    (tmp_path / "t.jsonl").write_bytes(DOUBTFUL)
    argv = [str(tmp_path / "t.jsonl") if a == "@" else a for a in argv] + ["--skip-bad-rows"]
    main(argv)
    out, err = capsys.readouterr()
    said = err.splitlines()
    assert said[0].startswith(f"kvviz {argv[0]}: warning: {FRACTIONS}")
    assert said[1] == f"kvviz {argv[0]}: warning: {SKIPPED}"
    if argv[0] != "hitcurve":  # CSV out; the JSON ones carry the warnings beside their numbers
        summary = json.loads(out)
        assert (summary.get("warnings") or summary["trace_warnings"])[1] == SKIPPED


def test_a_clean_trace_says_nothing(capsys):
    assert main(["stats", str(EXAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "warnings" not in json.loads(out)


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--columns", "arrival=prompt,input=prompt,output=prompt"],
            "--columns gives the column 'prompt' to both arrival and input; each role needs its own",
        ),
        (
            ["--capacities", "1e400"],
            "field 'capacities': capacity '1e400' is too large a number; write inf for no limit",
        ),
    ],
)
def test_what_the_docs_refuse_is_refused(argv, line, capsys):
    command = ["hitcurve", str(EXAMPLE)] + (["--format", "csv"] if "--columns" in argv else [])
    assert main(command + argv) == 2
    assert _one_line(capsys.readouterr().err) == f"kvviz hitcurve: {line}"


@pytest.mark.parametrize(
    "argv",
    [
        ["tiers", "@", "--model", "llama-3-8b", "--gpu", "h100", "--json"],
        [
            "tiers",
            "@",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json",
            "--instances",
            "2",
            "--router",
            "round-robin",
        ],
        [
            "plan",
            "@",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json",
            "--target-p90-ttft",
            "60",
            "--instances",
            "1",
        ],
    ],
)
def test_the_sizing_commands_carry_the_trace_warnings_in_their_json(argv, tmp_path, capsys):
    (tmp_path / "t.jsonl").write_bytes(DOUBTFUL)
    main([str(tmp_path / "t.jsonl") if a == "@" else a for a in argv] + ["--skip-bad-rows"])
    out, err = capsys.readouterr()
    assert f"kvviz {argv[0]}: warning: {SKIPPED}" in err.splitlines()
    assert json.loads(out)["trace_warnings"][1] == SKIPPED
