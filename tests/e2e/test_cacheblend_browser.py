"""The CacheBlend page in headless Chromium: views, a shared link, and screenshots to look at."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from kvviz.cacheblend.model import WEIGHTS
from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

pytestmark = pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")


def test_cacheblend_views_in_the_browser(page, app_url):
    open_page(page, app_url, "cacheblend")
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="CacheBlend").first).to_be_visible()
    expect(page.locator(".js-plotly-plot")).to_have_count(2)
    expect(page.get_by_text("What the paper reports vs this simulation")).to_be_visible()
    screenshot(page, "cacheblend_document")

    page.get_by_test_id("stButtonGroup").get_by_text("Accuracy vs ratio").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("Answer accuracy over 200 fresh documents")).to_be_visible()
    screenshot(page, "cacheblend_accuracy")

    page.get_by_test_id("stButtonGroup").get_by_text("Loading controller").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("Per layer: load = KV bytes")).to_be_visible()
    screenshot(page, "cacheblend_controller")


def test_a_shared_link_opens_the_same_view(page, app_url):
    open_page(page, app_url, "cacheblend", "cacheblend_chunk=3&cacheblend_seed=7&cacheblend_view=The+model")
    assert_no_exception(page)
    expect(page.get_by_text("Training the record-world model")).to_be_visible()
    expect(page.get_by_test_id("stSlider").first).to_contain_text("3")
    screenshot(page, "cacheblend_model")

    page.get_by_test_id("stButtonGroup").get_by_text("One document").click()
    wait_idle(page)
    page.get_by_text("Presenter mode").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("Document 7: which tokens are recomputed")).to_be_visible()
    screenshot(page, "cacheblend_presenter")
