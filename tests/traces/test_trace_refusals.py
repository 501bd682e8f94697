"""What the docs refuse is refused, and CSV times get the doubts JSONL times get (docs/traces.md,
*Reading rules*): nothing is read differently from what the file says without a word."""

from __future__ import annotations

import pytest

from kvviz.common.errors import InputError
from kvviz.traces import ReadOptions, TimeUnit, load_trace
from kvviz.traces.formats import parse_column_map
from kvviz.traces.ingest import SMALL_TEXT

ROW = b'{"timestamp": %d, "input_length": 10, "output_length": 1, "hash_ids": [%d]}\n'
TWICE = b'{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1], "timestamp": 7}\n'


def _refusal(data: bytes, **options) -> str:
    with pytest.raises(InputError) as err:
        load_trace(data, options=ReadOptions(**options))
    return str(err.value)


@pytest.mark.parametrize("before", [0, SMALL_TEXT // 60])  # line by line, and through pyarrow's reader
def test_a_json_key_given_twice_is_refused(before):
    data = b"".join(ROW % (k, k) for k in range(before)) + TWICE
    assert _refusal(data) == f"line {before + 1}: the key 'timestamp' is given twice"


def test_a_json_key_given_twice_is_skipped_by_reason():
    trace = load_trace(ROW % (0, 0) + TWICE, options=ReadOptions(skip_bad_rows=True))
    assert trace.n_requests == 1 and trace.warnings == ("skipped 1 bad row: 1 × line: a key given twice (line 2)",)


@pytest.mark.parametrize("value", ["1e3", "1E3", "2.5e-1"])
def test_a_csv_number_with_an_exponent_is_refused(value):
    data = f"timestamp,input_length,output_length\n0,5,1\n{value},5,1\n".encode()
    assert _refusal(data) == f"line 3, field 'timestamp': expected a number, got '{value}'"


def test_a_role_column_named_twice_in_the_header_is_refused():
    data = b"timestamp,input_length,output_length,input_length\n0,5,1,6\n"
    assert _refusal(data) == (
        "line 1: the CSV header names the column 'input_length' (input) 2 times; "
        "which one holds the values cannot be told"
    )


def test_a_mapped_column_named_twice_in_the_header_is_refused():
    data = b"t,p,o,p\n0,5,1,6\n"
    message = _refusal(data, columns=tuple(parse_column_map("arrival=t,input=p,output=o").items()))
    assert "names the column 'p' (input) 2 times" in message


def test_other_columns_may_repeat():
    trace = load_trace(b"timestamp,input_length,output_length,note,note\n0,5,1,a,b\n")
    assert trace.n_requests == 1


def test_one_column_for_several_roles_is_refused():
    with pytest.raises(InputError, match="gives the column 'prompt' to both arrival and input"):
        parse_column_map("arrival=prompt,input=prompt,output=prompt")


@pytest.mark.parametrize("where", ["first", "middle"])
def test_a_line_over_4_mib_is_refused_among_short_ones(where):
    ok = ROW % (0, 0)
    long = b'{"timestamp": 1, "input_length": 10, "output_length": 1, "pad": "' + b"x" * (5 << 20) + b'"}\n'
    data = long + ok if where == "first" else ok * 3 + long + ok
    line = 1 if where == "first" else 4
    assert _refusal(data) == f"line {line}: a line of 5.0 MiB, longer than 4 MiB (no trace record is that long)"


def test_a_line_just_under_4_mib_is_read():
    pad = (4 << 20) - 100
    long = b'{"timestamp": 1, "input_length": 10, "output_length": 1, "pad": "' + b"x" * pad + b'"}\n'
    assert load_trace(b'{"timestamp": 0, "input_length": 10, "output_length": 1}\n' + long).n_requests == 2


# --- CSV times are doubted as JSONL times are -------------------------------------------------------------


@pytest.mark.parametrize(
    "data, warning",
    [
        (
            b"timestamp,input_length,output_length\n1700000000,5,1\n1700000001,5,1\n",
            "the first time, 1,700,000,000, looks like an epoch time in seconds but was read as milliseconds; "
            "if so, choose --time-unit s",
        ),
        (
            b"timestamp,input_length,output_length\n0.5,5,1\n1,5,1\n",
            "the times have fractions and were read as milliseconds (rounded to whole ms); "
            "if they are seconds, choose --time-unit s",
        ),
    ],
)
def test_a_csv_time_column_gets_the_jsonl_warnings(data, warning):
    trace = load_trace(data)
    assert trace.warnings == (warning,)
    assert "times read as milliseconds (assumed; change with --time-unit)" in trace.how_read


def test_a_csv_time_unit_given_leaves_no_doubt():
    data = b"timestamp,input_length,output_length\n1700000000,5,1\n1700000001,5,1\n"
    assert load_trace(data, options=ReadOptions(time_unit=TimeUnit.S)).warnings == ()


def test_seconds_with_fractions_in_a_seconds_column_are_not_doubted():
    trace = load_trace(b"arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,5,1\n1.25,5,1\n")
    assert trace.warnings == () and "times read as seconds (assumed; change with --time-unit)" in trace.how_read
