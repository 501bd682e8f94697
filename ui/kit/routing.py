"""Which page runs, and with which URL parameters: the router's page list, a page run outside it,
unusable URL values, and the parameters a session arrived with.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from kvviz.common.catalog import PAGES, SECTIONS
from ui.kit import streamlit_private

PAGES_DIR = Path(__file__).resolve().parents[2] / "pages"
ARRIVAL_KEY = "kvviz_arrival_params"
_ROUTER = threading.local()  # a session's script runs share one thread: what the router did last


def sections() -> dict[str, list[st.Page]]:
    """The navigation: Home, then every page file the catalog names, under its section.

    ``url_path`` is the file stem: with a ``pages/`` folder, a deep link is first run the legacy
    way (``ensure_navigation``), and only an equal path lands on the same page afterwards.
    """
    nav: dict[str, list[st.Page]] = {
        "": [st.Page(PAGES_DIR / "home.py", title="Home", icon=":material/home:", url_path="home", default=True)]
    }
    for section in SECTIONS:
        for info in PAGES:
            path = PAGES_DIR / f"{info.stem}.py"
            if info.section == section and path.exists():
                nav.setdefault(section, []).append(st.Page(path, title=info.title, icon=info.icon, url_path=info.stem))
    return nav


@contextmanager
def routed() -> Iterator[None]:
    """app.py runs the chosen page inside this, so the page can tell it was routed."""
    _ROUTER.inside, _ROUTER.rerouted = True, False
    try:
        yield
    finally:
        _ROUTER.inside = False


def ensure_navigation() -> None:
    """Make sure this page runs inside app.py's router, not as a legacy ``pages/`` script.

    With a folder named ``pages/`` beside app.py, Streamlit runs a fresh server's first session
    (and every AppTest run) the legacy multipage way: a deep link such as /trace executes
    pages/trace.py without app.py, so the navigation sections and the shared frame are missing.
    Calling ``st.navigation`` switches the server to the router for good (Streamlit ignores the
    folder once an app calls it); the rerun then runs app.py and, the URL path being the file
    stem, lands on the same page. A page run as the main script itself (``streamlit run
    pages/trace.py``) is rerouted once, not forever.
    """
    if getattr(_ROUTER, "inside", False) or getattr(_ROUTER, "rerouted", False):
        _ROUTER.rerouted = False
        return
    _ROUTER.rerouted = True
    st.navigation(sections(), position="hidden")
    st.rerun()


def set_url_param(key: str, value: str | None) -> None:
    """URL parameter ``key`` set to ``value`` (``None``: removed), also when a widget drawn in this
    session is bound to it (``st.query_params`` refuses to change those)."""
    if key in st.session_state:
        streamlit_private.set_url_param(key, value)
    elif value is None:
        del st.query_params[key]
    else:
        st.query_params[key] = value


def drop_unusable_query_params() -> None:
    """Remove URL parameters whose value is a non-finite number (``inf``, ``nan``, ``1e309``), then rerun.

    Streamlit ignores a URL value a bound widget cannot use, except that seeding an integer
    widget from a non-finite number raises inside Streamlit (1.67). Such a value can only be a
    typo or mischief, so it is dropped before any page draws a widget. Widgets are seeded from the
    URL the run started with, so the run starts again from the cleaned URL.
    """
    bad = [key for key in st.query_params if not _finite_or_text(st.query_params[key])]
    for key in bad:
        set_url_param(key, None)
    if bad:
        st.rerun()


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
