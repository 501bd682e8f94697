"""A table as a CSV file that says what produced it: the page, its settings and its trace.

A downloaded table is read later, away from the page: without its settings it is a column of
numbers nobody can reproduce. The settings and the trace name go first, as ``# key: value``
comment lines, then the table. ``settings_lines(data)`` counts them, so
``pandas.read_csv(path, skiprows=n)`` reads the table back whatever its cells hold.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from kvviz.common.catalog import page_info


def _comment(text: object) -> str:
    """One comment line's text: a value that holds a newline must not end the comment."""
    return " ".join(str(text).split())


def table_csv(table: pd.DataFrame, page: str, settings: Mapping[str, object], trace: str | None = None) -> bytes:
    """``table`` as UTF-8 CSV, headed by the page title, the trace name and one line per setting."""
    lines = [f"# kvviz: {page_info(page).title}"]
    if trace is not None:
        lines.append(f"# trace: {_comment(trace)}")
    lines += [f"# {_comment(key)}: {_comment(value)}" for key, value in settings.items()]
    return ("\n".join(lines) + "\n" + table.to_csv(index=False)).encode()


def settings_lines(data: bytes) -> int:
    """How many ``#`` lines head a file made by ``table_csv`` (rows to skip before the table)."""
    count = 0
    for line in data.splitlines():
        if not line.startswith(b"# "):
            break
        count += 1
    return count


def file_name(page: str, table: str) -> str:
    """A download's file name: ``kvviz-<page>-<table>.csv`` in lower case, words joined by ``-``."""
    words = "-".join("".join(c if c.isalnum() else " " for c in table.lower()).split())
    return f"kvviz-{page}-{words}.csv"
