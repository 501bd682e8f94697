"""The trace library: content-addressed entries, atomic under concurrent imports, capped, and
usable by id from every command."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.errors import InputError
from kvviz.traces import library, load_trace
from kvviz.traces.cli import resolve
from tests import fixtures as fx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "example_trace.jsonl"


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "lib"))
    return tmp_path / "lib"


def test_store_and_open_round_trip_memory_mapped():
    trace = load_trace(fx.jsonl(fx.QWEN))
    entry = library.store(trace, "qwen sample")
    again = library.open_entry(entry.id)
    assert isinstance(again.blocks, np.memmap) and not again.blocks.flags.writeable
    assert np.array_equal(again.blocks, trace.blocks) and np.array_equal(again.offsets, trace.offsets)
    assert again.requests.equals(trace.requests) and again.block_size == 16
    assert again.how_read == trace.how_read and again.name == "qwen sample"
    assert entry.id == library.entry_id(again) and len(entry.id) == 16


def test_same_content_is_one_entry():
    a = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "a")
    b = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "b")
    assert a.id == b.id and len(library.entries()) == 1


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABCDEF0123456789", "0123", "0123456789abcdef/..", ""])
def test_ids_are_validated_strictly(bad):
    with pytest.raises(InputError):
        library.open_entry(bad)


def test_unknown_id_is_an_input_error():
    with pytest.raises(InputError, match="no trace"):
        library.open_entry("0123456789abcdef")


def test_concurrent_imports_in_threads_leave_one_whole_entry(lib):
    trace = load_trace(EXAMPLE)
    errors = []

    def work():
        try:
            library.store(trace)
        except Exception as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.id for e in library.entries()] == [library.entry_id(trace)]
    assert not list(lib.glob(".tmp-*"))
    assert np.array_equal(library.open_entry(library.entry_id(trace)).blocks, trace.blocks)


def test_concurrent_imports_in_processes(lib, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    env = {"KVVIZ_TRACES": str(lib), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "kvviz", "import", str(path)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    ids = {json.loads(out)["id"] for out, _ in outs}
    assert len(ids) == 1 and [e.id for e in library.entries()] == list(ids)


def test_size_cap_drops_the_oldest(monkeypatch):
    first = library.store(load_trace(fx.jsonl(fx.MOONCAKE)))
    monkeypatch.setenv(library.CAP_ENV, str(first.bytes * 1.5 / 1e9))
    second = library.store(load_trace(fx.jsonl(fx.QWEN)))
    assert [e.id for e in library.entries()] == [second.id]


def test_commands_accept_a_library_id(capsys):
    assert main(["import", str(EXAMPLE), "--name", "example"]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert main(["stats", entry["id"]]) == 0
    by_id = json.loads(capsys.readouterr().out)
    assert main(["stats", str(EXAMPLE)]) == 0
    assert by_id == json.loads(capsys.readouterr().out)
    assert main(["import", "--list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listed] == ["example"]


def test_reading_options_with_an_id_are_refused():
    entry = library.store(load_trace(fx.jsonl(fx.MOONCAKE)))
    from kvviz.traces import ReadOptions, TimeUnit
    with pytest.raises(InputError, match="apply to files"):
        resolve(entry.id, ReadOptions(time_unit=TimeUnit.S))


def test_neither_file_nor_id(capsys):
    assert main(["stats", "no-such-file.jsonl"]) == 2
    assert "cannot open" in capsys.readouterr().err
