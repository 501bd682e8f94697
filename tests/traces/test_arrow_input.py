"""pyarrow reads traces from memory it owns, never from Python's (see kvviz/traces/arrow_input.py)."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import numpy as np
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


def test_a_file_read_into_numpy_is_copied_too():
    data = np.frombuffer(b"PAR1 not really parquet", np.uint8)
    read = arrow_input.from_bytes(data).read_buffer()
    assert read.to_pybytes() == data.tobytes() and read.address != data.ctypes.data


READERS = {"read_table", "read_json", "read_csv", "open_csv", "ParquetFile", "BufferReader", "py_buffer"}


def test_every_pyarrow_reader_in_kvviz_reads_arrow_memory():
    """A reader handed Python memory (``pa.py_buffer``, ``bytes``, a numpy array) can abort the
    process at exit; readers get their input from ``arrow_input`` (the library's request table once
    did not, and concurrent imports of a stored trace aborted now and then)."""
    root = Path(__file__).resolve().parents[2] / "kvviz"
    wrong = []
    for path in root.rglob("*.py"):
        if path.name == "arrow_input.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).rsplit(".", 1)[-1] in READERS:
                first = node.args[0] if node.args else None
                through = isinstance(first, ast.Call) and ast.unparse(first.func).startswith("arrow_input.")
                if not through:
                    wrong.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert wrong == []
