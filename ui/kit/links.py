"""The link bar under every page title: copy a link to this exact view, or reset it to defaults.

Every control that changes the view is bound to the URL (``bind="query-params"``), so the
browser's address already *is* the view. "Copy link" copies that address as it is at the moment
of the click (a small same-origin component reads ``window.parent.location``), so it carries
every bound control, presenter mode included. "Reset to defaults" forgets this page's widget
state (keys start with ``<stem>_``): each widget back at its default, and out of the URL.

A view switch (a segmented control) stops drawing the other view's controls. Streamlit 1.67 keeps
an undrawn bound widget's value in the session (drawn again, it has it back) but deletes its
parameter from the URL when the run ends, so a link copied on one view forgot the other's
settings. ``keep_hidden_params`` runs after every page (app.py) and writes each undrawn bound
control of this page back into the URL as a plain parameter (a default stays out): links carry
every view, and the widget, drawn again, is seeded from that same value. (On another page they
stay in the address bar as plain parameters, which that page ignores.)
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import streamlit as st

from ui.kit import routing, streamlit_private
from ui.kit.presenter import PRESENTER_KEY, ROOT_PX

_COPY_HTML = """
<button id="copy" title="Copy a link to this exact view: every control and presenter mode are in it">
  Copy link</button><span id="done" role="status" hidden></span>
