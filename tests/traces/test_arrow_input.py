"""pyarrow reads traces from memory it owns, never from Python's (see kvviz/traces/arrow_input.py)."""

from __future__ import annotations

import io

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kvviz.traces import arrow_input


@given(st.binary(max_size=4096))
def test_bytes_are_copied_into_arrow_memory(data: bytes):
    read = arrow_input.from_bytes(data).read_buffer()
    assert read.to_pybytes() == data
    if data:  # a reader over the bytes themselves would hand back their own address
        assert read.address != pa.py_buffer(data).address


@given(st.binary(max_size=4096), st.integers(0, 64))
def test_a_file_is_read_whole_into_arrow_memory(data: bytes, extra: int):
    assert arrow_input.from_file(io.BytesIO(data), len(data)).read_buffer().to_pybytes() == data
    assert arrow_input.from_file(io.BytesIO(data), len(data) + extra).read_buffer().to_pybytes() == data
