"""The command line: JSON/JSONL out, typed and ranged arguments, one-line errors with exit code 2."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.common import args as A
from kvviz.common.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_generate_then_stats(tmp_path, capsys):
    assert main(["generate", "--seed", "3", "--requests", "50"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 50
    path = tmp_path / "t.jsonl"
    path.write_text(out)
    assert main(["stats", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["requests"] == 50 and 0 <= stats["infinite_cache_hit_fraction"] <= 1


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "kvviz", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_bad_trace_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1]}\n')
    res = run_cli("stats", str(bad))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "line 1" in res.stderr and "block-hash column" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_arguments_are_one_line_and_exit_2(capsys):
    # in this process: a fresh interpreter's one line and exit code are the bad trace's test above
    for args in (["generate", "--requests", "x"], ["generate", "--requests", "0"], ["nosuchcommand"]):
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (args, err)


# --- typed, ranged arguments (kvviz.common.args) and the one-line contract of main ---------------------


@pytest.mark.parametrize("text, value", [("0", 0), (" 7 ", 7), ("+3", 3), ("4294967295", 2**32 - 1)])
def test_seed_accepts_0_to_2_32_minus_1(text, value):
    assert A.seed(text) == value


@pytest.mark.parametrize(
    "text, message",
    [
        ("-1", "must be in 0..4,294,967,295, got -1"),
        ("4294967296", "must be in 0..4,294,967,295"),
        ("1.5", "expected a whole number"),
        ("abc", "expected a whole number"),
        ("٣", "expected a whole number"),
        ("9" * 5000, "expected a whole number"),
        ("", "expected a whole number"),
    ],
)
def test_seed_refuses_with_a_clear_message(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        A.seed(text)


def test_bounded_floats_are_finite_and_in_range():
    half_open = A.bounded_float(0.0, 1.0, lo_open=True)
    assert half_open("1") == 1.0 and half_open("1e-9") == 1e-9
    for bad in ("0", "nan", "inf", "-inf", "1e309", "1.0000001", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            half_open(bad)
    assert A.bounded_float(1.0, 10.0, allow_inf=True)("inf") == float("inf")
    with pytest.raises(argparse.ArgumentTypeError, match="finite"):
        A.bounded_float(1.0, 10.0, allow_inf=True)("-inf")


def test_output_path_needs_an_existing_writable_folder(tmp_path):
    assert A.output_path(str(tmp_path / "out.csv")) == tmp_path / "out.csv"
    for bad, message in [
        (tmp_path / "missing" / "out.csv", "does not exist"),
        (tmp_path, "is a folder"),
        (tmp_path / ("x" * 300), "too long"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            A.output_path(str(bad))


def test_input_file_must_be_a_regular_file(tmp_path):
    good = tmp_path / "in.csv"
    good.write_text("x")
    assert A.input_file(str(good)) == str(good)
    for bad, message in [
        (tmp_path / "missing", "no such file"),
        (tmp_path, "not a regular file"),
        ("/dev/zero", "not a regular file"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            A.input_file(str(bad))
    either = A.name_or_file(("step", "iid"))
    assert either("step") == "step" and either(str(good)) == str(good)
    with pytest.raises(argparse.ArgumentTypeError, match="expected step | iid or a file"):
        either("stpe")


def test_output_paths_are_checked_before_the_work(tmp_path, capsys, monkeypatch):
    import kvviz.mooncake.overload

    def never(*args, **kwargs):
        raise AssertionError("the simulation ran before the output path was checked")

    monkeypatch.setattr(kvviz.mooncake.overload, "simulate", never)
    monkeypatch.chdir(tmp_path)
    assert main(["overload", "--duration", "10", "--timeline", "nope/t.csv"]) == 2
    out, err = capsys.readouterr()
    assert (
        out == "" and err == "kvviz overload: argument --timeline: cannot write nope/t.csv: its folder does not exist\n"
    )


def test_main_returns_codes_in_process(capsys):
    assert main(["--help"]) == 0 and "stats" in capsys.readouterr().out
    assert main(["generate", "--seed=--"]) == 2  # argparse 3.11 would pass [] on to the command
    assert capsys.readouterr().err == "kvviz: argument --seed: expected one argument\n"


def _raising(exc):
    def run(args):
        raise exc

    return run


def test_errors_with_line_breaks_stay_on_one_line(capsys, monkeypatch):
    import kvviz.commands.kvsize as kvsize

    monkeypatch.setattr(kvsize, "run", _raising(InputError("two\nlines", field="model")))
    assert main(["kvsize"]) == 2
    assert capsys.readouterr().err == "kvviz kvsize: field 'model': two lines\n"


def test_file_system_errors_are_one_line_and_bugs_keep_their_traceback(capsys, monkeypatch):
    import kvviz.commands.kvsize as kvsize

    monkeypatch.setattr(kvsize, "run", _raising(OSError(28, "No space left on device", "out.csv")))
    assert main(["kvsize"]) == 2
    assert capsys.readouterr().err == "kvviz kvsize: out.csv: No space left on device\n"
    monkeypatch.setattr(kvsize, "run", _raising(OSError("not about a file")))
    with pytest.raises(OSError):
        main(["kvsize"])
    monkeypatch.setattr(kvsize, "run", _raising(ZeroDivisionError()))
    with pytest.raises(ZeroDivisionError):
        main(["kvsize"])


def test_help_lists_every_command_and_a_misspelt_one_names_them(capsys):
    """The parser loads only the named command's module; anything else still sees them all."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("blend-eval", "hitcurve", "import", "stream"))
    assert main(["hitcurv", "x"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'hitcurv'" in err and "'import'" in err and len(err.splitlines()) == 1
    assert main(["import", "--list"]) == 0  # a command whose module is named differently (import_cmd)
