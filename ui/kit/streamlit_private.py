"""Every use kvviz makes of Streamlit's runtime internals, in one place (Streamlit 1.67).

Each function says which public API falls short. tests/pages/test_streamlit_private.py checks
that every name used here still exists and behaves as used, so a Streamlit upgrade that changes
one fails there, not on a viewer's page.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit import runtime
from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.query_params import QueryParams, _coerce_value_for_query_url
from streamlit.runtime.uploaded_file_manager import UploadedFile

__all__ = [
    "close",
    "connected",
    "current",
    "fragment_gone",
    "hidden_bound_values",
    "in_part_run",
    "log",
    "send_view_url",
    "set_url_param",
    "unbind_into_url",
    "uploaded_bytes",
    "widget_defaults",
]

# Widget state types without a default value (buttons, uploaders, chat input).
_NO_DEFAULT = {
    "trigger_value",
    "string_trigger_value",
    "json_trigger_value",
    "chat_input_value",
    "file_uploader_state_value",
}


def log(name: str) -> logging.Logger:
    """A logger that writes to the server log in Streamlit's own format and level (``logging``
    alone would not reach it: Streamlit configures only the loggers it hands out)."""
    return get_logger(name)


# ---------------------------------------------------------------- browser sessions


def current() -> str | None:
    """The id of the session this script run serves; None outside a script run (no public API
    names the session)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx else None


def uploaded_bytes(file: UploadedFile) -> bytes:
    """An uploaded file's bytes as the server stores them for the session. A widget hands the
    script a deep copy of its value on every run, so holding the stored bytes instead keeps one
    copy of an upload, not two (the public widget value is only the copy)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    stored = ctx.uploaded_file_mgr.get_files(ctx.session_id, [file.file_id]) if ctx else []
    return stored[0].data if stored else file.getvalue()


def connected(session_id: str) -> bool:
    """Whether the session has a browser connected now (a closed tab or a network blip: not).
    With no server in this process nothing can be told, and every session counts as connected."""
    try:
        return bool(runtime.get_instance().is_active_session(session_id))
    except RuntimeError:  # no runtime (AppTest installs a stand-in only while a script runs)
        return True


def close(session_id: str, timeout: float = 10.0) -> None:
    """Shut a disconnected session down now, as Streamlit would once its reconnect window ends:
    its session state and uploaded files go. A session that has reconnected in the meantime is
    left alone. From any thread but the server's event loop, where the work runs; returns once it
    is done (or after ``timeout`` seconds)."""
    rt = runtime.get_instance()
    done = threading.Event()

    def close_if_gone() -> None:
        try:
            if not rt.is_active_session(session_id):
                rt.close_session(session_id)
                # A session Streamlit dropped from its store (it keeps 128) was never shut down: its files stay.
                rt.uploaded_file_mgr.remove_session_files(session_id)
        finally:
            done.set()

    rt.stopped.get_loop().call_soon_threadsafe(close_if_gone)
    done.wait(timeout)


def in_part_run() -> bool:
    """Whether this run reruns fragments only (a part of the page), not the whole page. No public
    API says which a run is."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx and ctx.fragment_ids_this_run)


def fragment_gone() -> bool:
    """Whether this run reruns a fragment that the page no longer has (in a widget callback: the
    fragment whose control changed). Streamlit names a fragment after its place on the page and,
    after each full run, forgets the ones that run did not draw in the same place; a rerun of one it
    forgot runs nothing. No public API says which fragments a run reruns or which exist."""
    ctx = get_script_run_ctx(suppress_warning=True)
    ids = ctx.fragment_ids_this_run if ctx else None
    return bool(ids) and not all(ctx.fragment_storage.contains(i) for i in ids)


# ---------------------------------------------------------------- widgets bound to the URL


@contextmanager
def _query_params() -> Iterator[QueryParams | None]:
    """The session's query-parameter store, bindings included (``st.query_params`` hides them)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        yield None
        return
    with ctx.session_state.query_params() as qp:
        yield qp


def _widgets(prefix: str) -> Iterator[tuple[str, str, object]]:
    """(key, widget id, metadata) of this session's widgets whose key starts with ``prefix``."""
    state = get_script_run_ctx().session_state._state
    for key, widget_id in list(state._key_id_mapper._key_id_mapping.items()):
        meta = state._new_widget_state.widget_metadata.get(widget_id)
        if key.startswith(prefix) and meta is not None:
            yield key, widget_id, meta


