"""Tables a page shows, each with a CSV download that says which settings produced it."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from kvviz.common import export


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
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format=f) for c, f in (formats or {}).items()},
    )
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
