"""Native calls of the kernels (kvviz.eviction.policies.native): the same results as numba's dispatchers,
numba's own types elsewhere, and a command line that never sets up numba's compiler."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kvviz.eviction.replay  # noqa: F401 -- registers every entry
from kvviz.eviction.replay import POLICIES, counts, counts_csv, parse_capacities, replay_of
from kvviz.eviction.policies import native
from kvviz.eviction.policies.counting import prefix_hits
from kvviz.eviction.policies.fifo import fifo_hits
from kvviz.traces.reuse import stack_distances_of_ids
from kvviz.traces import load_trace

EXAMPLE = "assets/example_trace.jsonl"
ENTRIES = ("kvviz.eviction.policies.arc.arc_hits", "kvviz.eviction.policies.belady.belady_hits", "kvviz.eviction.policies.counting.prefix_hits",
           "kvviz.eviction.policies.fifo.fifo_hits", "kvviz.eviction.policies.lfu.length_aware_hits", "kvviz.eviction.policies.lfu.lfu_hits",
           "kvviz.eviction.policies.s3fifo.s3fifo_hits", "kvviz.eviction.policies.sieve.sieve_hits",
           "kvviz.traces.reuse.stack_distances_of_ids")


def test_every_kernel_python_calls_is_an_entry():
    assert tuple(sorted(native._ENTRIES)) == ENTRIES


def test_linking_gives_every_entry_a_native_function():
    native.link()
    assert sorted(native._NATIVE.functions) == list(ENTRIES)


def _both(entry, *args):
    """The entry called through numba's dispatcher and natively."""
    expected = entry.kernel(*args)
    with native.native_calls():
        got = entry(*args)
    return expected, got


@settings(max_examples=25, deadline=None)
@given(ids=st.lists(st.integers(0, 30), min_size=1, max_size=400), capacity=st.integers(1, 40),
       policy=st.sampled_from(sorted(POLICIES)))
def test_a_policy_hits_the_same_accesses_natively(ids, capacity, policy):
    blocks = np.asarray(ids, dtype=np.int64)
    replay = kvviz.eviction.replay.Replay(blocks, int(blocks.max()) + 1, np.array([0, len(blocks)], dtype=np.int64),
                                   np.zeros(1, dtype=np.int64), 1)
    expected = POLICIES[policy].hits(replay, capacity)
    with native.native_calls():
        got = POLICIES[policy].hits(replay, capacity)
    assert got.dtype == expected.dtype == np.bool_
    assert np.array_equal(got, expected)


@settings(max_examples=25, deadline=None)
@given(hit=st.lists(st.booleans(), min_size=0, max_size=60), cuts=st.lists(st.integers(0, 60), max_size=8))
def test_prefix_hits_and_stack_distances_agree(hit, cuts):
    hit = np.asarray(hit, dtype=np.bool_)
    offsets = np.unique(np.clip([0, *cuts, len(hit)], 0, len(hit))).astype(np.int64)
    expected, got = _both(prefix_hits, hit, offsets)
    assert isinstance(got, int) and got == expected
    ids = (np.arange(len(hit), dtype=np.int64) * 7) % 5
    if len(ids):
        expected, got = _both(stack_distances_of_ids, ids, 5)
        assert np.array_equal(got, expected)


def test_an_array_result_of_another_length_is_refused_not_copied(monkeypatch):
    spec = native.Entry(native.kernel(lambda ids: ids[:-1].copy()), ("i8[:]",), "i8[:]")
    monkeypatch.setattr(spec.kernel, "__name__", "shorter")
    symbol, code = native._compile(spec)
    monkeypatch.setitem(native._ENTRIES, spec.name, spec)
    function = native._link({spec.name: (symbol, code)})[spec.name]
    with pytest.raises(RuntimeError, match="another length"):
        native._call(function, spec, (np.arange(4, dtype=np.int64),))


def test_other_argument_types_go_to_numba(monkeypatch):
    calls = []
    monkeypatch.setattr(native, "_call", lambda *a: calls.append(a))
    ids32 = np.array([0, 1, 0, 2, 1], dtype=np.int32)
    with native.native_calls():
        hit = fifo_hits(ids32, 3, 2)                               # int32 ids: numba compiles for them
        strided = fifo_hits(np.arange(10, dtype=np.int64)[::2], 10, 2)   # not contiguous
        fifo_hits(ids32.astype(np.int64), 3, 2)                   # exactly the C types: native
    assert len(calls) == 1
    assert hit.tolist() == [False, False, True, False, True] and not strided.any()


def test_outside_native_calls_the_dispatcher_runs(monkeypatch):
    native.link()
    monkeypatch.setattr(native, "_call", lambda *a: pytest.fail("called natively"))
    assert fifo_hits(np.array([0, 0], dtype=np.int64), 1, 1).tolist() == [False, True]


def test_a_build_into_a_folder_another_process_finished_keeps_theirs(tmp_path):
    folder = tmp_path / "native-x"
    folder.mkdir()
    (folder / native.MANIFEST).write_text("{}")
    native.build(folder)                      # loses the race: its own staging folder is removed
    assert [p.name for p in folder.iterdir()] == [native.MANIFEST]
    assert [p.name for p in tmp_path.iterdir()] == ["native-x"]


def test_a_damaged_object_is_never_linked_and_numba_runs_instead(tmp_path, monkeypatch):
    native.link()
    folder = tmp_path / "native-damaged"
    shutil.copytree(native.folder_for(), folder)
    code = folder / "kvviz.eviction.policies.fifo.fifo_hits.o"
    code.write_bytes(code.read_bytes()[:-64])                  # linking this would crash the process
    with pytest.raises(ValueError, match="fifo_hits.o does not match"):
        native._verified_objects(folder)
    monkeypatch.setattr(native, "folder_for", lambda: folder)
    monkeypatch.setattr(native, "_NATIVE", native._Native())
    with native.native_calls():
        assert native._NATIVE.functions == {}
        assert fifo_hits(np.array([0, 0], dtype=np.int64), 1, 1).tolist() == [False, True]


def test_the_command_line_counts_natively_without_numba_s_compiler():
    capacities = "10,100,1000,inf"
    expected = counts_csv(counts(replay_of(load_trace(EXAMPLE)), list(POLICIES), parse_capacities(capacities)))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "kvviz", "hitcurve", EXAMPLE, "--sample",
                           "exact", "--capacities", capacities], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == expected
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "llvmlite.binding" in imported                       # the linker, but not numba:
    assert "numba" not in imported and "numba.core.registry" not in imported
