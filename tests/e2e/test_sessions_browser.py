"""Browser: five visitors upload five different traces at the same time; each sees only their own;
after a server restart an open page says what it lost; and a closed tab's upload leaves the server.

An upload stays in the uploader's session, while parsing is cached across sessions on the bytes:
a cache keyed on anything less (the file name, the widget) would show one visitor another's trace.
The traces differ in their request count, which the Trace page shows as its first metric.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

from playwright.sync_api import Page, expect

from tests.e2e.browser import (
    TIMEOUT,
    assert_no_exception,
    free_port,
    open_page,
    streamlit_server,
    wait_idle,
    with_drawing,
    without_drawing,
)
from ui.kit.uploads import GRACE_ENV, SWEEP_ENV

VISITORS = 5
LOST = "Your upload was kept only in your browser session"


def trace_of(requests: int) -> bytes:
    """A small valid Mooncake trace with ``requests`` requests (one or two 512-token blocks each)."""
    lines = [
        {"timestamp": 100 * i, "input_length": 600 + 10 * i, "output_length": 5, "hash_ids": [0, 1 + i]}
        for i in range(requests)
    ]
    return "\n".join(json.dumps(line) for line in lines).encode() + b"\n"


def wait_shown(page: Page) -> None:
    """Wait until a run of the Trace page that shows a trace has ended.

    After ``set_input_files`` the browser first sends the file and only then asks for a run: until
    that run begins the page reads idle and still shows the view before the upload, so
    ``wait_idle`` alone can return before the upload's run has started (likewise after a click in
    the navigation, with the page left). The download button, drawn only for a trace and after the
    metrics, says the run has begun and got past them; ``wait_idle`` then waits for it to end. The
    run has as long to get there as ``wait_idle`` gives a run (five visitors' runs share the server)."""
    expect(page.get_by_text("Download trace (JSONL)")).to_be_visible(timeout=TIMEOUT)
    wait_idle(page)


def test_concurrent_uploads_stay_in_their_sessions(page: Page, app_url: str):
    """The five visitors are five tabs: five connections, so five sessions of the server, which is
    all the server tells visitors apart by (a browser context of its own for each would also load
    and compile the app's scripts anew, most of this test's cost). The worker's tab is the first,
    and the others open in its browser, whose cache holds the app already."""
    context = page.context
    without_drawing(context)  # what each visitor sees is read from the numbers: no figure or grid is drawn
    pages = [page] + [context.new_page() for _ in range(VISITORS - 1)]
    try:
        for tab in pages:
            open_page(tab, app_url, "trace", "trace_source=Upload")
        counts = [3 + 2 * i for i in range(VISITORS)]  # 3, 5, 7, 9, 11 requests
        for tab, n in zip(pages, counts):  # all uploads start before any is checked
            tab.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
                files=[{"name": "mine.jsonl", "mimeType": "application/json", "buffer": trace_of(n)}]
            )
        for tab, n in zip(pages, counts):
            wait_shown(tab)
            assert_no_exception(tab)
            expect(tab.get_by_test_id("stMetricValue").first).to_have_text(str(n))
        for tab in pages:  # and after going elsewhere and back
            tab.get_by_test_id("stSidebarNav").get_by_text("Home", exact=True).click()
            wait_idle(tab)
        for tab in pages:
            assert_no_exception(tab)
            tab.get_by_test_id("stSidebarNav").get_by_text("Trace", exact=True).click()
        for tab, n in zip(pages, counts):
            wait_shown(tab)
            assert_no_exception(tab)
            expect(tab.get_by_test_id("stMetricValue").first).to_have_text(str(n))
    finally:
        for tab in pages[1:]:
            tab.close()
        with_drawing(context)


def test_after_a_server_restart_the_page_says_what_was_lost(undrawn: Page):
    """The page is idle when the server stops (its last element drawn, the run over), the case where
    Streamlit's client does not rerun on its own after reconnecting: ui.kit.traces makes it rerun.
    What is read is the message and the numbers: no figure or grid is drawn."""
    page = undrawn
    port = free_port()
    with streamlit_server(port) as url:
        open_page(page, url, "trace")
        page.get_by_test_id("stSidebar").get_by_text("Upload", exact=True).click()
        wait_idle(page)
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
            files=[{"name": "mine.jsonl", "mimeType": "application/json", "buffer": trace_of(4)}]
        )
        wait_shown(page)
        expect(page.get_by_test_id("stMetricValue").first).to_have_text("4")
        expect(page.get_by_text(LOST)).to_have_count(0)
    with streamlit_server(port):  # the open page reconnects to the new server by itself,
        expect(page.get_by_text(LOST)).to_be_visible(timeout=110_000)  # after a backoff of several seconds
        wait_idle(page)
        expect(page.get_by_text(LOST)).to_be_visible()  # and the message stays
        expect(page.get_by_test_id("stMetricValue")).to_have_count(0)  # the lost trace is no longer shown
        assert_no_exception(page)


def uploaded_bytes(url: str) -> int:
    """The bytes Streamlit's uploaded-file store holds now, from the server's metrics."""
    text = urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10).read().decode()
    found = re.search(r'^cache_memory_bytes\{cache_type="UploadedFileManager",cache=""\} (\d+)$', text, re.M)
    return int(found[1]) if found else 0


def wait_for_uploaded_bytes(url: str, expected: int, within: float) -> None:
    """Poll the metrics (read when asked, a few milliseconds of the server's) until they show
    ``expected`` bytes."""
    deadline = time.monotonic() + within
    while (held := uploaded_bytes(url)) != expected:
        assert time.monotonic() < deadline, f"the server still holds {held} uploaded bytes, expected {expected}"
        time.sleep(0.2)


def upload(page: Page, url: str, data: bytes) -> None:
    open_page(page, url, "trace", "trace_source=Upload")
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
        files=[{"name": "mine.jsonl", "mimeType": "application/json", "buffer": data}]
    )
    wait_shown(page)


def test_a_closed_tab_releases_its_upload_and_an_open_one_keeps_its_own(undrawn: Page, monkeypatch):
    """Streamlit keeps a closed tab's session for reconnecting, and its uploaded files even after:
    the server ends a session gone its grace period, so only the open tab's upload stays. The grace
    and the sweeper's interval are set short here, so the wait is a second or two, not up to 50.
    The open tab is the worker's, the closed one another tab of its browser; what is read is the
    server's upload bytes and the numbers: no figure or grid is drawn."""
    grace_s, sweep_s = 1, 0.5
    monkeypatch.setenv(GRACE_ENV, str(grace_s))  # the server inherits them
    monkeypatch.setenv(SWEEP_ENV, str(sweep_s))
    stays, leaves = trace_of(6), trace_of(9)
    page = undrawn
    with streamlit_server() as url:
        upload(page, url, stays)
        leaving = page.context.new_page()
        without_drawing(leaving)
        upload(leaving, url, leaves)
        wait_for_uploaded_bytes(url, len(stays) + len(leaves), within=30)
        leaving.close()
        wait_for_uploaded_bytes(url, len(stays), within=grace_s + 2 * sweep_s + 30)
        page.get_by_test_id("stSidebarNav").get_by_text("Home", exact=True).click()
        wait_idle(page)
        page.get_by_test_id("stSidebarNav").get_by_text("Trace", exact=True).click()
        wait_idle(page)
        assert_no_exception(page)
        expect(page.get_by_test_id("stMetricValue").first).to_have_text("6")
        assert uploaded_bytes(url) == len(stays)
