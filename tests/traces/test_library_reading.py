"""Reading a library entry that changes underneath: a file cut short or rewritten while a server
holds the entry ends that view in one clear line and the process lives on; an opened entry is
re-checked before a cache serves it again; entries of the first layout are upgraded when opened;
a repair keeps the entry's owner and pin; the library writes through no link it did not make;
block ids are stored dense, so replays skip their relabel and count exactly as before."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.eviction.grid import POLICIES
from kvviz.eviction.replay import counts, replay_of
from kvviz.traces import library, load_trace
from kvviz.traces.ingest import dense_ids
from kvviz.traces.model import Trace, dense_problem
from kvviz.traces.workload import WorkloadConfig, generate
from tests import fixtures as fx
from tests.conftest import assert_clean, open_page, shown
from tests.traces.library_setup import checksum_of_files, fresh_library, refuse_writes

ROOT = Path(__file__).resolve().parents[2]
REPAIR = "import the trace again to replace it"


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


def _stored(requests: int = 300, seed: int = 3) -> tuple[Trace, library.Entry]:
    trace = generate(WorkloadConfig(requests=requests, seed=seed))
    return trace, library.store(trace).entry


# The server's reading path: the function every page calls for the session's trace, with its
# cache; a replay on the trace it gave; the file changed; the same trace replayed again (it was
# read into memory); then the same call again, which must name the damage. One server process holds
# one entry for each change (its own entry, so neither change is seen through the other's).
SERVER = """
import json, os, sys
from kvviz.common.errors import InputError
from kvviz.eviction.replay import simulate
from ui.kit import traces

said = {}
for entry, change in json.loads(sys.argv[1]).items():
    out = said.setdefault(change, [])
    spec = {"kind": "library", "id": entry}
    held = traces.trace_from_spec(spec)
    before = simulate(held, "lru", 50).requests["hits"].sum()
    again = traces.trace_from_spec(spec)
    out.append("cached" if again is held else "reopened")
    blocks = os.path.join(os.environ["KVVIZ_TRACES"], entry, "blocks.npy")
    if change == "cut":
        os.truncate(blocks, 128)
    else:
        with open(blocks, "r+b") as f:
            f.seek(-4, 2)
            f.write(b"\\x00\\x00\\x00\\x00")
    assert simulate(held, "lru", 50).requests["hits"].sum() == before
    try:
        traces.trace_from_spec(spec)
    except InputError as exc:
        out.append(str(exc))
