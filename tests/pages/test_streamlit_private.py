"""ui.kit.streamlit_private: every Streamlit internal kvviz uses still exists and behaves as used.

A Streamlit upgrade that renames, removes or reshapes one fails here. The widget and URL
functions run inside a small app (AppTest), as the pages run them.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging

from streamlit.testing.v1 import AppTest

from ui.kit import streamlit_private

TRACE = b'{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'


def test_the_streamlit_internals_used_for_sessions_are_there():
    """The session functions call these; a Streamlit upgrade that renames or reshapes them fails here."""
    from streamlit.runtime import Runtime, exists, get_instance
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext
    from streamlit.runtime.uploaded_file_manager import UploadedFileManager

    assert callable(exists) and callable(get_instance)
    assert "suppress_warning" in inspect.signature(get_script_run_ctx).parameters
    assert "session_id" in {f.name for f in dataclasses.fields(ScriptRunContext)}
    assert list(inspect.signature(Runtime.is_active_session).parameters) == ["self", "session_id"]
    assert list(inspect.signature(Runtime.close_session).parameters) == ["self", "session_id"]
    assert list(inspect.signature(UploadedFileManager.remove_session_files).parameters) == ["self", "session_id"]
    assert isinstance(inspect.getattr_static(Runtime, "uploaded_file_mgr"), property)
    assert isinstance(inspect.getattr_static(Runtime, "stopped"), property)


def test_an_upload_is_held_as_the_server_stores_it_not_as_the_widgets_copy(monkeypatch):
    import copy
    from types import SimpleNamespace

    from streamlit.proto.Common_pb2 import FileURLs
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    store = MemoryUploadedFileManager("/upload")
    stored = UploadedFileRec("file-1", "mine.jsonl", "application/json", TRACE * 1000)
    store.add_file("s1", stored)
    widget_value = copy.deepcopy(UploadedFile(stored, FileURLs()))  # what a script run gets
    assert widget_value.getvalue() == stored.data and widget_value.getvalue() is not stored.data
    monkeypatch.setattr(
        streamlit_private,
        "get_script_run_ctx",
        lambda suppress_warning: SimpleNamespace(uploaded_file_mgr=store, session_id="s1"),
    )
    assert streamlit_private.uploaded_bytes(widget_value) is stored.data


def test_outside_a_server_every_session_counts_as_connected():
    assert streamlit_private.current() is None
    assert streamlit_private.connected("any") is True


# --- widgets bound to the URL


def _two_controls() -> None:
    """A page with two bound controls, the first drawn only while ``show``; it records what the
    private functions see, and moves hidden values into the URL when asked."""
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from ui.kit import streamlit_private as sp

    if st.session_state.get("show", True):
        st.slider("n", 0, 10, 3, key="demo_n", bind="query-params")
    st.number_input("m", 0.0, 100.0, 7.5, key="demo_m", bind="query-params")
    st.toggle("flag", key="flag", bind="query-params")
    st.session_state["defaults"] = sp.widget_defaults("demo_")
    st.session_state["hidden"] = sp.hidden_bound_values("demo_")
    if st.session_state.get("unbind"):
        sp.unbind_into_url(st.session_state["hidden"])
    if st.session_state.get("send"):
        sp.send_view_url("demo_")
        st.session_state["sent"] = get_script_run_ctx().query_string
    if "flag_to" in st.session_state:
        sp.set_url_param("flag", st.session_state.pop("flag_to"))


def test_widget_defaults_are_what_each_widget_starts_with():
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    assert not at.exception
    assert at.session_state["defaults"] == {"demo_n": 3, "demo_m": 7.5}
    assert at.session_state["hidden"] == {}


def test_an_undrawn_bound_widget_is_found_with_its_url_value_and_moved_into_the_url():
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    at.slider(key="demo_n").set_value(5).run()
    at.session_state["show"] = False
    at.run()
    assert at.session_state["hidden"] == {"demo_n": ["5"]}  # as Streamlit writes a slider in a URL
    at.session_state["unbind"] = True
    at.run()
    assert not at.exception and at.query_params["demo_n"] == "5"  # Streamlit alone would delete it


def test_an_undrawn_widget_at_its_default_stays_out_of_the_url():
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    at.session_state["show"] = False
    at.session_state["unbind"] = True
    at.run()
    assert at.session_state["hidden"] == {"demo_n": None}
    assert "demo_n" not in at.query_params


def test_the_drawn_controls_are_written_into_the_url_as_they_show():
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    at.slider(key="demo_n").set_value(5).run()
    assert "demo_n" not in at.query_params  # Streamlit writes it only in a browser
    at.session_state["send"] = True
    at.run()
    assert not at.exception and at.query_params["demo_n"] == "5"
    assert "demo_m" not in at.query_params  # a default stays out


def test_a_part_of_the_page_sends_the_rest_of_the_pages_controls_too(monkeypatch):
    """A part's run starts from the address its change carried, which can lack a control drawn
    outside the part; it sends that control as it is (here: the slider, not drawn in this run)."""
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    at.slider(key="demo_n").set_value(5).run()  # not in the address: Streamlit writes it only in a browser
    at.session_state["show"] = False
    at.session_state["send"] = True
    monkeypatch.setattr(streamlit_private, "in_part_run", lambda: True)
    at.run()
    assert not at.exception and "demo_n=5" in at.session_state["sent"].split("&")
    monkeypatch.setattr(streamlit_private, "in_part_run", lambda: False)
    at.run()  # a full run sends what it drew
    assert "demo_n" not in at.session_state["sent"]


def test_a_bound_url_parameter_can_be_set_and_removed():
    at = AppTest.from_function(_two_controls, default_timeout=30).run()
    at.session_state["flag_to"] = "true"
    at.run()
    assert not at.exception and at.query_params["flag"] == "true"  # st.query_params refuses: it is bound
    at.toggle(key="flag").set_value(True).run()
    at.session_state["flag_to"] = None
    at.run()
    assert not at.exception and "flag" not in at.query_params


def test_set_url_param_outside_a_script_run_does_nothing():
    streamlit_private.set_url_param("anything", "1")
    assert streamlit_private.widget_defaults("demo_") == {}
    assert streamlit_private.hidden_bound_values("demo_") == {}


def test_the_log_is_streamlits_own():
    log = streamlit_private.log("kvviz")
    assert isinstance(log, logging.Logger) and log.name == "kvviz"
    assert log.handlers and log.propagate is False


def test_apptest_scans_for_components_through_the_scanner_the_tests_cache():
    """tests/conftest.py answers AppTest's scan for installed components once per process; if AppTest
    stops scanning through this function, the cache is dead code and the page tests slow down unseen."""
    from streamlit.components.v2 import manifest_scanner
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.testing.v1 import app_test

    assert "discover_and_register_components" in inspect.getsource(app_test.AppTest._run)
    assert "manifest_scanner import" in inspect.getsource(BidiComponentManager.discover_and_register_components)
    AppTest.from_string("import streamlit").run()
    assert manifest_scanner.scan_component_manifests.cache_info().currsize == 1


def test_a_rerun_of_a_fragment_the_page_no_longer_has_is_told_apart(monkeypatch):
    """fragment_gone reads the run's fragment ids and the runner's fragment storage: a Streamlit upgrade
    that renames either fails here, and the answer is true only for a fragment the storage lost.
    in_part_run reads the same ids: true only in a run of fragments."""
    from types import SimpleNamespace

    from streamlit.runtime.fragment import MemoryFragmentStorage
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    fields = {f.name for f in dataclasses.fields(ScriptRunContext)}
    assert {"fragment_ids_this_run", "fragment_storage"} <= fields
    storage = MemoryFragmentStorage()
    storage.register("kept", lambda: None)
    assert storage.contains("kept") and not storage.contains("lost")

    def run_of(ids):
        ctx = SimpleNamespace(fragment_ids_this_run=ids, fragment_storage=storage)
        monkeypatch.setattr(streamlit_private, "get_script_run_ctx", lambda suppress_warning=False: ctx)

    run_of(["kept"])
    assert not streamlit_private.fragment_gone() and streamlit_private.in_part_run()
    run_of(["kept", "lost"])
    assert streamlit_private.fragment_gone()
    run_of(None)  # a full run
    assert not streamlit_private.fragment_gone() and not streamlit_private.in_part_run()
    monkeypatch.setattr(streamlit_private, "get_script_run_ctx", lambda suppress_warning=False: None)
    assert not streamlit_private.fragment_gone() and not streamlit_private.in_part_run()
