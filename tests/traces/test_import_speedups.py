"""A chunk's empty lines are found from its line breaks' positions, as searching its text finds them.
Storing a trace writes each data file from bytes made in memory and takes the checksum over those
same bytes as they are written (no file is read back): the files are the ones ``np.save`` and
pyarrow's Parquet writer would write, the checksum is the one reading them back gives, and a file
that cannot be written fails the import as before, leaving no temporary folder."""

from __future__ import annotations

import errno
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.traces import library
from kvviz.traces.formats import _has_blank_line
from kvviz.traces.ingest import dense_ids
from kvviz.traces.model import BASE_COLUMNS, from_arrays
from kvviz.traces.workload import WorkloadConfig, generate
from tests.traces.library_setup import checksum_of_files, fresh_library


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


def test_the_files_are_what_numpy_and_parquet_write_and_the_checksum_reads_them_back(lib, tmp_path):
    trace = generate(WorkloadConfig(requests=400, seed=7))
    entry = library.store(trace).entry
    folder, ref = lib / entry.id, tmp_path / "ref"
    ref.mkdir()
    np.save(ref / "blocks.npy", dense_ids(trace.blocks))
    np.save(ref / "offsets.npy", trace.offsets.astype(np.int64))
    pq.write_table(pa.Table.from_pandas(trace.requests, preserve_index=False), ref / "requests.parquet")
    for name in library.DATA_FILES:
        assert (folder / name).read_bytes() == (ref / name).read_bytes(), name
    assert entry.checksum == checksum_of_files(folder, entry)
    assert entry.bytes == sum((folder / n).stat().st_size for n in library.DATA_FILES) + 4096


def test_a_trace_without_block_ids_stores_empty_arrays_that_open():
    trace = generate(WorkloadConfig(requests=50, seed=3))
    bare = from_arrays({c: trace.column(c) for c in BASE_COLUMNS}, None, np.zeros(50, np.int64), name="bare")
    opened = library.open_entry(library.store(bare).entry.id)
    assert len(opened.blocks) == 0 and opened.n_requests == 50


def test_a_file_that_cannot_be_written_fails_the_import_and_leaves_no_temporary_folder(lib, monkeypatch):
    real = library._write_pieces

    def disk_full(path, pieces):
        if path.name == "blocks.npy":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, pieces)

    monkeypatch.setattr(library, "_write_pieces", disk_full)
    with pytest.raises(InputError, match=r"^the trace library could not be written \(no space left on device\)$"):
        library.store(generate(WorkloadConfig(requests=50, seed=1)))
    assert [p.name for p in lib.iterdir() if p.name.startswith(".tmp-")] == []
    assert library.entries() == []


@given(st.lists(st.sampled_from([b"\n", b"a", b" ", b"\r"]), max_size=40).map(b"".join))
def test_an_empty_line_is_found_from_the_line_breaks_as_a_search_finds_it(chunk):
    breaks = np.flatnonzero(np.frombuffer(chunk, np.uint8) == ord("\n"))
    assert _has_blank_line(chunk, breaks) == (chunk.startswith(b"\n") or b"\n\n" in chunk)
