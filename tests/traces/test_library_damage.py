"""Damaged library entries, one kind of damage at a time: every command that opens a trace names
the entry and its damage in one line (exit 2), ``import --list`` flags it, nothing crashes or shows
a path, the library's other entry keeps working, and importing the trace again repairs it. "Sealed"
damage also rewrites the checksum in ``meta.json``, so the checks behind the checksum are tested too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.traces import library, load_trace
from kvviz.traces.model import Trace, from_records
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import assert_clean, open_page, shown
from tests.traces.library_setup import fresh_library, seal

COMMANDS = (["stats"], ["hitcurve"], ["hitcurve", "--cache", "prefix"], ["radix", "--trace"])
REPAIR = "import the trace again to replace it"


@pytest.fixture
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


@pytest.fixture
def two(lib, tmp_path):
    """Two entries: the one to damage (its file, its id) and another that must keep working."""
    victim, other = tmp_path / "victim.jsonl", tmp_path / "other.jsonl"
    victim.write_text(generate(WorkloadConfig(requests=40, seed=1)).to_jsonl())
    other.write_text(generate(WorkloadConfig(requests=30, seed=2)).to_jsonl())
    return victim, library.store(load_trace(victim)).entry.id, library.store(load_trace(other)).entry.id


def _cut(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])

    return damage


def _flip(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        data = bytearray((folder / name).read_bytes())
        data[len(data) - 9] ^= 0x40
        (folder / name).write_bytes(bytes(data))

    return damage


def _array(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        np.save(folder / name, change(np.load(folder / name)))

    return damage


def _meta(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        meta = json.loads((folder / library.META).read_text())
        (folder / library.META).write_text(json.dumps(change(meta)))

    return damage


def _meta_text(text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / library.META).write_text(text)


def _field(key: str, value: object) -> Callable[[Path], None]:
    return _meta(lambda meta: meta | {key: value})


def _requests(change: Callable) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(folder / "requests.parquet").to_pandas()
        pq.write_table(pa.Table.from_pandas(change(table), preserve_index=False), folder / "requests.parquet")

    return damage


def _link_file(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        target = folder.parent.parent / f"elsewhere-{name}"
        (folder / name).rename(target)
        (folder / name).symlink_to(target)

    return damage


def _link_folder(folder: Path) -> None:
    target = folder.parent.parent / "elsewhere"
    folder.rename(target)
    folder.symlink_to(target, target_is_directory=True)


def _fifo(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        (folder / name).unlink()
        os.mkfifo(folder / name)

    return damage


def _shift(offsets: np.ndarray) -> np.ndarray:
    return offsets + 2**40


def _swap(offsets: np.ndarray) -> np.ndarray:
    offsets = offsets.copy()
    offsets[1], offsets[2] = offsets[2], offsets[1] + 1
    return offsets


# (name, damage, sealed, words the reason must hold)
CORPUS = [
    *[
        (f"{n} cut short", _cut(n), False, r)
        for n, r in [
            ("blocks.npy", "blocks.npy is not as long as its header says"),
            ("offsets.npy", "offsets.npy is not as long as its header says"),
            ("requests.parquet", "does not match the checksum"),
        ]
    ],
    *[
        (f"{n} cut short, sealed", _cut(n), True, r)
        for n, r in [("requests.parquet", "requests.parquet cannot be read")]
    ],
    *[(f"{n} flipped", _flip(n), False, "does not match the checksum") for n in library.DATA_FILES],
    (
        "blocks as floats",
        _array("blocks.npy", lambda b: b.astype(np.float64)),
        True,
        "blocks.npy holds float64 values, not int32 or int64",
    ),
    ("blocks big-endian", _array("blocks.npy", lambda b: b.astype(">i4")), True, "blocks.npy holds >i4 values"),
    ("blocks 2-D", _array("blocks.npy", lambda b: np.stack([b, b])), True, "blocks.npy has 2 dimensions, not 1"),
    ("blocks one short", _array("blocks.npy", lambda b: b[:-1]), True, "blocks.npy holds"),
    ("offsets as int32", _array("offsets.npy", lambda o: o.astype(np.int32)), True, "offsets.npy holds int32 values"),
    ("offsets shifted by 2^40", _array("offsets.npy", _shift), False, "does not match the checksum"),
    ("offsets shifted by 2^40, sealed", _array("offsets.npy", _shift), True, "offsets do not start at 0"),
    ("offsets decreasing, sealed", _array("offsets.npy", _swap), True, "offsets decrease"),
    (
        "offsets end early, sealed",
        _array("offsets.npy", lambda o: np.minimum(o, o[-1] - 1)),
        True,
        "offsets do not end at the number of block ids",
    ),
    (
        "block counts differ, sealed",
        _requests(lambda t: t.assign(n_blocks=t["n_blocks"][::-1].to_numpy())),
        True,
        "the request table's block counts do not match the offsets",
    ),
    (
        "no timestamp column, sealed",
        _requests(lambda t: t.drop(columns="timestamp")),
        True,
        "no whole-number column 'timestamp'",
    ),
    (
        "float lengths, sealed",
        _requests(lambda t: t.astype({"input_length": float})),
        True,
        "no whole-number column 'input_length'",
    ),
    *[(f"{n} a link", _link_file(n), False, f"{n} is a link") for n in (library.META, *library.DATA_FILES)],
    ("the folder a link", _link_folder, False, "it is a link or a file, not a folder"),
    ("blocks a pipe", _fifo("blocks.npy"), False, "blocks.npy is not a regular file"),
    *[
        (f"{n} deleted", lambda f, n=n: (f / n).unlink(), False, f"{n} is missing")
        for n in (library.META, *library.DATA_FILES)
    ],
    ("meta null", _meta_text("null"), False, "meta.json does not hold an object"),
    ("meta a list", _meta_text("[]"), False, "meta.json does not hold an object"),
    ("meta not JSON", _meta_text("{'id':"), False, "meta.json is not valid JSON"),
    ("meta nested deep", _meta_text("[" * 100_000), False, "meta.json is not valid JSON"),
    ("meta huge", _meta_text(" " * (2 << 20)), False, "meta.json is larger than"),
    ("requests as text", _field("requests", "40"), False, "field 'requests' is not a whole number"),
    ("bytes as text", _field("bytes", "123"), False, "field 'bytes' is not a whole number"),
    ("created as text", _field("created", "yesterday"), False, "field 'created' is not a number"),
    ("span NaN", _field("span_s", float("nan")), False, "field 'span_s' is not a number"),
    ("accesses negative", _field("accesses", -1), False, "field 'accesses' is not a whole number"),
    ("accesses 2^70", _field("accesses", 2**70), False, "field 'accesses' is not a whole number"),
    ("pinned as text", _field("pinned", "yes"), False, "field 'pinned' is not true or false"),
    ("block size 0", _field("block_size", 0), False, "gives a block size below 1"),
    ("has_block_ids null", _field("has_block_ids", None), False, "field 'has_block_ids' is not true or false"),
    ("how_read a dict", _field("how_read", {"a": 1}), False, "field 'how_read' is not a list of texts"),
    ("another id", _field("id", "0123456789abcdef"), False, "meta.json names another id"),
    ("unknown origin", _field("origin", "attacker"), False, "gives an unknown origin"),
    (
        "no checksum",
        _meta(lambda m: {k: v for k, v in m.items() if k != "checksum"}),
        False,
        "meta.json has no field 'checksum'",
    ),
    ("accesses disagree", _field("accesses", 3), False, "blocks.npy holds"),
    ("block size 512 to 1", _field("block_size", 1), False, "does not match the checksum"),
    ("warnings changed", _field("warnings", ["all is well"]), False, "does not match the checksum"),
    ("block size 2^21", _field("block_size", 2**21), False, "gives a block size above 1,048,576"),
    ("accesses 2^40", _field("accesses", 2**40), False, "gives more than 1,000,000,000 block accesses"),
    ("version unknown", _field("version", 3), False, "gives a layout version this kvviz does not know"),
    ("version true", _field("version", True), False, "gives a layout version this kvviz does not know"),
    (
        "input length negative, sealed",
        _requests(lambda t: t.assign(input_length=-t["input_length"])),
        True,
        "the request table has an input length below 1",
    ),
    (
        "output length negative, sealed",
        _requests(lambda t: t.assign(output_length=t["output_length"] - 10**7)),
        True,
        "the request table has an output length below 0",
    ),
    (
        "times reversed, sealed",
        _requests(lambda t: t.assign(timestamp=t["timestamp"][::-1].to_numpy())),
        True,
        "the request table has arrival times out of order",
    ),
    (
        "times negative, sealed",
        _requests(lambda t: t.assign(timestamp=t["timestamp"] - 10**9)),
        True,
        "the request table has arrival times below 0",
    ),
    (
        "block ids not dense, sealed",
        _array("blocks.npy", lambda b: b + 1),
        True,
        "the block ids are not numbered 0, 1, 2, … in order of first use",
    ),
]


@pytest.mark.parametrize("name, damage, sealed, reason", CORPUS, ids=[c[0] for c in CORPUS])
def test_every_command_names_the_damaged_entry_and_import_repairs_it(
    two, capsys, tmp_path, name, damage, sealed, reason
):
    path, eid, other = two
    folder = library.root() / eid
    damage(folder)
    if sealed:
        seal(folder)
    for command in COMMANDS:
        assert main([*command, eid]) == 2, command
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and str(tmp_path) not in err, (command, err)
        assert f"library entry '{eid}' is damaged (" in err and reason in err and err.endswith(f"{REPAIR}\n"), err
    assert main(["import", "--list"]) == 0
    listed = {e["id"]: e for e in json.loads(capsys.readouterr().out)}
    assert reason in listed[eid]["damaged"] and set(listed[eid]) == {"id", "damaged", "bytes"}
    assert "damaged" not in listed[other]
    assert main(["stats", other]) == 0
    capsys.readouterr()

    assert main(["import", str(path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["id"] == eid and err == f"kvviz import: replaced the damaged entry {eid}\n"
    assert main(["stats", eid]) == 0
    assert sorted(p.name for p in library.root().iterdir()) == sorted([".lock", "events.log", eid, other])


def test_a_link_is_never_followed_when_a_damaged_entry_is_replaced(two, tmp_path):
    path, eid, _ = two
    _link_folder(library.root() / eid)
    assert main(["import", str(path)]) == 0
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == sorted([library.META, *library.DATA_FILES])
    assert not (library.root() / eid).is_symlink()


def test_a_damaged_entry_can_be_removed(two, capsys):
    _, eid, other = two
    _meta_text("null")(library.root() / eid)
    assert main(["import", "--remove", eid]) == 0
    assert capsys.readouterr().out == f"removed {eid} (damaged: meta.json does not hold an object)\n"
    assert [e.id for e in library.entries()] == [other]


def test_damage_found_on_open_is_flagged_in_later_listings(two):
    _, eid, _ = two
    assert library.entries()[-1].damaged is None
    _flip("blocks.npy")(library.root() / eid)
    assert all(e.damaged is None for e in library.entries())  # the cheap listing cannot see flipped bytes
    with pytest.raises(InputError, match="does not match the checksum"):
        library.open_entry(eid)
    assert [e.id for e in library.entries() if e.damaged] == [eid]
    [flagged] = [e for e in library.entries(verify=True) if e.damaged]
    assert flagged.label() == f"{eid} · damaged: its content does not match the checksum taken at import"


@pytest.mark.parametrize(
    "offsets, rows, problem",
    [
        ([0, 2, 4], 2, None),
        ([0, 2, 5], 2, "offsets do not end at the number of block ids"),
        ([1, 2, 4], 2, "offsets do not start at 0"),
        ([0, 3, 2, 4], 3, "offsets decrease"),
        ([0, 2**40, 4], 2, "offsets decrease"),
        ([0, 2, 4], 3, "the request table's rows do not match its 2 requests"),
        ([], 0, "the offsets are not a flat array of integers"),
    ],
)
def test_no_trace_exists_with_arrays_the_kernels_would_read_outside_of(offsets, rows, problem):
    table = {"timestamp": np.zeros(rows, np.int64)}
    make = lambda: Trace(table, np.arange(4, dtype=np.int32), np.array(offsets, np.int64))  # noqa: E731
    if problem is None:
        assert make().n_requests == 2
    else:
        with pytest.raises(InputError, match=problem):
            make()


@settings(max_examples=300)
@given(
    st.lists(st.integers(-3, 12) | st.sampled_from([2**40, -(2**40), 2**62]), min_size=1, max_size=8),
    st.integers(0, 10),
)
def test_a_trace_exists_exactly_when_every_request_reads_inside_its_block_ids(offsets, n_blocks):
    """The law behind the check: a Trace is built if and only if the offsets start at 0, never
    decrease and end at the number of block ids, and then every request's slice lies inside them."""
    offsets = np.array(offsets, np.int64)
    table = {"timestamp": np.zeros(len(offsets) - 1, np.int64)}
    inside = offsets[0] == 0 and offsets[-1] == n_blocks and bool((np.diff(offsets) >= 0).all())
    try:
        trace = Trace(table, np.arange(n_blocks, dtype=np.int32), offsets)
    except InputError:
        assert not inside
        return
    assert inside
    assert all(0 <= trace.offsets[i] <= trace.offsets[i + 1] <= n_blocks for i in range(trace.n_requests))


