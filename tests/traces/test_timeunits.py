"""Time-unit notes: only where the unit is in doubt, worded for the command line or for the page."""

from __future__ import annotations

import json

import pytest

from kvviz.cli import main
from kvviz.traces import ReadOptions, TimeUnit, load_trace
from kvviz.traces.timeunits import on_page
from tests import fixtures as fx

FRACTIONS = (
    "the times have fractions and were read as milliseconds (rounded to whole ms); if they are seconds, "
    "choose --time-unit s"
)


def test_date_times_with_sub_millisecond_digits_give_no_note():
    trace = load_trace(fx.AZURE_2023_CSV)
    assert trace.warnings == ()
    assert trace.requests["timestamp"].tolist() == [0, 4315, 3435319]
    assert "times are date-times, kept relative to the first request" in trace.how_read


@pytest.mark.parametrize("command", ["import", "stats"])
def test_the_azure_csv_has_no_warning_in_the_command_line_json(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KVVIZ_TRACES", str(tmp_path / "library"))
    path = tmp_path / "azure.csv"
    path.write_bytes(fx.AZURE_2023_CSV)
    assert main([command, str(path), "--how-read"] if command == "stats" else [command, str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["warnings"] == []


def test_a_unit_the_reader_chose_is_not_in_doubt():
    data = b"".join(b'{"timestamp": %.3f, "input_length": 10, "output_length": 1}\n' % (i * 0.25) for i in range(5))
    assert load_trace(data).warnings == (FRACTIONS,)
    assert load_trace(data, options=ReadOptions(time_unit=TimeUnit.MS)).warnings == ()
    assert load_trace(data, options=ReadOptions(time_unit=TimeUnit.S)).warnings == ()


def test_an_assumed_unit_that_looks_like_an_epoch_in_seconds_is_named():
    data = b'{"timestamp": 1700000000, "input_length": 10, "output_length": 1}\n'
    assert load_trace(data).warnings == (
        "the first time, 1,700,000,000, looks like an epoch time in seconds but was read as milliseconds; "
        "if so, choose --time-unit s",
    )


@pytest.mark.parametrize(
    ("cli", "page"),
    [
        (
            FRACTIONS,
            "the times have fractions and were read as milliseconds (rounded to whole ms); if they are seconds, "
            "set Time unit to s under “How to read the file”",
        ),
        (
            "if the times are in a smaller unit, choose --time-unit ms or us",
            "if the times are in a smaller unit, set Time unit to ms or us under “How to read the file”",
        ),
        (
            "times read as milliseconds (assumed; change with --time-unit)",
            "times read as milliseconds (assumed; change with the Time unit control under “How to read the file”)",
        ),
        ("no block ids: arrivals and lengths only", "no block ids: arrivals and lengths only"),
    ],
)
def test_the_page_names_its_control_where_the_command_line_names_its_option(cli, page):
    assert on_page(cli) == page
