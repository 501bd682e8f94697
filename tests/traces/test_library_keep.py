"""AppTest: "Keep in the trace library" from the web never costs anyone their traces. A Keep that
would need room refuses with a message, a read-only library or bad settings say so in one line
without a folder, and a link to a trace that is gone says so."""

from __future__ import annotations

import pytest

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.conftest import assert_clean, open_page, shown
from tests.traces.library_setup import fresh_library, refuse_writes


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    return fresh_library(tmp_path, monkeypatch)


def _keep(name: str, data: bytes):
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload(name, data, "application/octet-stream").run()
    at.button(key="trace_keep").click().run()
    assert_clean(at)
    return at


def _page_text(at) -> str:
    return " ".join(shown(e.value) for kind in (at.error, at.info, at.warning, at.caption, at.markdown) for e in kind)


def test_a_keep_that_would_need_room_refuses_and_the_lecturers_traces_stay(monkeypatch, tmp_path):
    lecture = library.store(load_trace(fx.jsonl(fx.QWEN)), "lecture").entry
    monkeypatch.setenv(library.CAP_ENV, repr(lecture.bytes * 1.5 / 1e9))
    monkeypatch.setenv(library.WEB_SHARE_ENV, "1")
    at = _keep("visitor.jsonl", fx.jsonl(fx.MOONCAKE))
    [error] = [shown(e.value) for e in at.error]
    assert error.startswith("not kept: the library would hold ") and "keeping a trace never removes other" in error
    assert str(tmp_path) not in _page_text(at)
    assert [e.id for e in library.entries()] == [lecture.id]
    assert at.sidebar.segmented_control(key="trace_source").value == "Upload"


def test_a_kept_trace_is_unpinned_and_keeping_it_again_says_so():
    at = _keep("visitor.jsonl", fx.jsonl(fx.MOONCAKE))
    [entry] = library.entries()
    assert (entry.origin, entry.pinned, entry.name) == ("web", False, "visitor.jsonl")
    assert at.sidebar.selectbox(key="trace_library").value == entry.id
    again = _keep("visitor.jsonl", fx.jsonl(fx.MOONCAKE))
    assert [shown(i.value) for i in again.info] == [f"already in the library as {entry.id}; kept as it was"]


def test_a_read_only_library_says_so_without_its_folder(monkeypatch, tmp_path):
    (tmp_path / "lib").mkdir()
    refuse_writes(monkeypatch)
    at = _keep("visitor.jsonl", fx.jsonl(fx.MOONCAKE))
    assert [shown(e.value) for e in at.error] == [
        "the trace library is read-only here; traces cannot be kept on this server"
    ]
    assert str(tmp_path) not in _page_text(at) and ".tmp-" not in _page_text(at)


@pytest.mark.parametrize("variable", [library.CAP_ENV, library.WEB_SHARE_ENV])
def test_bad_settings_turn_keeping_off_in_words_for_the_visitor(monkeypatch, variable):
    monkeypatch.setenv(variable, "1e400")
    at = _keep("visitor.jsonl", fx.jsonl(fx.MOONCAKE))
    assert [shown(e.value) for e in at.error] == [
        "Keeping traces is off: this server's trace library settings are not valid (whoever runs the server "
        "can fix them)."
    ]
    assert library.entries() == []


def test_a_link_to_a_trace_no_longer_in_the_library_says_so():
    gone = library.store(load_trace(fx.jsonl(fx.QWEN))).entry.id
    kept = library.store(load_trace(fx.jsonl(fx.MOONCAKE))).entry.id
    library.remove(gone)
    at = open_page("eviction", {"eviction_source": "Library", "eviction_library": gone})
    assert_clean(at)
    assert [shown(w.value) for w in at.sidebar.warning] == [
        f"The trace {gone} is not in the library (it was removed, or kept on another server)."
    ]
    assert at.sidebar.selectbox(key="eviction_library").options == [library.entries()[0].label()]
    assert library.entries()[0].id == kept
