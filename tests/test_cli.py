"""The command line: JSON/JSONL out, one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kvviz.cli import main

ROOT = Path(__file__).resolve().parents[1]


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
    return subprocess.run([sys.executable, "-m", "kvviz", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_bad_trace_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1]}\n')
    res = run_cli("stats", str(bad))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "line 1" in res.stderr and "hash_ids" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_arguments_are_one_line_and_exit_2():
    for args in (["generate", "--requests", "x"], ["generate", "--requests", "0"], ["nosuchcommand"]):
        res = run_cli(*args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
