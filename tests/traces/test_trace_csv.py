"""CSV records whose quoted fields span lines (RFC 4180 §2.6): read whole, streamed, with the
line each record starts on in messages."""

from __future__ import annotations

import pytest

from kvviz.common.errors import InputError
from kvviz.traces import ReadOptions, load_trace, source
from tests import fixtures as fx


def test_quoted_fields_with_line_breaks_are_one_record():
    trace = load_trace(fx.MULTILINE_CSV)
    assert trace.requests["timestamp"].tolist() == [0, 250, 900]
    assert trace.requests["input_length"].tolist() == [1000, 512, 1537]
    assert trace.blocks.tolist() == [0, 1, 0, 0, 1, 2, 3]


def test_a_record_spanning_chunks_streams(monkeypatch):
    monkeypatch.setattr(source, "CHUNK_BYTES", 16)  # every quoted field crosses a chunk boundary
    trace = load_trace(fx.gz(fx.MULTILINE_CSV))
    assert trace.blocks.tolist() == [0, 1, 0, 0, 1, 2, 3]


@pytest.mark.parametrize("record", range(3))
def test_an_error_names_the_line_its_record_starts_on(record):
    rows = fx.MULTILINE_CSV.split(b"\r\n")
    starts = [k - 1 for k in fx.MULTILINE_CSV_STARTS]  # 0-based index of each record's first line
    rows[starts[record]] = b"x" + rows[starts[record]]  # its arrival is no longer a number
    with pytest.raises(InputError) as err:
        load_trace(b"\r\n".join(rows))
    assert (err.value.line, err.value.field) == (fx.MULTILINE_CSV_STARTS[record], "timestamp")


def test_skipped_rows_after_a_multiline_record_keep_their_lines():
    data = fx.MULTILINE_CSV + b'1000,10,1,0\r\n1100,"1\r\n0",1,0,"p"\r\n'  # 4 columns; a newline in a number
    trace = load_trace(data, options=ReadOptions(skip_bad_rows=True))
    assert trace.n_requests == 3
    assert "wrong number of columns (line 9)" in trace.warnings[0]
    assert "input_length: not an integer (line 10)" in trace.warnings[0]


def test_an_unclosed_quote_is_refused_at_its_record():
    data = b"timestamp,input_length,output_length\n0,10,1\n" + b'5,"10,1\n' + b"6,10,1\n" * 30_000
    with pytest.raises(InputError, match="malformed CSV") as err:
        load_trace(data)
    assert err.value.line == 3
