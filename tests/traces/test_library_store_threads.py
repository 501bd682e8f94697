"""Storing a trace renumbers its block ids on a second thread while the content hash names the
entry: the entry is the same as renumbering in turn would make, a failure of the renumbering
reaches the caller as before (no temporary folder left), and an equal entry already stored is kept
without waiting for anything to be written."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.traces import library
from kvviz.traces.ingest import dense_ids
from kvviz.traces.workload import WorkloadConfig, generate
from tests.traces.library_setup import fresh_library


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


def test_the_stored_ids_are_the_trace_renumbered_in_order_of_first_use():
    trace = generate(WorkloadConfig(requests=300, seed=11))
    assert not trace.ids_dense
    entry = library.store(trace).entry
    opened = library.open_entry(entry.id)
    assert opened.ids_dense and np.array_equal(opened.blocks, dense_ids(trace.blocks))
    assert entry.id == library.entry_id(trace)


def test_a_failure_of_the_renumbering_thread_reaches_the_caller_and_leaves_no_temporary_folder(lib, monkeypatch):
    def no_memory(ids):
        raise MemoryError

    monkeypatch.setattr(library, "dense_ids", no_memory)
    with pytest.raises(MemoryError):
        library.store(generate(WorkloadConfig(requests=50, seed=1)))
    assert [p.name for p in lib.iterdir() if p.name.startswith(".tmp-")] == []
    assert library.entries() == []


def test_storing_an_equal_trace_again_keeps_the_entry():
    trace = generate(WorkloadConfig(requests=100, seed=2))
    first = library.store(trace).entry
    again = library.store(generate(WorkloadConfig(requests=100, seed=2)))
    assert again.entry.id == first.id and again.entry.checksum == first.checksum
    assert any("already in the library" in note for note in again.notes)
