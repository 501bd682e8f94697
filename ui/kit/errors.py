"""Errors a viewer sees: bad input as its message, unexpected errors as a short id.

Bad input (the project's ``InputError``) shows its line/field message and stops the page's run
(``user_errors``). Anything else is unexpected: a short message with an error id for the viewer,
the traceback in the server log (``guarded``).

Streamlit's own ``client.showErrorDetails`` is "none" (``.streamlit/config.toml``), so an error that
escapes even this guard shows only Streamlit's generic sentence. The guard does better: the viewer
reads an id they can quote, and the log line with the full traceback carries the same id.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from kvviz.common.errors import InputError, SettingError
from ui.kit import links, streamlit_private
from ui.kit.text import plain

LOG = streamlit_private.log("kvviz")


SETTING_BROKEN = (
    "This view is off: a setting of this server is not valid (whoever runs the server can fix it; its log names it)."
)


class PageFailed(Exception):
    """What the viewer sees instead of the exception: no message, path or frame from the server."""


def guarded(run: Callable[[], object], where: str) -> None:
    """Run a page; an unexpected exception is logged with a short id and shown as that id.

    Streamlit's control flow (``st.stop``, ``st.rerun``, ``st.switch_page``) raises
    ``ScriptControlException``, a ``BaseException``, so it passes through untouched. The viewer's
    element is an ``st.exception`` of a ``PageFailed`` that was never raised (so it has no frames):
    tests that look for exceptions on a page still see it.
    """
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - the whole point: nothing unexpected reaches the viewer raw
        error_id = secrets.token_hex(4)
        LOG.error("error id %s: %s on page %r", error_id, type(exc).__name__, where, exc_info=exc)
        st.exception(PageFailed(f"Something went wrong (error id {error_id}). The server log has the details."))


@contextmanager
def user_errors() -> Iterator[None]:
    """Show bad input as ``st.error`` with its line/field message and stop this page's run.

    Only the project's own ``InputError`` is caught: anything else is a bug and should show. A server
    setting that is not valid (a ``SettingError``) is the operator's to fix: the viewer reads that,
    the server log names the variable.
    """
    try:
        yield
    except SettingError as exc:
        LOG.error("%s", exc)
        st.error(SETTING_BROKEN, icon=":material/error:")
        links.stop()
    except InputError as exc:
        st.error(plain(exc, 500), icon=":material/error:")
        links.stop()
