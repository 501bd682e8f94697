"""The trace library: content-addressed entries, atomic under concurrent imports, capped without
silent loss (pinned imports, web Keeps that never evict), validated settings, and usable by id
from every command."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.traces import library, load_trace
from kvviz.traces.cli import resolve
from kvviz.traces.model import from_records
from tests import fixtures as fx
from tests.traces.library_setup import fresh_library, refuse_writes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "example_trace.jsonl"


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


def tiny(k: int, accesses: int = 40):
    """A small trace of its own content (``k`` makes the ids differ), ``accesses`` block ids long."""
    per = accesses // 4
    return from_records(
        [0, 10, 20, 30],
        [per * 512] * 4,
        [1] * 4,
        [list(range(k * 1000 + i * per, k * 1000 + (i + 1) * per)) for i in range(4)],
        name=f"t{k}",
    )


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_store_and_open_round_trip_in_memory_with_dense_ids():
    trace = load_trace(fx.jsonl(fx.QWEN))
    entry = library.store(trace, "qwen sample").entry
    again = library.open_entry(entry.id)
    assert not isinstance(again.blocks, np.memmap) and not again.blocks.flags.writeable
    assert not again.offsets.flags.writeable and again.ids_dense and trace.ids_dense  # re-chained ids are read dense
    first_use = {b: i for i, b in enumerate(dict.fromkeys(trace.blocks.tolist()))}
    assert again.blocks.tolist() == [first_use[b] for b in trace.blocks.tolist()]
    assert np.array_equal(again.offsets, trace.offsets)
    assert again.requests.equals(trace.requests) and again.block_size == 16
    assert again.how_read == trace.how_read and again.name == "qwen sample"
    assert entry.id == library.entry_id(trace) and len(entry.id) == 16 and entry.version == library.VERSION
    assert entry.origin == "cli" and entry.pinned and len(entry.checksum) == 64 and entry.damaged is None


def test_same_content_is_one_entry_and_a_second_name_renames_it(capsys):
    a = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "a")
    b = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "b")
    assert a.entry.id == b.entry.id and [e.name for e in library.entries()] == ["b"]
    assert a.notes == () and b.notes == (f"already in the library as {a.entry.id}; renamed from 'a' to 'b'",)
    again = library.store(load_trace(fx.jsonl(fx.MOONCAKE)))
    assert again.notes == (f"already in the library as {a.entry.id}; kept as it was",) and again.entry.name == "b"


def test_the_cli_says_what_a_second_import_did(capsys, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(fx.jsonl(fx.MOONCAKE))
    assert cli(capsys, "import", str(path))[0] == 0
    code, out, err = cli(capsys, "import", str(path), "--name", "renamed")
    eid = json.loads(out)["id"]
    assert code == 0 and json.loads(out)["name"] == "renamed"
    assert err == f"kvviz import: already in the library as {eid}; renamed from 't.jsonl' to 'renamed'\n"


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
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kvviz", "import", str(path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    ids = {json.loads(out)["id"] for out, _ in outs}
    assert len(ids) == 1 and [e.id for e in library.entries()] == list(ids)


def _cap_at(monkeypatch, entries: float) -> int:
    """Set the cap to ``entries`` times one tiny entry's size; returns that size."""
    size = library.store(tiny(99)).entry.bytes
    library.remove(library.entry_id(tiny(99)))
    monkeypatch.setenv(library.CAP_ENV, repr(size * entries / 1e9))
    return size


