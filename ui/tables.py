"""Tables a page shows, each with a CSV download that says which settings produced it.

A table keeps its columns' short names (the CSV download and the command line's JSON use them); on
the page each name made of words joined by underscores is shown in words (``label``), so the
reader sees "Mean TTFT (s)" where the data says ``mean_ttft_s``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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


def readable(columns: Iterable[str], formats: Mapping[str, str] | None = None) -> dict:
    """A ``column_config`` that shows every column under its ``label`` (numbers in ``formats``)."""
    formats = formats or {}
    return {
        c: st.column_config.NumberColumn(label(c), format=formats[c]) if c in formats else label(c)
        for c in map(str, columns)
        if c in formats or label(c) != c
    }


def data_table(
    table: pd.DataFrame,
    page: str,
    name: str,
    settings: Mapping[str, object],
    *,
    formats: Mapping[str, str] | None = None,
    trace: str | None = None,
) -> None:
    """A table of the view (numbers in ``formats``, printf-style, by column), then its CSV download
    headed by the settings (and ``trace``) that produced it."""
    st.dataframe(table, hide_index=True, width="stretch", column_config=readable(table.columns, formats))
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
