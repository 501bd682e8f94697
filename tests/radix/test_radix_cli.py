"""``python -m kvviz radix``: presets, files, totals, and one-line errors with exit code 2."""

from __future__ import annotations

import json

from kvviz.cli import main


def test_preset_prints_steps_dump_and_totals(capsys):
    assert main(["radix", "preset:ops"]) == 0
    out = capsys.readouterr().out
    assert "== step 2: insert 1 2 3 9" in out and "inserted 4 tokens: 3 already cached" in out
    assert "3 D+H [1..3]  locks 2, hits 2," in out  # write-through: backed up and locked until ack


def test_json_file_and_totals_only(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps([{"tokens": list(range(1, 301)) + [901]}, {"requests": [{"tokens": list(range(1, 301)) + [902]}]}])
    )
    assert main(["radix", str(script), "--cache", "radix", "--device", "1000", "--totals-only"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[-1]["device_hit"] == 300 and rows[-1]["redundant"] == 0


def test_text_file_with_deferral_off(tmp_path, capsys):
    script = tmp_path / "s.txt"
    script.write_text("1..300 901\n& 1..300 902\n")
    assert main(["radix", str(script), "--device", "1000", "--no-deferral", "--totals-only"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["redundant"] == 300


def test_errors_are_one_line_exit_two(tmp_path, capsys):
    assert main(["radix", "preset:nope"]) == 2
    assert main(["radix", str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('[{"op": "evict", "n": "x"}]')
    assert main(["radix", str(bad)]) == 2
    assert main(["radix", "preset:chat", "--page-size", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("kvviz radix:") for line in err)
    unlock = tmp_path / "unlock.txt"
    unlock.write_text("insert 1 2\nunlock 1 2\n")
    assert main(["radix", str(unlock), "--cache", "radix"]) == 2
    assert "holds no lock" in capsys.readouterr().err
