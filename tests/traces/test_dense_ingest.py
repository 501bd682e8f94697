"""Renumbering block ids 0, 1, 2, … in order of first use: the table path equals the hash-table
path exactly, and a trace whose ids reading renumbered says so (``ids_dense``), so its replays
skip the relabelling, unless sorting by arrival moved a request."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvviz.eviction.grid import POLICIES
from kvviz.eviction.replay import hit_curve
from kvviz.traces import ReadOptions, load_trace
from kvviz.traces.ingest import dense_ids
from kvviz.traces.model import dense_problem
from kvviz.traces.source import FILES, line_chunks, survey
from tests import fixtures as fx


def first_use(ids: list[int]) -> list[int]:
    """The rule in plain Python: each id's number is how many distinct ids came before its first use."""
    number: dict[int, int] = {}
    return [number.setdefault(i, len(number)) for i in ids]


@given(
    st.lists(st.integers(0, 40), max_size=80) | st.lists(st.integers(-(2**40), 2**40), max_size=40),
    st.sampled_from([np.int32, np.int64, np.uint32]),
    st.integers(1, 9),
)
def test_dense_ids_number_in_order_of_first_use_whatever_the_slice(ids, dtype, slice_len):
    if dtype != np.int64 and any(not 0 <= i < 2**31 for i in ids):
        ids = [abs(i) % 2**31 for i in ids]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kvviz.traces.ingest.DENSE_SLICE", slice_len)
        got = dense_ids(np.array(ids, dtype))
    assert got.dtype == np.int32 and got.tolist() == first_use(ids)


def test_dense_ids_of_small_ids_take_the_table_path_and_large_ones_the_hash_table():
    ids = np.array([7, 3, 7, 0, 3, 9], np.int32)
    assert dense_ids(ids).tolist() == [0, 1, 0, 2, 1, 3]
    assert dense_ids(ids.astype(np.int64) * 10**9).tolist() == [0, 1, 0, 2, 1, 3]
    assert dense_ids(np.zeros(0, np.int64)).tolist() == []


def _lines(ids_per_request: list[list[int]], times: list[int]) -> bytes:
    return "".join(
        f'{{"timestamp": {t}, "input_length": {512 * len(ids)}, "output_length": 1, "hash_ids": {ids}}}\n'
        for t, ids in zip(times, ids_per_request)
    ).encode()


WIDE = [[2**40, 2**41], [2**40, 5], [2**41, 2**40, 7]]


def test_ids_renumbered_because_they_did_not_fit_32_bits_are_marked_dense():
    trace = load_trace(_lines(WIDE, [0, 1, 2]))
    assert trace.ids_dense and trace.blocks.tolist() == [0, 1, 0, 2, 1, 0, 3]


def test_ids_as_in_the_file_are_not_marked_dense():
    assert not load_trace(_lines([[0, 1], [0, 2]], [0, 1])).ids_dense
    assert not load_trace(fx.jsonl(fx.QWEN), options=ReadOptions(rechain=False)).ids_dense


def test_re_chained_ids_are_marked_dense():
    trace = load_trace(fx.jsonl(fx.QWEN))
    assert trace.ids_dense and dense_problem(trace.blocks) is None


def test_a_sort_by_arrival_that_moves_requests_drops_the_mark():
    trace = load_trace(_lines(WIDE, [5, 1, 2]))
    assert any("sorted by arrival" in w for w in trace.warnings)
    assert not trace.ids_dense and dense_problem(trace.blocks) is not None
    assert trace.blocks.tolist() == [0, 2, 1, 0, 3, 0, 1]  # numbered in the file's order, then sorted


def test_the_mark_changes_no_hit_count():
    trace = load_trace(fx.jsonl(fx.QWEN))
    unmarked = type(trace)(
        trace.requests, trace.blocks, trace.offsets, trace.block_size, name=trace.name, ids_dense=False
    )
    policies, capacities = list(POLICIES), [1.0, 2.0, 4.0, float("inf")]
    assert hit_curve(trace, policies, capacities).equals(hit_curve(unmarked, policies, capacities))


def test_the_prefix_replays_ids_are_the_same_with_or_without_the_mark():
    from kvviz.hiradix.ids import dense_block_ids

    trace = load_trace(fx.jsonl(fx.QWEN))
    unmarked = type(trace)(trace.requests, trace.blocks, trace.offsets, trace.block_size, ids_dense=False)
    assert np.array_equal(dense_block_ids(trace), dense_block_ids(unmarked))


@given(st.lists(st.text("ab, 1{", max_size=12), max_size=30), st.booleans(), st.integers(1, 40))
def test_the_survey_counts_every_line_and_id_separator_whatever_the_chunking(lines, closed, chunk_bytes):
    text = "\n".join(lines) + ("\n" if closed and lines else "")
    data = text.encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kvviz.traces.source.CHUNK_BYTES", chunk_bytes)
        counted = survey(data, FILES)
    assert counted.text_bytes == len(data) + (bool(data) and not data.endswith(b"\n"))
    assert counted.lines == data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))
    if chunk_bytes >= len(data) and data.endswith(b"\n"):  # one chunk: the larger of its separators' counts
        assert counted.ids == max(data.count(b","), data.count(b" "))


@given(st.lists(st.binary(max_size=9).map(lambda b: b.replace(b"\r", b"")), max_size=12), st.text("a\n", max_size=30))
def test_line_chunks_give_whole_lines_numbered_whatever_the_pieces(pieces, extra):
    pieces = [*pieces, extra.encode()]
    text = b"".join(pieces)
    chunks = list(line_chunks(iter(pieces)))
    assert b"".join(c for _, c in chunks) == text + (b"\n" if text and not text.endswith(b"\n") else b"")
    assert all(c.endswith(b"\n") for _, c in chunks)
    assert [n for n, _ in chunks] == [1 + sum(c.count(b"\n") for _, c in chunks[:k]) for k in range(len(chunks))]
