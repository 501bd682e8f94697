"""Browser: the home map, navigation, deep links and the Trace page with an upload."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.browser import (
    VIEWPORT,
    assert_no_exception,
    choose,
    copy_link,
    open_link,
    open_page,
    screenshot,
    streamlit_server,
    upload,
    wait_idle,
)

TRACE = (
    b'{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]}\n'
    b'{"timestamp": 400, "input_length": 1200, "output_length": 9, "hash_ids": [0, 1, 2]}\n'
    b'{"timestamp": 900, "input_length": 300, "output_length": 2, "hash_ids": [3]}\n'
)


def test_deep_link_on_a_fresh_server_gets_the_full_frame(page: Page, fresh_app_url: str):
    open_page(page, fresh_app_url, "trace", "trace_source=Example")
    assert_no_exception(page)
    nav = page.get_by_test_id("stSidebarNav")
    expect(nav.get_by_text("Reuse and eviction")).to_be_visible()
    expect(nav.get_by_text("app", exact=True)).to_have_count(0)
    expect(page.get_by_text("Presenter mode")).to_be_visible()


def test_home_then_trace_page_navigation(page: Page, app_url: str):
    open_page(page, app_url)
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="kvviz: LLM KV caches")).to_be_visible()
    screenshot(page, "home")
    page.get_by_test_id("stSidebarNav").get_by_text("Trace").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3)  # the prefix tree is folded
    page.get_by_test_id("stExpander").get_by_text("The trace's prefix tree").click()
    wait_idle(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(4)  # drawn once opened, and in the URL
    assert "trace_tree=true" in page.url
    screenshot(page, "trace")


def test_trace_upload_good_and_bad(undrawn: Page, app_url: str):
    page = undrawn  # the request count and the error are read: no figure or grid is drawn
    open_page(page, app_url, "trace", "trace_source=Upload")
    upload(
        page.get_by_test_id("stFileUploaderDropzoneInput"),
        [{"name": "t.jsonl", "mimeType": "application/json", "buffer": TRACE}],
    )
    assert_no_exception(page)
    expect(page.get_by_test_id("stMetricValue").first).to_have_text("3")
    upload(
        page.get_by_test_id("stFileUploaderDropzoneInput"),
        [{"name": "bad.jsonl", "mimeType": "application/json", "buffer": b'{"timestamp": 0}\n'}],
    )
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("line 1")


def test_presenter_mode_in_the_browser(page: Page, app_url: str):
    open_page(page, app_url, "trace", "trace_source=Example")
    page.get_by_text("Presenter mode").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stExpander").first).to_be_visible()
    screenshot(page, "trace_presenter")


QWEN = (
    b'{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 12, '
    b'"type": "text", "turn": 1, "hash_ids": [1, 2, 3]}\n'
    b'{"chat_id": 2, "parent_chat_id": 1, "timestamp": 61.114, "input_length": 80, "output_length": 30, '
    b'"type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}\n'
)


def test_a_kept_upload_follows_to_the_prefix_cache_page_and_its_copied_link(
    undrawn: Page, browser, tmp_path, monkeypatch
):
    # The repro: upload → Keep → Prefix-cache → model → Copy link → the link in a fresh browser.
    # The uploader's tab is read for its address and its pickers, and draws no figure or grid; the fresh
    # browser draws the page the link opens, for its screenshot.
    page = undrawn
    monkeypatch.setenv("KVVIZ_TRACES", str(tmp_path / "lib"))  # the server inherits its own library
    with streamlit_server() as url:
        open_page(page, url, "trace", "trace_source=Upload")
        upload(
            page.get_by_test_id("stFileUploaderDropzoneInput"),
            [{"name": "shared-qwen.jsonl", "mimeType": "application/json", "buffer": QWEN}],
        )
        page.get_by_role("button", name="Keep in the trace library").click()
        wait_idle(page)
        assert_no_exception(page)
        expect(page).to_have_url(re.compile(r"trace_library=[0-9a-f]{16}"))
        kept = re.search(r"trace_library=([0-9a-f]{16})", page.url).group(1)

        page.get_by_test_id("stSidebarNav").get_by_text("Prefix-cache replay").click()
        wait_idle(page)
        assert_no_exception(page)
        expect(page).to_have_url(re.compile(f"prefix_library={kept}"))
        choose(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model"), "Llama 3.1 70B")
        wait_idle(page)
        link = copy_link(page)
        page.goto("about:blank")  # the uploader's session ends: the link reads the library alone

        fresh = browser.new_context(viewport=VIEWPORT)
        other = open_link(fresh, link)
        assert_no_exception(other)
        expect(other.get_by_text("shared-qwen.jsonl").first).to_be_visible()
        expect(other.get_by_text("of Llama 3.1 70B KV").first).to_be_visible()
        screenshot(other, "prefix_cache_library_link")
        fresh.close()