def test_float_or_2d_block_ids_are_refused_by_the_trace_itself():
    offsets = np.array([0, 2], np.int64)
    for blocks in (np.zeros(2, np.float64), np.zeros((1, 2), np.int32)):
        with pytest.raises(InputError, match="the block ids are not a flat array of integers"):
            Trace({"timestamp": np.zeros(1, np.int64)}, blocks, offsets)
    assert from_records([0], [10], [1], [[5, 6]]).n_requests == 1


@pytest.mark.parametrize("stem, prefix", [("trace", "trace"), ("eviction", "eviction"), ("prefix_cache", "prefix")])
@pytest.mark.parametrize(
    "damage, sealed, reason",
    [
        (_array("offsets.npy", _shift), True, "offsets do not start at 0"),
        (_meta_text("null"), False, "meta.json does not hold an object"),
    ],
    ids=["offsets shifted, sealed", "meta null"],
)
def test_the_library_view_shows_the_damage_and_other_entries_still_open(two, stem, prefix, damage, sealed, reason):
    _, eid, other = two
    damage(library.root() / eid)
    if sealed:
        seal(library.root() / eid)
    at = open_page(stem, {f"{prefix}_source": "Library", f"{prefix}_library": eid})
    assert_clean(at)
    message = [f"library entry '{eid}' is damaged ({reason}); {REPAIR}"]
    assert [shown(e.value) for e in at.error] == message
    at.run()  # once an open has found the damage, the picker says so too
    assert_clean(at)
    assert [shown(e.value) for e in at.error] == message
    assert f"{eid} · damaged: {reason}" in at.sidebar.selectbox(key=f"{prefix}_library").options
    fresh = open_page(stem, {f"{prefix}_source": "Library", f"{prefix}_library": other})
    assert_clean(fresh)
    assert not fresh.error and fresh.sidebar.selectbox(key=f"{prefix}_library").value == other
