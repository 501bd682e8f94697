"""The frame every page shares: its header, presenter mode, teaching text and closing sections.

A page reads like Streamlit's demo apps::

    frame.header("eviction", "Hit rate against cache capacity for eight eviction policies.")
    with errors.user_errors():
        result = cached_sweep(...)
    figures.figure("eviction.fig_hit_curve", result, key="eviction_curve")
    frame.what_to_notice([...])
    frame.paper_vs_sim(rows, note="...")
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from kvviz.common import glossary
from kvviz.common.catalog import page_info
from ui.exercises import panel as exercises
from ui.kit import links
from ui.kit.presenter import PRESENTER_KEY
from ui.kit.routing import ensure_navigation


def presenter() -> bool:
    """Whether presenter mode (big fonts, explanations folded, wide layout) is on."""
    return bool(st.session_state.get(PRESENTER_KEY, False))


def header(stem: str, what: str) -> None:
    """The page title from the catalog, one line saying what the page shows, and the exercise its link names."""
    ensure_navigation()
    st.title(page_info(stem).title)
    links.link_bar(stem)
    st.markdown(f"**{what}**" if presenter() else what)
    exercises.panel(stem)


def explain(markdown: str, label: str = "How it works") -> None:
    """Teaching text: shown inline, or folded into an expander in presenter mode."""
    if presenter():
        with st.expander(label, expanded=False):
            st.markdown(markdown)
    else:
        st.markdown(markdown)


def folded(label: str, key: str) -> DeltaGenerator | None:
    """An expander whose content is drawn only while it is open, its state in the URL (``key``); None
    while closed. For detail tables under a figure: each costs the browser about as much as a figure
    whenever its view opens, so it waits for a click."""
    box = st.expander(label, key=key, bind="query-params")
    return box if box.open else None


def what_to_notice(points: Sequence[str]) -> None:
    """The closing "What to notice" list of a page."""
    st.subheader("What to notice")
    st.markdown("\n".join(f"- {p}" for p in points))


def paper_vs_sim(rows: pd.DataFrame | Sequence[dict], note: str) -> None:
    """What the paper reports beside what this simulation shows, and where they disagree.

    ``rows`` are built with ``kvviz.common.paper`` (columns ``quantity``, ``paper``, ``this
    simulation``, ``status``, ``basis``): the status (agrees / differs / input / calibrated) is
    computed from the numbers, and the basis says how. ``note`` says plainly where and why the two
    differ.
    """
    st.subheader("What the paper reports vs this simulation")
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    st.table(frame.set_index(frame.columns[0]))
    st.markdown(note)


def terms(*names: str) -> None:
    """A "Terms" popover defining the jargon a view uses (``kvviz.common.glossary``)."""
    with st.popover("Terms", icon=":material/menu_book:"):
        st.markdown("\n\n".join(glossary.define(name) for name in names))
