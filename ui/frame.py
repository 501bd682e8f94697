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

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from kvviz.common import budget, export, glossary
from kvviz.common.catalog import page_info
from kvviz.common.errors import InputError
from kvviz.common.style import style_figure
from ui import links
from ui.presenter import PRESENTER_KEY

T = TypeVar("T")
R = TypeVar("R")


def presenter() -> bool:
    """Whether presenter mode (big fonts, explanations folded, wide layout) is on."""
    return bool(st.session_state.get(PRESENTER_KEY, False))


def ensure_navigation() -> None:
    """Make sure this page runs inside app.py's router, not as a legacy ``pages/`` script.

    With a folder named ``pages/`` beside app.py, Streamlit runs a fresh server's first session
    (and every AppTest run) the legacy multipage way: a deep link such as /trace executes
    pages/trace.py without app.py, so the navigation sections and the shared frame are missing.
    Switching the server to st.navigation and rerunning fixes it; the URL path equals the file
    stem, so the rerun lands on the same page.
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def drop_unusable_query_params() -> None:
    """Remove URL parameters whose value is a non-finite number (``inf``, ``nan``, ``1e309``).

    Streamlit ignores a URL value a bound widget cannot use, except that seeding an integer
    widget from a non-finite number raises inside Streamlit (1.67). Such a value can only be a
    typo or mischief, so it is dropped before any page draws a widget: from the URL and from the
    snapshot Streamlit seeds widgets from (a private field; tests/pages/test_url_params.py guards it).
    A parameter already bound to a widget (a rerun, a page switch) cannot be deleted through
    ``st.query_params``; Streamlit's own unchecked removal is used then.
    """
    bad = [key for key in st.query_params if not _finite_or_text(st.query_params[key])]
    if not bad:
        return
    ctx = get_script_run_ctx()
    for key in bad:
        if ctx is None:
            del st.query_params[key]
            continue
        with ctx.session_state.query_params() as qp:
            qp.remove_param(key)
            qp._initial_query_params.pop(key, None)


ARRIVAL_KEY = "kvviz_arrival_params"


def arrival_params() -> dict[str, str]:
    """The URL parameters this browser session arrived with, recorded on its first run.

    They tell a link apart from a click: a session that arrives with ``trace_source=Upload`` (a
    shared link, or the reconnect after a server restart) has no upload yet, while one that
    clicked "Upload" is simply about to make one. app.py calls this on every run.
    """
    return st.session_state.setdefault(ARRIVAL_KEY, {key: st.query_params[key] for key in st.query_params})


def _finite_or_text(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return True


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^&])")
PLAIN_LIMIT = 300


def plain(text: object, limit: int = PLAIN_LIMIT, *, bold: bool = False) -> str:
    """User content (a file name, a CSV header, a message quoting a field) made safe to show in
    markdown: cut to ``limit`` characters and every markdown character escaped, so a name such as
    ``![x](http://host/p.png)`` shows as text and never makes a viewer's browser fetch anything.
    With ``bold``, ``**`` stays bold (for core text that marks names in bold around user words)."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit:,} more characters)"
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", text.replace("\n", " "))
    return escaped.replace(r"\*\*", "**") if bold else escaped


def confirm_cost(cost: budget.Cost, key: str) -> None:
    """Run long work only after a click: show the estimate and stop until the viewer asks for it.

    Work over the hard limit is refused with the knob to turn. A confirmed cost is remembered in
    this session, so reruns of the same view (its result is cached by then) do not ask again.
    """
    budget.check(cost)
    if not budget.needs_confirmation(cost):
        return
    confirmed = st.session_state.setdefault("kvviz_confirmed_costs", set())
    token = f"{key}:{cost}"
    if token in confirmed:
        return
    st.info(f"This view is expensive — {plain(cost.describe())}. Reduce {plain(cost.knob)} for an instant "
            "view, or run it as it is.", icon=":material/hourglass_top:")
    # The click is recorded by a callback, before the rerun it causes: a rerun that restarts the
    # script (ensure_navigation) would otherwise lose the button's one-run True.
    st.button("Run it", key=f"{key}_confirm", type="primary", on_click=confirmed.add, args=(token,))
    st.stop()


def header(stem: str, what: str) -> None:
    """The page title from the catalog and one line saying what the page shows."""
    ensure_navigation()
    st.title(page_info(stem).title)
    links.link_bar(stem)
    st.markdown(f"**{what}**" if presenter() else what)


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

    ``rows`` are built with ``kvviz.common.paper`` (columns ``quantity``, ``paper``, ``this
    simulation``, ``status``, ``basis``): the status (agrees / differs / input / calibrated) is
    computed from the numbers, and the basis says how. ``note`` says plainly where and why the two
    differ.
    """
    st.subheader("What the paper reports vs this simulation")
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    st.table(frame.set_index(frame.columns[0]))
    st.markdown(note)


def data_table(table: pd.DataFrame, page: str, name: str, settings: Mapping[str, object], *,
               formats: Mapping[str, str] | None = None, trace: str | None = None) -> None:
    """A table of the view (numbers in ``formats``, printf-style, by column), then its CSV download
    headed by the settings (and ``trace``) that produced it."""
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format=f) for c, f in (formats or {}).items()})
    download_csv(table, page, name, settings, trace=trace)


def download_csv(table: pd.DataFrame, page: str, name: str, settings: Mapping[str, object], *,
                 trace: str | None = None) -> None:
    """A "Download CSV" button for a table the page shows; the file starts with the page's
    settings and the trace name (``kvviz.common.export.table_csv``), so it says what produced it."""
    st.download_button(f"Download {name} (CSV)", export.table_csv(table, page, settings, trace),
                       file_name=export.file_name(page, name), mime="text/csv", icon=":material/download:",
                       key=f"kvviz_csv_{page}_{export.file_name(page, name)}", on_click="ignore")


def terms(*names: str) -> None:
    """A "Terms" popover defining the jargon a view uses (``kvviz.common.glossary``)."""
    with st.popover("Terms", icon=":material/menu_book:"):
        st.markdown("\n\n".join(glossary.define(name) for name in names))


def stepped(label: Callable[[T], str], steps: Sequence[T], run: Callable[[T], R]) -> list[R]:
    """``run(step)`` for every step, with a progress bar drawn here, by the page.

    ``run`` is typically a cached function of one step. The bar must never go into a cached
    function: Streamlit replays a cached function's elements on a cache hit, and a bar from an
    earlier run no longer exists, so the view would crash on rerun and for the next visitor.
    """
    bar = st.progress(0.0, text=label(steps[0]) if steps else "")
    results = []
    for i, step in enumerate(steps):
        bar.progress(i / len(steps), text=label(step))
        results.append(run(step))
    bar.empty()
    return results


@contextmanager
def user_errors() -> Iterator[None]:
    """Show bad input as ``st.error`` with its line/field message and stop this page's run.

    Only the project's own ``InputError`` is caught: anything else is a bug and should show.
    """
    try:
        yield
    except InputError as exc:
        st.error(plain(exc, 500), icon=":material/error:")
        st.stop()