print(json.dumps(said))
"""
CHANGES = {
    "cut": "blocks.npy is not as long as its header says (cut short or extended)",
    "rewrite": "its content does not match the checksum taken at import",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each change's entry id, and what the server said of it."""
    folder = tmp_path_factory.mktemp("served")
    with pytest.MonkeyPatch.context() as monkeypatch:
        lib = fresh_library(folder, monkeypatch)
        ids = {change: _stored(seed=3 + k)[1].id for k, change in enumerate(CHANGES)}
    env = {**os.environ, library.ROOT_ENV: str(lib), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", SERVER, json.dumps({entry: change for change, entry in ids.items()})]
    run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return ids, json.loads(run.stdout)


@pytest.mark.parametrize("change", CHANGES)
def test_a_server_holding_an_entry_survives_its_file_cut_short_or_rewritten(served, change):
    ids, said = served
    assert said[change] == ["cached", f"library entry '{ids[change]}' is damaged ({CHANGES[change]}); {REPAIR}"]


def test_the_trace_page_names_an_entry_cut_short_after_it_showed_it_and_shows_it_again_once_repaired(lib, tmp_path):
    trace, entry = _stored()
    at = open_page("trace", {"trace_source": "Library", "trace_library": entry.id})
    assert_clean(at)
    assert not at.error and at.metric[0].value == "300"
    blocks = lib / entry.id / "blocks.npy"
    whole = blocks.read_bytes()
    os.truncate(blocks, 128)
    at.run()
    assert_clean(at)
    reason = "blocks.npy is not as long as its header says (cut short or extended)"
    assert [shown(e.value) for e in at.error] == [f"library entry '{entry.id}' is damaged ({reason}); {REPAIR}"]
    blocks.write_bytes(whole)
    at.run()
    assert_clean(at)
    assert not at.error and at.metric[0].value == "300"


def test_an_opened_entry_is_served_again_only_while_its_files_are_unchanged(lib):
    trace, entry = _stored()
    opened = library.open_entry(entry.id)
    assert library.unchanged(opened) and library.unchanged(trace)  # the second is not from the library
    blocks = lib / entry.id / "blocks.npy"
    blocks.write_bytes(blocks.read_bytes())  # the same bytes, written again in place
    assert not library.unchanged(opened)
    reopened = library.open_entry(entry.id)
    assert library.unchanged(reopened) and np.array_equal(reopened.blocks, opened.blocks)
    (lib / entry.id / library.META).unlink()
    assert not library.unchanged(reopened)


def test_reading_an_entry_never_maps_a_file_and_a_file_cut_while_read_is_damage(lib, monkeypatch):
    _, entry = _stored()
    monkeypatch.setattr(np, "memmap", None)  # any memory map would fail here
    assert library.open_entry(entry.id).n_requests == 300
    real = library._read

    def cut_then_read(file, name):
        if name == "blocks.npy":
            os.truncate(lib / entry.id / name, 100)
        return real(file, name)

    monkeypatch.setattr(library, "_read", cut_then_read)
    with pytest.raises(InputError, match=r"\(blocks.npy changed while it was read\); import the trace again"):
        library.open_entry(entry.id)


def _first_layout(folder: Path, trace: Trace, **meta_changes) -> None:
    """The entry as the first layout stored it: block ids as imported, no version, and a checksum
    of the data files alone."""
    np.save(folder / "blocks.npy", trace.blocks)
    meta = json.loads((folder / library.META).read_text())
    del meta["version"]
    meta |= {"accesses": len(trace.blocks), **meta_changes}
    entry = library._entry_from_meta(folder.name, meta)
    meta["checksum"] = checksum_of_files(folder, entry)
    (folder / library.META).write_text(json.dumps(meta))


def test_an_entry_of_the_first_layout_is_upgraded_when_opened_keeping_its_name_owner_and_pin(lib):
    trace = generate(WorkloadConfig(requests=200, seed=5))
    entry = library.store(trace, origin=library.WEB).entry
    library._rewrite_meta(entry, name="kept by a visitor")
    _first_layout(lib / entry.id, trace)
    opened = library.open_entry(entry.id)
    assert opened.ids_dense and np.array_equal(opened.blocks, dense_ids(trace.blocks))
    meta = json.loads((lib / entry.id / library.META).read_text())
    assert meta["version"] == library.VERSION and meta["name"] == "kept by a visitor"
    assert (meta["origin"], meta["pinned"], meta["created"]) == ("web", False, entry.created)
    again = library.open_entry(entry.id)
    assert np.array_equal(again.blocks, opened.blocks) and again.requests.equals(trace.requests)


def test_a_first_layout_entry_in_a_read_only_library_is_upgraded_in_memory(lib, monkeypatch):
    trace, entry = _stored(200, 6)
    _first_layout(lib / entry.id, trace)
    before = (lib / entry.id / library.META).read_bytes()
    refuse_writes(monkeypatch)
    assert library.open_entry(entry.id).ids_dense
    assert (lib / entry.id / library.META).read_bytes() == before


def test_a_first_layout_entry_whose_block_size_was_changed_is_damaged_and_import_repairs_it(lib, tmp_path, capsys):
    trace, entry = _stored(200, 7)
    _first_layout(lib / entry.id, trace, block_size=1)
    reason = f"its content or the block size in {library.META} does not match its id"
    with pytest.raises(InputError, match=rf"damaged \({reason}\); {REPAIR}"):
        library.open_entry(entry.id)
    path = tmp_path / "again.jsonl"
    path.write_text(trace.to_jsonl())
    assert main(["import", str(path)]) == 0
    assert f"replaced the damaged entry {entry.id}" in capsys.readouterr().err
    assert library.open_entry(entry.id).block_size == trace.block_size


@pytest.mark.parametrize("damage_origin, repair_origin", [(library.CLI, library.WEB), (library.WEB, library.CLI)])
def test_a_repair_keeps_the_owner_and_pin_or_pins_it(lib, damage_origin, repair_origin):
    trace = generate(WorkloadConfig(requests=100, seed=8))
    eid = library.store(trace, origin=damage_origin).entry.id
    blocks = lib / eid / "blocks.npy"
    blocks.write_bytes(blocks.read_bytes()[:-4])
    stored = library.store(trace, origin=repair_origin)
    assert stored.notes == (f"replaced the damaged entry {eid}",)
    assert (stored.entry.origin, stored.entry.pinned) == (damage_origin, True)
    assert library._inspect(eid).pinned and library.open_entry(eid).n_requests == 100


def test_events_log_planted_as_a_link_is_reported_and_never_written_through(lib, tmp_path, capsys, caplog):
    _, entry = _stored(50, 9)
    target = tmp_path / "someone-elses-file"
    target.write_text("theirs\n")
    (lib / library.EVENTS).unlink(missing_ok=True)
    (lib / library.EVENTS).symlink_to(target)
    with caplog.at_level(logging.WARNING, logger="kvviz.library"):
        assert main(["import", "--remove", entry.id]) == 0
    assert target.read_text() == "theirs\n" and (lib / library.EVENTS).is_symlink()
    assert [r.getMessage() for r in caplog.records if r.name == "kvviz.library"] == [
        "the library's event log (events.log) is a link, which the library did not make: remove it; "
        "nothing was written to it"
    ]
    assert capsys.readouterr().out == f"removed {entry.id} ('{entry.name}')\n"


def test_a_lock_file_planted_as_a_link_is_reported_and_never_opened(lib, tmp_path, capsys):
    _, entry = _stored(50, 11)
    target = tmp_path / "someone-elses-lock"
    target.write_text("theirs")
    (lib / ".lock").unlink()
    (lib / ".lock").symlink_to(target)
    assert main(["import", "--remove", entry.id]) == 2
    message = "the trace library's lock file (.lock) is a link, which it did not make: remove it"
    assert capsys.readouterr().err.strip().endswith(message)
    assert target.read_text() == "theirs" and library.open_entry(entry.id).n_requests == 50


def test_meta_written_by_the_library_never_goes_through_a_planted_link(lib, tmp_path):
    _, entry = _stored(50, 10)
    target = tmp_path / "planted"
    target.write_text("theirs")
    part = lib / entry.id / f".{library.META}-fixed"
    part.symlink_to(target)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(library.uuid, "uuid4", lambda: type("U", (), {"hex": "fixed"})())
        with pytest.raises(FileExistsError):
            library._rewrite_meta(entry, name="renamed")
    assert target.read_text() == "theirs"


def test_library_replays_skip_the_relabel_and_count_exactly_as_the_trace_imported():
    trace = load_trace(fx.jsonl(fx.MOONCAKE))
    opened = library.open_entry(library.store(trace).entry.id)
    replay = replay_of(opened)
    assert opened.ids_dense and np.array_equal(replay.ids, np.unique(opened.blocks, return_inverse=True)[1])
    assert replay.n_ids == len(np.unique(trace.blocks))
    capacities = [1, 2, 3, 5, 8, float("inf")]
    assert counts(opened, list(POLICIES), capacities) == counts(trace, list(POLICIES), capacities)


def test_a_trace_claiming_dense_ids_must_have_them():
    frame = {"timestamp": np.zeros(2, np.int64)}
    offsets = np.array([0, 2, 3])
    assert Trace(frame, np.array([0, 1, 0]), offsets, ids_dense=True).head(1).ids_dense
    for blocks in ([1, 0, 0], [0, 2, 1], [0, -1, 0]):
        with pytest.raises(InputError, match="not numbered 0, 1, 2, … in order of first use"):
            Trace(frame, np.array(blocks), offsets, ids_dense=True)


@given(st.lists(st.integers(-(2**40), 2**40), max_size=60), st.integers(1, 7))
def test_renumbered_ids_are_dense_and_only_first_use_numbering_is(ids, slice_len):
    blocks = np.array(ids, np.int64)
    dense = dense_ids(blocks)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kvviz.traces.model.DENSE_SLICE", slice_len)  # slices must not change the verdict
        assert dense_problem(dense) is None
        first_use = list(dict.fromkeys(ids))
        is_dense = first_use == list(range(len(first_use)))
        assert (dense_problem(blocks) is None) == is_dense


def test_a_trace_read_from_a_file_and_its_library_copy_hand_the_kernels_the_same_kind_of_array(lib):
    """numba compiles a kernel once per kind of array (a read-only one is another kind): the library's
    arrays are read-only, so a file's must be too, or the first library trace a visitor opens
    compiles every kernel again."""
    trace, entry = _stored()
    opened = library.open_entry(entry.id)
    for array in (trace.blocks, trace.offsets, opened.blocks, opened.offsets):
        assert not array.flags.writeable
    assert (trace.blocks.dtype, trace.offsets.dtype) == (opened.blocks.dtype, opened.offsets.dtype)