def widget_defaults(prefix: str) -> dict[str, object]:
    """The default value of each widget whose key starts with ``prefix``. Streamlit keeps them
    nowhere public: each widget's registered deserializer, given no value from the browser,
    returns its default (that is how a new widget gets it). Buttons and uploaders have none."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return {}
    return {key: meta.deserializer(None) for key, _, meta in _widgets(prefix) if meta.value_type not in _NO_DEFAULT}


def hidden_bound_values(prefix: str) -> dict[str, str | list[str] | None]:
    """Widgets of ``prefix`` bound to the URL but not drawn in this run: the URL value of each
    (``None`` at its default), as Streamlit itself would write it. Which widgets were drawn and
    which are bound is public nowhere."""
    return _bound_values(prefix, drawn=False)


def _bound_values(prefix: str, *, drawn: bool | None) -> dict[str, str | list[str] | None]:
    """The URL value of each widget of ``prefix`` bound to the URL and drawn in this run (or not;
    ``None``: either)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return {}
    drawn_ids = ctx.shared.widget_ids_this_run.snapshot()
    bound = ctx.session_state._state._query_param_bound_widget_ids
    values = {}
    for key, widget_id, meta in _widgets(prefix):
        if drawn not in (None, widget_id in drawn_ids) or widget_id not in bound or key not in st.session_state:
            continue
        value = st.session_state[key]
        serialized = meta.serializer(value)
        values[key] = (
            None
            if value == meta.deserializer(None)
            else _coerce_value_for_query_url("" if serialized is None else serialized, meta.value_type)
        )
    return values


def unbind_into_url(values: dict[str, str | list[str] | None]) -> None:
    """Unbind each widget of ``values`` (keys) and write its value into the URL as a plain
    parameter (``None``: out of the URL); the URL goes to the browser only if it changed.
    Streamlit's end-of-run cleanup deletes the parameters of undrawn *bound* widgets, and
    ``st.query_params`` refuses to write a bound one."""
    if not values:
        return
    state = get_script_run_ctx().session_state._state
    with _query_params() as qp:
        before = dict(qp._query_params)
        for key, url_value in values.items():
            qp.unbind_widget(state._key_id_mapper.get_id_from_key(key))
            if url_value is None:
                qp._query_params.pop(key, None)
            else:
                qp._query_params[key] = url_value
        if qp._query_params != before:
            qp._send_query_param_msg()


def send_view_url(prefix: str) -> None:
    """Write each drawn bound widget of ``prefix`` into the URL as it shows now (a default out of
    it) and send the whole URL to the browser, changed or not. In a run of a part of the page
    (a fragment), every bound widget of ``prefix`` is written, the part's and the rest.

    The browser replaces its address with the one the server sends. A run's message that arrives
    after the viewer changed another control drops that control from the address (the run began
    before the change), and the next change's rerun carries the address without it: under load
    a copied link lost controls the page still showed. Sent at the end of every full run, the
    address after the last run is the view again. Streamlit writes a drawn widget into the URL
    only in the browser, when the viewer changes it. A part's run starts from the address its
    change carried too, which can lack a control of the rest of the page (the browser sends the
    address it held before the last full run's message was applied); the part's run draws only
    its own controls, so it writes the others as they are.
    """
    values = _bound_values(prefix, drawn=None if in_part_run() else True)
    with _query_params() as qp:
        if qp is None:
            return
        for key, url_value in values.items():
            if url_value is None:
                qp._query_params.pop(key, None)
            else:
                qp._query_params[key] = url_value
        qp._send_query_param_msg()


def set_url_param(key: str, value: str | None) -> None:
    """Set URL parameter ``key`` to ``value`` (``None``: remove it) while a widget is bound to it,
    which ``st.query_params`` refuses. Outside a script run nothing happens."""
    with _query_params() as qp:
        if qp is None:
            return
        if value is None:
            qp.remove_param(key)
        else:
            qp.set_corrected_value(key, value, "string_value")
