"""Browser: a trace opened on one page is still there after a visit to other pages, whatever its
source, and following it from page to page leaves nothing in the server's log.

The browser drops a page's parameters from the address when another page opens, and Streamlit a
widget's state when its page is not drawn: a library trace opened by a link once came back as
"Pick a stored trace", and each picker that followed the session's trace logged a stack trace.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.e2e.browser import assert_no_exception, open_page, streamlit_process, wait_idle
from tests.traces.library_setup import fresh_library

AWAY = (("Eviction hit curves", "eviction"), ("Home", ""), ("Prefix-cache replay", "prefix_cache"))


def _go(page: Page, name: str, stem: str) -> None:
    """Open a page from the sidebar's navigation, as a visitor does, and wait until it has drawn."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile(f"^{name}$")).first.click()
    page.wait_for_url(re.compile(f"/{stem}(\\?|$)"))
    page.locator("h1").first.wait_for()
    wait_idle(page)
    assert_no_exception(page)


def _away_and_back(page: Page, name: str, stem: str) -> None:
    _go(page, name, stem)
    _go(page, "Trace", "trace")


def test_a_trace_survives_other_pages_and_following_it_logs_nothing(undrawn: Page, tmp_path, monkeypatch):
    page = undrawn  # what is checked is the address, the pickers and the log: no figure or grid is drawn
    fresh_library(tmp_path, monkeypatch)  # the server inherits this library
    kept = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "kept-by-link").entry.id
    upload = tmp_path / "mine.jsonl"
    upload.write_bytes(fx.jsonl(fx.MOONCAKE))
    requests = str(load_trace(upload).n_requests)
    with open(tmp_path / "server.log", "w+") as log, streamlit_process(log=log) as (url, server):
        sidebar = page.get_by_test_id("stSidebar")

        open_page(page, url, "trace", f"trace_source=Library&trace_library={kept}")
        for name, stem in AWAY:
            _away_and_back(page, name, stem)
            expect(page).to_have_url(re.compile(f"trace_library={kept}"))
            expect(sidebar.get_by_role("combobox", name="Library trace")).to_have_value(re.compile("^kept-by-link · "))
            expect(page.get_by_text("Pick a trace from the library")).to_have_count(0)

        open_page(page, url, "trace", "trace_source=Synthetic&trace_seed=5&trace_requests=300")
        _away_and_back(page, *AWAY[0])
        expect(page).to_have_url(re.compile("trace_seed=5"))
        expect(page).to_have_url(re.compile("trace_requests=300"))

        open_page(page, url, "trace", "trace_source=Upload")
        sidebar.locator("input[type=file]").set_input_files(str(upload))
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(requests)
        wait_idle(page)
        _away_and_back(page, *AWAY[0])
        expect(page.get_by_text("Showing the trace you uploaded earlier in this session.")).to_be_visible()
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(requests)
        page.goto("about:blank")  # the session ends, as a closed tab's does

        assert server.poll() is None
        log.seek(0)
        said = log.read()
        assert "Session State API" not in said and "Traceback" not in said, said[-2000:]
