"""Browser: the radix page steps through every preset, deep links to a step, and shows bad input."""

from __future__ import annotations

from urllib.parse import quote_plus

import pytest
from playwright.sync_api import Page, expect

from kvviz.radix_scenarios import PRESETS
from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle


def test_step_buttons_and_deep_link(page: Page, app_url: str):
    open_page(page, app_url, "radix", "radix_step=6")
    assert_no_exception(page)
    expect(page.get_by_text("Step 6 of 9")).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    screenshot(page, "radix_step6")
    page.get_by_role("button", name="▶").click()
    wait_idle(page)
    expect(page.get_by_text("Step 7 of 9")).to_be_visible()
    assert "radix_step=7" in page.url
    assert_no_exception(page)


@pytest.mark.parametrize("preset", ["delay", "tiers"])
def test_presets_step_through(page: Page, app_url: str, preset: str):
    title = quote_plus(PRESETS[preset].title)
    open_page(page, app_url, "radix", f"radix_preset={title}&radix_cache=HiRadixCache&radix_step=1")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    for _ in range(2):
        page.get_by_role("button", name="▶").click()
        wait_idle(page)
        assert_no_exception(page)
    screenshot(page, f"radix_{preset}")
