"""The trace parser: exact loads, every kind of bad input named by line and field, round trips."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.traces import MAX_REQUESTS, blocks_needed, load_trace

GOOD = (
    b'{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]}\n'
    b'{"timestamp": 250, "input_length": 512, "output_length": 7, "hash_ids": [0]}\n'
    b"\n"
    b'{"timestamp": 900, "input_length": 1537, "output_length": 0, "hash_ids": [0, 1, 2, 3]}\n'
)


def test_loads_mooncake_jsonl_exactly():
    trace = load_trace(GOOD)
    assert trace.requests["timestamp"].tolist() == [0, 250, 900]
    assert trace.requests["input_length"].tolist() == [1000, 512, 1537]
    assert trace.requests["n_blocks"].tolist() == [2, 1, 4]
    assert trace.blocks.dtype == np.int32 and trace.offsets.dtype == np.int64
    assert trace.blocks.tolist() == [0, 1, 0, 0, 1, 2, 3]
    assert trace.offsets.tolist() == [0, 2, 3, 7]
    assert trace.hash_ids(2).tolist() == [0, 1, 2, 3]
    assert trace.has_block_ids and trace.warnings == ()


def test_accepts_path_bytes_and_file_objects(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD)
    for source in (path, str(path), GOOD, io.BytesIO(GOOD), io.StringIO(GOOD.decode())):
        assert load_trace(source).blocks.tolist() == [0, 1, 0, 0, 1, 2, 3]


def test_jsonl_round_trip():
    trace = load_trace(GOOD)
    again = load_trace(trace.to_jsonl().encode())
    assert again.requests.equals(trace.requests)
    assert np.array_equal(again.blocks, trace.blocks)
    first = json.loads(trace.to_jsonl().splitlines()[0])
    assert first == {"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]}


def test_block_size_is_a_parameter():
    trace = load_trace(
        b'{"timestamp": 0, "input_length": 300, "output_length": 1, "hash_ids": [4, 5, 6]}\n', block_size=128
    )
    assert trace.block_size == 128 and trace.hash_ids(0).tolist() == [4, 5, 6]
    assert blocks_needed(512) == 1 and blocks_needed(513) == 2 and blocks_needed(1, 512) == 1


def test_out_of_order_timestamps_are_sorted_with_a_warning():
    data = (
        b'{"timestamp": 500, "input_length": 10, "output_length": 1, "hash_ids": [7]}\n'
        b'{"timestamp": 100, "input_length": 10, "output_length": 1, "hash_ids": [8]}\n'
    )
    trace = load_trace(data)
    assert trace.requests["timestamp"].tolist() == [100, 500]
    assert trace.blocks.tolist() == [8, 7]
    assert len(trace.warnings) == 1 and "out of order" in trace.warnings[0]


def test_mooncake_csv_and_vidur_csv():
    csv = b"timestamp,input_length,output_length,hash_ids\n0,600,3,1 2\n10,100,4,1\n"
    trace = load_trace(csv)
    assert trace.blocks.tolist() == [1, 2, 1] and trace.has_block_ids
    vidur = b"arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,600,3\n1.5,100,4\n"
    trace = load_trace(vidur)
    assert not trace.has_block_ids and len(trace.blocks) == 0
    assert trace.requests["timestamp"].tolist() == [0, 1500]
    azure = (
        b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.500,374,44\n2023-11-16 18:15:47.000,396,109\n"
    )
    assert load_trace(azure).requests["timestamp"].tolist() == [0, 500]


@pytest.mark.parametrize(
    "data, line, field, words",
    [
        (b"", None, None, "empty"),
        (b"  \n\n", None, None, "empty"),
        (b"\xff\xfe{}", 1, None, "UTF-8"),
        (b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}\n{oops\n', 2, None, "JSON"),
        (b"[1, 2]\n", 1, None, "object"),
        (b'{"input_length": 1, "output_length": 1, "hash_ids": [0]}\n', 1, "timestamp", "missing"),
        (b'{"timestamp": 0, "output_length": 1, "hash_ids": [0]}\n', 1, "input_length", "missing"),
        (b'{"timestamp": "soon", "input_length": 1, "output_length": 1, "hash_ids": [0]}\n', 1, "timestamp", "number"),
        (b'{"timestamp": 0, "input_length": "x", "output_length": 1, "hash_ids": [0]}\n', 1, "input_length", "integer"),
        (b'{"timestamp": 0, "input_length": 1.5, "output_length": 1, "hash_ids": [0]}\n', 1, "input_length", "integer"),
        (b'{"timestamp": 0, "input_length": -4, "output_length": 1, "hash_ids": []}\n', 1, "input_length", "at least"),
        (
            b'{"timestamp": 0, "input_length": 1, "output_length": -1, "hash_ids": [0]}\n',
            1,
            "output_length",
            "at least",
        ),
        (
            b'{"timestamp": 0, "input_length": 99999999999, "output_length": 1, "hash_ids": [0]}\n',
            1,
            "input_length",
            "absurd",
        ),
        (b'{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [0]}\n', 1, "hash_ids", "needs"),
        (b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": ["a"]}\n', 1, "hash_ids", "integers"),
        (b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": 3}\n', 1, "hash_ids", "list"),
        (
            b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
            b'{"timestamp": 1, "input_length": 10, "output_length": 1}\n',
            2,
            "hash_ids",
            "missing",
        ),
        (b"a,b,c\n1,2,3\n", 1, None, "arrival time"),
        (b"timestamp,input_length,output_length\n0,10\n", 2, None, "columns"),
        (b"timestamp,input_length,output_length\n0,ten,1\n", 2, "input_length", "integer"),
        (b"timestamp,input_length,output_length,hash_ids\n0,10,1,1 x\n", 2, "hash_ids", "integers"),
        (b"timestamp,input_length,output_length\n", None, None, "no requests"),
    ],
)
def test_bad_input_names_line_and_field(data, line, field, words):
    with pytest.raises(InputError) as err:
        load_trace(data)
    assert err.value.line == line
    assert err.value.field == field
    assert words in str(err.value)


def test_limits_on_size_and_requests():
    from kvviz.traces import Limits

    with pytest.raises(InputError, match="more than 2 requests"):
        load_trace(GOOD, limits=Limits(1000, 1000, requests=2))
    with pytest.raises(InputError, match="limit"):
        load_trace(GOOD, limits=Limits(10, 10))
    with pytest.raises(InputError, match="limit"):
        load_trace(GOOD, limits=Limits(1000, 10))
    assert MAX_REQUESTS >= 10_000_000


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot open"):
        load_trace(tmp_path / "nope.jsonl")


def test_head_keeps_the_first_requests():
    head = load_trace(GOOD).head(2)
    assert head.n_requests == 2 and head.blocks.tolist() == [0, 1, 0] and head.offsets.tolist() == [0, 2, 3]


@settings(max_examples=150)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_load_or_raise_input_error(data):
    try:
        load_trace(data)
    except InputError:
        pass


records = st.fixed_dictionaries(
    {
        "timestamp": st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=3)),
        "input_length": st.one_of(st.integers(-5, 3000), st.none(), st.booleans()),
        "output_length": st.integers(-2, 100),
        "hash_ids": st.lists(st.one_of(st.integers(-3, 50), st.text(max_size=2)), max_size=8),
    }
)


@settings(max_examples=150)
@given(st.lists(records, min_size=1, max_size=6))
def test_arbitrary_records_load_or_raise_input_error(recs):
    data = "\n".join(json.dumps(r) for r in recs).encode()
    try:
        trace = load_trace(data)
    except InputError:
        return
    assert trace.n_requests == len(recs)
    assert (np.diff(trace.requests["timestamp"].to_numpy()) >= 0).all()


def test_fingerprint_keys_on_content_not_name():
    from kvviz.traces import fingerprint

    a, b = load_trace(GOOD, name="a"), load_trace(GOOD, name="b")
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(load_trace(GOOD.replace(b"[0, 1, 2, 3]", b"[0, 1, 2, 9]"))) != fingerprint(a)
    assert fingerprint(a.head(2)) != fingerprint(a)
