"""Tables a page shows, each with a CSV download that says which settings produced it.

A table keeps its columns' short names (the CSV download and the command line's JSON use them); on
the page each name made of words joined by underscores is shown in words (``label``), so the
reader sees "Mean TTFT (s)" where the data says ``mean_ttft_s``. A view whose table must fit a
projector's column gives some columns a short header, the long name in the header's help
(``headers``), or shows a table with one row per policy turned so that each policy is a column
(``turned``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from kvviz.common import export

_UNITS = {"s": "s", "ms": "ms", "gb": "GB", "gib": "GiB", "tb_s": "TB/s", "gb_s": "GB/s", "b": "billions"}
_WORDS = {
    "ttft": "TTFT",
    "tbt": "TBT",
    "slo": "SLO",
    "kv": "KV",
    "gpu": "GPU",
    "cpu": "CPU",
    "hbm": "HBM",
    "mse": "MSE",
    "rel": "relative",
    "attn": "attention",
    "params": "parameters",
    "dim": "dimension",
    "tflops": "TFLOP/s",
    "gbps": "Gb/s",
}
_NAMES = {"d_attn": "Attention width (query heads × head dimension)", "gb_s": "GB/s"}
_PERCENTILE = re.compile(r"p\d")  # p95 stays p95
_UNIT_TAIL = re.compile(r"_(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")$")


def label(column: str) -> str:
    """A column name as the page shows it: words joined by underscores become words, a unit at
    the end goes in brackets ("p95_ttft_s" → "p95 TTFT (s)"); a name without underscores stays."""
    if "_" not in column:
        return column
    if column in _NAMES:
        return _NAMES[column]
    unit = _UNIT_TAIL.search(column)
    stem = column[: unit.start()] if unit else column
    words = " ".join(_WORDS.get(w, w) for w in stem.split("_"))
    words = words if _PERCENTILE.match(words) else words[:1].upper() + words[1:]
    return words + (f" ({_UNITS[unit.group(1)]})" if unit else "")


@dataclass(frozen=True)
class Header:
    """A column's header on the page, short so that the table fits, and what it means (its help)."""

    short: str
    meaning: str


def readable(
    columns: Iterable[str], formats: Mapping[str, str] | None = None, headers: Mapping[str, Header] | None = None
) -> dict:
    """A ``column_config`` that shows every column under its ``label`` (numbers in ``formats``), or
    under its short header in ``headers``, whose meaning its help gives."""
    formats, headers = formats or {}, headers or {}
    config = {}
    for c in map(str, columns):
        header = headers.get(c)
        name, tip = (header.short, header.meaning) if header else (label(c), None)
        if c in formats:
            config[c] = st.column_config.NumberColumn(name, format=formats[c], help=tip)
        elif header:
            config[c] = st.column_config.Column(name, help=tip)
        elif name != c:
            config[c] = name
    return config


def turned(table: pd.DataFrame, key: str, headers: Mapping[str, Header]) -> tuple[pd.DataFrame, dict]:
    """A table with one row per ``key`` (a policy, a scheduler) and a column per measure, turned so
    that each measure is a row and each key a column under its short header: a handful of columns
    that fit a projector where a dozen measures would not. Numbers become text as the table had them
    (thousands separated), right-aligned; returns the table and its ``column_config``."""
    shown = table.set_index(key).T.map(_cell).rename_axis(index="", columns=None).reset_index()
    config = {
        str(k): st.column_config.TextColumn(
            headers[k].short if k in headers else str(k),
            help=headers[k].meaning if k in headers else None,
            alignment="right",
        )
        for k in table[key]
    }
    return shown, config


def _cell(value: object) -> str:
    """A table's value as text: a whole number without decimals, thousands separated; "–" for none."""
    if isinstance(value, str):
        return value
    if pd.isna(value):
        return "–"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def data_table(
    table: pd.DataFrame,
    page: str,
    name: str,
    settings: Mapping[str, object],
    *,
    formats: Mapping[str, str] | None = None,
    headers: Mapping[str, Header] | None = None,
    columns: Sequence[str] | None = None,
    trace: str | None = None,
) -> None:
    """A table of the view (numbers in ``formats``, printf-style, by column; short ``headers``; only
    ``columns`` where given), then its CSV download, every column, headed by the settings (and
    ``trace``) that produced it."""
    config = readable(table.columns, formats, headers)
    st.dataframe(table, hide_index=True, width="stretch", column_config=config, column_order=columns)
    download_csv(table, page, name, settings, trace=trace)


def turned_table(
    table: pd.DataFrame,
    key: str,
    page: str,
    name: str,
    settings: Mapping[str, object],
    *,
    headers: Mapping[str, Header] | None = None,
    trace: str | None = None,
) -> None:
    """A table with one row per ``key`` shown ``turned`` (each key a column), every measure in view, then
    its CSV download, which keeps a row per key."""
    shown, config = turned(table, key, headers or {})
    st.dataframe(shown, hide_index=True, width="stretch", height="content", column_config=config)
    download_csv(table, page, name, settings, trace=trace)


def download_csv(
    table: pd.DataFrame, page: str, name: str, settings: Mapping[str, object], *, trace: str | None = None
) -> None:
    """A "Download CSV" button for a table the page shows; the file starts with the page's
    settings and the trace name (``kvviz.common.export.table_csv``), so it says what produced it."""
    st.download_button(
        f"Download {name} (CSV)",
        export.table_csv(table, page, settings, trace),
        file_name=export.file_name(page, name),
        mime="text/csv",
        icon=":material/download:",
        key=f"kvviz_csv_{page}_{export.file_name(page, name)}",
        on_click="ignore",
    )
