"""The shared frame every page uses: header, presenter mode, figures, teaching sections, errors.

A page reads like Streamlit's demo apps::

    frame.header("eviction", "Hit rate against cache capacity for eight eviction policies.")
    with frame.user_errors():
        result = cached_sweep(...)
    frame.figure(fig_hit_curve(result))
    frame.what_to_notice([...])
    frame.paper_vs_sim(rows, note="...")
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kvviz.catalog import page_info
from kvviz.errors import InputError
from kvviz.style import style_figure

PRESENTER_KEY = "presenter"


def presenter() -> bool:
    """Whether presenter mode (big fonts, explanations folded, wide layout) is on."""
    return bool(st.session_state.get(PRESENTER_KEY, False))


def header(stem: str, what: str) -> None:
    """The page title from the catalog and one line saying what the page shows."""
    st.title(page_info(stem).title)
    st.markdown(f"**{what}**" if presenter() else what)


def explain(markdown: str, label: str = "How it works") -> None:
    """Teaching text: shown inline, or folded into an expander in presenter mode."""
    if presenter():
        with st.expander(label, expanded=False):
            st.markdown(markdown)
    else:
        st.markdown(markdown)


def figure(fig: go.Figure, *, key: str | None = None) -> None:
    """Draw a plotly figure in the kvviz style, full width."""
    style_figure(fig, presenter())
    st.plotly_chart(fig, width="stretch", theme=None, key=key)


def what_to_notice(points: Sequence[str]) -> None:
    """The closing "What to notice" list of a page."""
    st.subheader("What to notice")
    st.markdown("\n".join(f"- {p}" for p in points))


def paper_vs_sim(rows: pd.DataFrame | Sequence[dict], note: str) -> None:
    """What the paper reports beside what this simulation shows, and where they disagree.

    ``rows`` has columns ``quantity``, ``paper``, ``this simulation`` (and optionally ``agree``);
    ``note`` says plainly where and why the two differ.
    """
    st.subheader("What the paper reports vs this simulation")
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    st.dataframe(frame, hide_index=True, width="stretch")
    st.markdown(note)


@contextmanager
def user_errors() -> Iterator[None]:
    """Show bad input as ``st.error`` with its line/field message and stop this page's run.

    Only the project's own ``InputError`` is caught: anything else is a bug and should show.
    """
    try:
        yield
    except InputError as exc:
        st.error(f"{exc}", icon=":material/error:")
        st.stop()
