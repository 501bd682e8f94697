"""AppTest: the trace follows the viewer from page to page, and every page's URL names it.

A trace chosen or kept in the library on one page is the one the other replay pages open on; a
library trace's id is in each page's URL, so a link copied there opens it in a fresh session.
"""

from __future__ import annotations

import pytest

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.conftest import LENGTHS_ONLY, assert_clean, open_page, open_with_session_trace

SMALL_CURVE = {"eviction_points": "4", "eviction_range": ["100", "1k"]}


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "lib"))


def _source(at, prefix: str) -> str:
    return at.sidebar.segmented_control(key=f"{prefix}_source").value


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_kept_upload_is_the_trace_of_the_other_pages_and_of_their_links():
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("kept.jsonl", fx.jsonl(fx.QWEN), "text/plain").run()
    at.button(key="trace_keep").click().run()
    [entry] = library.entries()
    for stem, prefix in (("eviction", "eviction"), ("prefix_cache", "prefix")):
        for key, value in SMALL_CURVE.items():
            at.query_params[key] = value
        at.switch_page(f"pages/{stem}.py").run()
        assert_clean(at)
        assert _source(at, prefix) == "Library"
        assert at.sidebar.selectbox(key=f"{prefix}_library").value == entry.id
        assert at.query_params[f"{prefix}_source"] == "Library"
        assert at.query_params[f"{prefix}_library"] == entry.id
        assert "kept" in _captions(at)
    link = {key: at.query_params[key] for key in ("prefix_source", "prefix_library")}
    fresh = open_page("prefix_cache", link)  # the copied link, in a browser that never saw the trace
    assert_clean(fresh)
    assert fresh.sidebar.selectbox(key="prefix_library").value == entry.id and "kept" in _captions(fresh)


def test_a_trace_chosen_on_a_replay_page_is_the_one_the_trace_page_and_others_open_on():
    at = open_page("eviction", SMALL_CURVE)
    at.sidebar.segmented_control(key="eviction_source").set_value("Example").run()
    at.switch_page("pages/trace.py").run()
    assert_clean(at)
    assert _source(at, "trace") == "Example" and "example trace" in _captions(at)
    at.sidebar.segmented_control(key="trace_source").set_value("Synthetic").run()
    at.sidebar.number_input(key="trace_requests").set_value(300).run()
    at.switch_page("pages/eviction.py").run()
    assert_clean(at)
    assert _source(at, "eviction") == "Synthetic"
    assert at.sidebar.number_input(key="eviction_requests").value == 300
    assert at.query_params["eviction_requests"] == "300"  # the link carries the generator's knobs


def test_a_library_trace_named_by_a_link_follows_to_the_radix_trace_mode():
    entry = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "imported").entry
    at = open_page("eviction", {**SMALL_CURVE, "eviction_source": "Library", "eviction_library": entry.id})
    at.query_params["radix_source"] = "Trace"
    at.switch_page("pages/radix.py").run()
    assert_clean(at)
    assert at.query_params["radix_library"] == entry.id and "one 512-token block" in _captions(at)
    fresh = open_page("radix", {"radix_source": "Trace", "radix_library": entry.id})
    assert_clean(fresh)
    assert not fresh.info and "one 512-token block" in _captions(fresh)  # Mooncake's blocks, not the presets'


def test_a_link_to_a_trace_no_longer_in_the_library_says_so_and_keeps_nothing():
    at = open_page("radix", {"radix_source": "Trace", "radix_library": "0123456789abcdef"})
    assert_clean(at)
    assert at.error and "0123456789abcdef" in at.error[0].value
    assert "kvviz_trace_spec" not in at.session_state


def test_a_trace_without_block_ids_is_refused_with_the_reason_on_a_replay_page():
    at = open_with_session_trace("eviction", LENGTHS_ONLY)
    assert_clean(at)
    [error] = at.error
    assert "lengths only" in error.value and "no block ids" in error.value
    assert "needs to know which blocks" in error.value
    at.sidebar.segmented_control(key="eviction_source").set_value("Example").run()
    assert_clean(at)
    assert not at.error
