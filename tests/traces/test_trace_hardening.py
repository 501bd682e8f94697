"""Hostile input (issue 15): every case raises one short InputError naming line and field, and
nothing is read without a cap."""

from __future__ import annotations

import os

import pytest

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.traces import load_trace

OK = b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
CSV_HEAD = b"TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _error(data: bytes) -> InputError:
    with pytest.raises(InputError) as err:
        load_trace(data)
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    return err.value


def test_deeply_nested_json_line():
    deep = (
        b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": '
        + b"[" * 10_000
        + b"]" * 10_000
        + b"}\n"
    )
    err = _error(OK + deep)
    assert err.line == 2


def test_deep_nesting_in_an_unused_field_is_bounded_too():
    deep = (
        b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1], "x": '
        + b"[" * 10_000
        + b"]" * 10_000
        + b"}\n"
    )
    assert _error(OK + deep).line == 2


@pytest.mark.parametrize("field", ["timestamp", "input_length", "output_length"])
def test_numbers_with_thousands_of_digits(field):
    values = {"timestamp": b"0", "input_length": b"10", "output_length": b"1"}
    values[field] = b"9" * 5000
    line = b"{" + b", ".join(b'"%s": %s' % (k.encode(), v) for k, v in values.items()) + b', "hash_ids": [1]}\n'
    err = _error(OK + line)
    assert err.line == 2 and "digits" in str(err)


def test_a_huge_hash_id():
    err = _error(b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [' + b"7" * 400 + b"]}\n")
    assert err.line == 1


def test_csv_date_times_that_mix_time_zones():
    err = _error(CSV_HEAD + b"2023-11-16 18:15:46,374,44\n2023-11-16 18:15:47+01:00,396,109\n")
    assert (err.line, err.field) == (3, "TIMESTAMP") and "time zone" in str(err)


def test_csv_date_times_spanning_centuries_hit_the_ten_year_check():
    err = _error(CSV_HEAD + b"1677-09-22,100,10\n2262-04-11,100,10\n")
    assert (err.line, err.field) == (3, "TIMESTAMP") and "ten years" in str(err)


def test_numeric_spans_use_the_same_check():
    err = _error(
        b'{"timestamp": 0, "input_length": 10, "output_length": 1}\n'
        b'{"timestamp": 400000000000, "input_length": 10, "output_length": 1}\n'
    )
    assert (err.line, err.field) == (2, "timestamp") and "ten years" in str(err)


@pytest.mark.parametrize(
    "value, column",
    [
        ("now", "TIMESTAMP"),
        ("today", "TIMESTAMP"),
        ("1_000", "ContextTokens"),
        ("\u0661\u0662\u0663", "ContextTokens"),
        ("nan", "GeneratedTokens"),
        ("inf", "GeneratedTokens"),
        ("1e400", "GeneratedTokens"),
    ],
)
def test_lenient_csv_values_are_refused(value, column):
    row = {"TIMESTAMP": "2023-11-16 18:15:47", "ContextTokens": "396", "GeneratedTokens": "9"}
    row[column] = value
    data = CSV_HEAD + b"2023-11-16 18:15:46,374,44\n" + ",".join(row.values()).encode() + b"\n"
    err = _error(data)
    assert (err.line, err.field) == (3, column)


def test_lenient_numbers_in_a_numeric_time_column():
    err = _error(b"arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,1\n1_5,10,1\n")
    assert (err.line, err.field) == (3, "arrived_at")


def test_a_200_kb_csv_field_is_cut_in_the_message():
    err = _error(b"timestamp,input_length,output_length\n0,10,1\n5," + b"7" * 200_000 + b",1\n")
    assert err.line == 3


def test_a_header_of_300000_columns():
    err = _error(b",".join(b"c%d" % i for i in range(300_000)) + b"\n1,2,3\n")
    assert err.line == 1


def test_an_unknown_header_is_quoted_briefly():
    err = _error(b",".join(b"x" * 50 for _ in range(200)) + b"\n1,2,3\n")
    assert err.line == 1 and "arrival time" in str(err)


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a device or socket"), ("/dev/null", "a device or socket")])
def test_a_device_is_refused_unread(path, kind):
    with pytest.raises(InputError, match=f"'{path[5:]}' is {kind}, not a regular file"):
        load_trace(path)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # no writer: a blocking open() would wait for ever
    with pytest.raises(InputError, match="'pipe' is a pipe, not a regular file"):
        load_trace(tmp_path / "pipe")


def test_hitcurve_on_dev_zero_is_one_line_exit_2(capsys):
    assert main(["hitcurve", "/dev/zero", "--policies", "lru", "--capacities", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a regular file" in err


def test_a_folder_is_not_a_trace(tmp_path):
    with pytest.raises(InputError, match="folder"):
        load_trace(tmp_path)


def test_messages_never_show_the_path(tmp_path):
    path = tmp_path / "secret-dir" / "t.jsonl"
    path.parent.mkdir()
    path.write_bytes(b'{"timestamp": 0}\n')
    with pytest.raises(InputError) as err:
        load_trace(path)
    assert "secret-dir" not in str(err.value)