<style>
  body {{ margin: 0; padding: 1px; font-family: "Source Sans Pro", "Source Sans 3", sans-serif; overflow: hidden; }}
  button {{ font: inherit; font-size: {size}px; height: {height}px; padding: 0 0.85em; border-radius: 0.5rem;
           cursor: pointer; border: 1px solid rgba(49, 51, 63, 0.2); background: #fff; color: #262730; }}
  button:hover {{ border-color: #0072b2; color: #0072b2; }}
</style>
<script>
  const href = () => window.parent.location.href;
  function fallback(text) {{
    const area = document.createElement("textarea");
    area.value = text; document.body.appendChild(area); area.select();
    const ok = document.execCommand("copy"); area.remove(); return ok;
  }}
  document.getElementById("copy").addEventListener("click", async () => {{
    const text = href(); let ok = false;
    try {{ await navigator.clipboard.writeText(text); ok = true; }} catch (e) {{ ok = fallback(text); }}
    window.parent.kvvizCopiedLink = text;
    document.getElementById("done").textContent = ok ? "Copied" : "Copy this: " + text;
    document.getElementById("copy").textContent = ok ? "Link copied" : "Copy it by hand";
    if (!ok) window.prompt("Copy this link:", text);
  }});
</script>
"""


KEY_STEMS = {"prefix_cache": "prefix"}
"""Pages whose controls' keys start with another word than the page's stem."""


def page_prefix(stem: str) -> str:
    """The prefix of every widget key (and URL parameter) that belongs to page ``stem``."""
    return f"{KEY_STEMS.get(stem, stem)}_"


T = TypeVar("T")
"""A control's codes: the model's own values (a policy's code, a model's id)."""

_RUN = threading.local()
"""The page this script thread runs (``stem``): app.py and each part's run set it, ``stop`` reads it."""


@contextmanager
def view_kept(stem: str) -> Iterator[None]:
    """app.py runs page ``stem`` inside this: once the page has run to its end, its undrawn controls
    go back into the URL (``keep_hidden_params``). A page that ends early calls ``stop``; a run
    stopped or restarted by the viewer's next change writes nothing."""
    _RUN.stem = stem
    yield
    keep_hidden_params(stem)


def keep_hidden_params(stem: str) -> None:
    """After page ``stem`` ran to its end: its undrawn bound controls back in the URL (a default stays out).

    Each undrawn widget is unbound first (a new binding is made when it is drawn again), so
    Streamlit's end-of-run cleanup, which deletes the parameters of undrawn *bound* widgets,
    leaves the value in the address bar. The drawn ones are written as they show, and the whole
    URL goes to the browser: a late message of an earlier run can have dropped one from the address.

    Only from a run that goes on: at its end (``view_kept``) or as it ends itself early (``stop``).
    A run that the viewer's next change stopped goes on in its own thread until its next element,
    while the next run has already started in another: rewriting the session's URL from there would
    race that run.
    """
    streamlit_private.unbind_into_url(streamlit_private.hidden_bound_values(page_prefix(stem)))
    streamlit_private.send_view_url(page_prefix(stem))


def view_fragment(stem: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``st.fragment`` for a part of page ``stem`` that draws controls bound to the URL: each of its
    runs ends, as a full run does, by sending the address with every control of the page. A full run's
    address that reaches the browser after the viewer changed a control of this part drops it, and a
    change here reruns only this part: without this, no later run put it back and a copied link lost it.
    The part's controls take ``on_change=keep_part_change``."""

    def decorate(part: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(part)
        def run(*args, **kwargs) -> None:
            _RUN.stem = stem
            part(*args, **kwargs)
            streamlit_private.send_view_url(page_prefix(stem))

        return st.fragment(run)

    return decorate


def worded(widget: Callable[..., object], label: str, words: Mapping[T, str], key: str, **kwargs) -> object:
    """A choice bound to the URL whose options are ``words`` (code → the words shown): ``widget`` is
    ``st.selectbox``, ``st.radio``, ``st.segmented_control``, ``st.pills`` or ``st.multiselect`` (or a
    column's). Returns the chosen code (a list of codes for a multiselect; ``None`` when nothing is chosen).

    The options are the words themselves, so the URL carries what the reader sees (a ``format_func``
    shows words but leaves Streamlit comparing a URL value or a seed with the codes, and a copied link
    broke). ``default`` is given in codes; a page that sets the control's value in ``st.session_state``
    sets the words. A link naming an option by its code (``write_back``, ``h100``) opens the same view:
    ``in_words`` rewrites it before the control is first drawn."""
    in_words(key, words)
    if "default" in kwargs and kwargs["default"] is not None:
        kwargs["default"] = shown(words, kwargs["default"])
    choice = widget(label, list(words.values()), key=key, **{"bind": "query-params", **kwargs})
    codes = {w: c for c, w in words.items()}
    if isinstance(choice, list):
        return [codes[w] for w in choice if w in codes]
    return codes.get(choice)


def shown(words: Mapping[T, str], code: T | Sequence[T]) -> str | list[str]:
    """The words a ``worded`` control shows for ``code`` (a list for a list of codes)."""
    return [words[c] for c in code] if isinstance(code, list | tuple) else words[code]


def in_words(key: str, words: Mapping[T, str]) -> None:
    """A fresh control ``key`` whose URL value names an option by its code (``str(code)``) has it in words
    and the run starts again: Streamlit seeds a control from the URL its run started with. A value that
    is already words stays (a code spelled like another option's words is read as the words)."""
    if key in st.session_state or key not in st.query_params:
        return
    by_code = {str(c): w for c, w in words.items()}
    raw = st.query_params.get_all(key)
    fixed = [v if v in by_code.values() else by_code.get(v, v) for v in raw]
    if fixed == raw:
        return
    if len(fixed) == 1:
        routing.set_url_param(key, fixed[0])
    else:
        st.query_params[key] = fixed
    st.rerun()


def stop() -> NoReturn:
    """``st.stop`` for a page that ends early (an upload awaited, a view to confirm, a refused input).

    The address goes to the browser first, as at the end of any run: Streamlit sends nothing after
    ``st.stop``, and the address the browser holds can lack a control, dropped by a late message of
    an earlier run under load. Its copied link then lost that control, shown on the page."""
    stem = getattr(_RUN, "stem", None)
    if stem is not None:
        if streamlit_private.in_part_run():
            streamlit_private.send_view_url(page_prefix(stem))
        else:
            keep_hidden_params(stem)
    st.stop()


def keep_part_change() -> None:
    """The ``on_change`` of every control drawn in a ``view_fragment`` part.

    A part's change reruns only the part, and waits for a full run in progress to end. If that run
    drew the part lower on the page (a note appeared above it), Streamlit takes the part for a new
    one and drops the waiting rerun unrun: the page kept the old view under the new value and the
    address lost it. Then the whole page reruns instead, with the new value."""
    if streamlit_private.fragment_gone():
        st.rerun(scope="app")


PART = {"bind": "query-params", "on_change": keep_part_change}
"""The keyword arguments of a control drawn in a ``view_fragment`` part: in the URL, and kept when the part is gone."""


def reset_page(stem: str) -> None:
    """Every control of page ``stem`` back to its default (a button callback, run before the
    widgets are drawn). Setting a bound widget's state to its default also drops its parameter
    from the URL; other state of the page (uploads, selections) is forgotten."""
    prefix = page_prefix(stem)
    defaults = streamlit_private.widget_defaults(prefix)
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        if key in defaults:
            st.session_state[key] = defaults[key]
        else:
            del st.session_state[key]


def copy_button(presenter: bool) -> None:
    """The "Copy link" button: a same-origin component that copies the address bar at click time."""
    size, rem = (round(0.95 * ROOT_PX), ROOT_PX) if presenter else (14, 16)
    st.iframe(
        _COPY_HTML.format(size=json.dumps(size), height=json.dumps(round(2.5 * rem))),
        height=round(2.5 * rem) + 4,
        width=round(size * 7.5),
    )


def link_bar(stem: str) -> None:
    """Copy link and Reset to defaults, side by side under the page title."""
    presenter = bool(st.session_state.get(PRESENTER_KEY, False))
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        copy_button(presenter)
        st.button(
            "Reset to defaults",
            key=f"kvviz_reset_{stem}",
            icon=":material/restart_alt:",
            on_click=reset_page,
            args=(stem,),
            help="Every control of this page back to its default.",
        )