def test_imports_are_pinned_and_an_import_over_the_cap_is_refused_without_evicting(monkeypatch, capsys, tmp_path):
    _cap_at(monkeypatch, 1.5)
    first = library.store(tiny(1)).entry
    path = tmp_path / "t2.jsonl"
    path.write_text(tiny(2).to_jsonl())
    code, out, err = cli(capsys, "import", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "not stored" in err and "nothing was evicted" in err and str(tmp_path) not in err
    assert [e.id for e in library.entries()] == [first.id]


def test_an_import_over_the_cap_evicts_web_entries_oldest_first_and_reports_them(monkeypatch, lib, caplog):
    _cap_at(monkeypatch, 3.5)
    monkeypatch.setenv(library.WEB_SHARE_ENV, "1")
    web = [library.store(tiny(k), origin=library.WEB).entry for k in (1, 2, 3)]
    assert all(not e.pinned and e.origin == "web" for e in web)
    with caplog.at_level(logging.WARNING, logger="kvviz.library"):
        stored = library.store(tiny(4))
    assert [e.id for e in stored.evicted] == [web[0].id]
    assert stored.notes == (
        f"evicted {web[0].id} ('t1', {library._size(web[0].bytes)}, kept from the web) to stay under the library's cap",
    )
    assert {e.id for e in library.entries()} == {web[1].id, web[2].id, stored.entry.id}
    warned = [
        r.getMessage().split()[:2] for r in caplog.records if r.name == "kvviz.library" and r.levelno >= logging.WARNING
    ]
    assert warned == [["evicted", web[0].id]]
    events = [json.loads(line) for line in (lib / library.EVENTS).read_text().splitlines()]
    assert [(e["event"], e["id"]) for e in events][-1:] == [("evicted", web[0].id)]
    assert [e["event"] for e in events].count("evicted") == 1


def test_pinned_entries_survive_any_number_of_web_keeps(monkeypatch):
    _cap_at(monkeypatch, 4.5)
    monkeypatch.setenv(library.WEB_SHARE_ENV, "1")
    lecture = [library.store(tiny(k)).entry.id for k in (1, 2)]
    kept, refused = [], []
    for k in range(10, 20):
        try:
            kept.append(library.store(tiny(k), origin=library.WEB).entry.id)
        except InputError as exc:
            refused.append(str(exc))
    assert len(kept) == 2 and len(refused) == 8
    assert all("keeping a trace never removes other traces" in r for r in refused)
    assert {e.id for e in library.entries()} == set(lecture + kept)


def test_web_keeps_have_a_size_limit_and_a_share_of_the_cap(monkeypatch):
    size = _cap_at(monkeypatch, 10)
    monkeypatch.setenv(library.WEB_SHARE_ENV, "0.25")  # 2.5 entries
    library.store(tiny(1), origin=library.WEB)
    library.store(tiny(2), origin=library.WEB)
    with pytest.raises(InputError, match="over their share of the library"):
        library.store(tiny(3), origin=library.WEB)
    monkeypatch.setenv(library.WEB_MAX_ENV, repr(size / 2 / 1e9))
    with pytest.raises(InputError, match="a trace kept from the web may take at most"):
        library.store(tiny(4), origin=library.WEB)
    assert len(library.entries()) == 2


def test_pin_and_unpin(capsys, monkeypatch):
    web = library.store(tiny(1), origin=library.WEB).entry
    code, out, _ = cli(capsys, "import", "--pin", web.id)
    assert code == 0 and out == f"{web.id} ('t1') is pinned: never evicted\n"
    assert library.entries()[0].pinned
    code, out, _ = cli(capsys, "import", "--unpin", web.id)
    assert code == 0 and "unpinned" in out and not library.entries()[0].pinned
    code, _, err = cli(capsys, "import", "--pin", "0123456789abcdef")
    assert code == 2 and "no trace '0123456789abcdef'" in err


def test_an_import_pins_a_trace_kept_from_the_web():
    web = library.store(tiny(1), origin=library.WEB).entry
    stored = library.store(tiny(1))
    assert stored.entry.pinned and stored.notes == (
        f"already in the library as {web.id} (kept from the web); now pinned, so never evicted",
    )


def test_remove_says_what_it_removed_and_fails_when_nothing_was(capsys):
    entry = library.store(tiny(1), "lecture").entry
    assert cli(capsys, "import", "--remove", entry.id) == (0, f"removed {entry.id} ('lecture')\n", "")
    code, out, err = cli(capsys, "import", "--remove", entry.id)
    assert (code, out) == (2, "")
    assert err == f"kvviz import: field '--remove': no trace '{entry.id}' in the library; nothing was removed\n"


@pytest.mark.parametrize(
    "argv, refused",
    [
        (["--list", "t.jsonl"], "--list takes no trace file"),
        (["--list", "--name", "x"], "--list takes no --name"),
        (["--remove", "0123456789abcdef", "--block-size", "16"], "--remove takes no reading options"),
        (["--remove", "nope"], "'nope' is not a library id"),
    ],
)
def test_options_that_do_not_apply_are_refused(capsys, argv, refused):
    code, out, err = cli(capsys, "import", *argv)
    assert code == 2 and out == "" and refused in err and err.count("\n") == 1


@pytest.mark.parametrize("variable", [library.CAP_ENV, library.WEB_MAX_ENV, library.WEB_SHARE_ENV])
@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-1", "abc", "0x10"])
def test_bad_settings_are_refused_by_name_before_anything_is_stored(
    capsys, monkeypatch, lib, tmp_path, variable, value
):
    monkeypatch.setenv(variable, value)
    path = tmp_path / "t.jsonl"
    path.write_bytes(fx.jsonl(fx.MOONCAKE))
    code, out, err = cli(capsys, "import", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"the environment variable {variable} is '{value}'" in err and "Traceback" not in err
    assert not lib.exists() or not [p for p in lib.iterdir() if p.name != ".lock"]


def test_a_zero_cap_is_refused_and_a_zero_web_share_turns_keeping_off(monkeypatch):
    monkeypatch.setenv(library.CAP_ENV, "0")
    with pytest.raises(library.SettingError, match=library.CAP_ENV):
        library.limits()
    monkeypatch.setenv(library.CAP_ENV, "1")
    monkeypatch.setenv(library.WEB_SHARE_ENV, "0")
    with pytest.raises(InputError, match="over their share"):
        library.store(tiny(1), origin=library.WEB)


def test_a_read_only_library_says_so_in_one_line_without_its_folder(monkeypatch, lib):
    library.store(tiny(1))
    refuse_writes(monkeypatch)
    for origin, advice in (
        (library.CLI, f"set {library.ROOT_ENV} to a folder you can write"),
        (library.WEB, "traces cannot be kept on this server"),
    ):
        with pytest.raises(InputError) as caught:
            library.store(tiny(2), origin=origin)
        assert str(caught.value) == f"the trace library is read-only here; {advice}"
    assert [e.name for e in library.entries()] == ["t1"]  # reading needs no lock


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
    entry = library.store(load_trace(fx.jsonl(fx.MOONCAKE))).entry
    from kvviz.traces import ReadOptions, TimeUnit

    with pytest.raises(InputError, match="apply to files"):
        resolve(entry.id, ReadOptions(time_unit=TimeUnit.S))


def test_neither_file_nor_id(capsys):
    assert main(["stats", "no-such-file.jsonl"]) == 2
    assert "cannot open" in capsys.readouterr().err


WORKER = """
import contextlib, io, json, sys
from kvviz.cli import main
for line in sys.stdin:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import", line.strip()])
    print(json.dumps([code, out.getvalue(), err.getvalue()]), flush=True)
"""


def test_four_concurrent_imports_under_a_tiny_cap_never_lose_or_invent_an_entry(monkeypatch, lib, tmp_path):
    """Twenty rounds: two pinned entries and three web-kept ones fill the library; four processes
    import at once under a cap of five and a half entries. Three must evict the web entries, one
    each, the fourth must be refused, and every id printed must exist at the end."""
    _cap_at(monkeypatch, 5.5)
    monkeypatch.setenv(library.WEB_SHARE_ENV, "1")
    pinned = {library.store(tiny(k)).entry.id for k in (1, 2)}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER], cwd=ROOT, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(4)
    ]
    try:
        for round_ in range(20):
            web = {library.store(tiny(1000 + 10 * round_ + k), origin=library.WEB).entry.id for k in range(3)}
            paths = [tmp_path / f"r{round_}-{w}.jsonl" for w in range(4)]
            for w, (path, worker) in enumerate(zip(paths, workers)):
                path.write_text(tiny(2000 + 10 * round_ + w).to_jsonl())
                worker.stdin.write(f"{path}\n")
            for worker in workers:
                worker.stdin.flush()
            results = [json.loads(worker.stdout.readline()) for worker in workers]
            assert sorted(code for code, _, _ in results) == [0, 0, 0, 2], results
            stored = [json.loads(out) for code, out, _ in results if code == 0]
            evicted = [e for s in stored for e in s["evicted"]]
            [refusal] = [err for code, _, err in results if code == 2]
            assert sorted(evicted) == sorted(web) and "not stored" in refusal and refusal.count("\n") == 1
            assert {e.id for e in library.entries()} == pinned | {s["id"] for s in stored}
            assert not list(lib.glob(".tmp-*"))
            for s in stored:
                library.remove(s["id"])
    finally:
        for worker in workers:
            worker.stdin.close()
            worker.wait(timeout=60)
