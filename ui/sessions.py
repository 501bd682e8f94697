"""Browser sessions as the server sees them: which one a script run serves, the bytes it
uploaded, whether it is still connected, and closing one for good.

Streamlit (1.67) has no public API for any of these, so this module is the one place kvviz reaches
into its runtime; tests/pages/test_upload_memory.py fails the day these names change.
"""

from __future__ import annotations

import threading

from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.uploaded_file_manager import UploadedFile


def current() -> str | None:
    """The id of the session this script run serves; None outside a script run."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx else None


def uploaded_bytes(file: UploadedFile) -> bytes:
    """An uploaded file's bytes as the server stores them for the session. A widget hands the
    script a deep copy of its value on every run, so holding the stored bytes instead keeps one
    copy of an upload, not two."""
    ctx = get_script_run_ctx(suppress_warning=True)
    stored = ctx.uploaded_file_mgr.get_files(ctx.session_id, [file.file_id]) if ctx else []
    return stored[0].data if stored else file.getvalue()


def connected(session_id: str) -> bool:
    """Whether the session has a browser connected now (a closed tab or a network blip: not).
    With no server in this process nothing can be told, and every session counts as connected."""
    try:
        return bool(runtime.get_instance().is_active_session(session_id))
    except RuntimeError:        # no runtime (AppTest installs a stand-in only while a script runs)
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
