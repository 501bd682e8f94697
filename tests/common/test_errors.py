"""Unexpected errors show the viewer an id, never the exception; the server log has both."""

from __future__ import annotations

import logging
import re
import tomllib
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def _failing_page():
    import streamlit as st

    from ui.kit.errors import guarded

    def page():
        st.write("before")
        raise ValueError("secret /srv/kvviz/path and **markdown**")

    guarded(page, "broken")
    st.write("after")


def _stopping_page():
    import streamlit as st

    from ui.kit.errors import guarded

    def page():
        st.write("before")
        st.stop()

    guarded(page, "stops")
    st.write("never")


def test_viewer_sees_an_id_and_the_log_has_the_traceback(caplog):
    logger = logging.getLogger("kvviz")
    logger.addHandler(caplog.handler)
    try:
        at = AppTest.from_function(_failing_page, default_timeout=30).run()
    finally:
        logger.removeHandler(caplog.handler)
    [shown] = at.exception
    match = re.fullmatch(
        r"Something went wrong \(error id ([0-9a-f]{8})\)\. The server log has the details\.", shown.message
    )
    assert match, shown.message
    assert shown.stack_trace == [] and "secret" not in str(shown.proto)
    [record] = [r for r in caplog.records if match.group(1) in r.getMessage()]
    assert "broken" in record.getMessage() and "secret /srv/kvviz/path" in str(record.exc_info[1])
    assert [m.value for m in at.markdown] == ["before", "after"]


def test_stop_and_rerun_pass_through_the_guard():
    at = AppTest.from_function(_stopping_page, default_timeout=30).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["before"]


def test_streamlit_itself_shows_no_error_details():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"
