"""Browser: an expensive link to the Mooncake cluster page asks first and runs on a click (both views are opened
by the layout test and every control changed by the link test; AppTest checks what they say)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page


def test_an_expensive_link_asks_and_runs_on_a_click(page: Page, app_url: str):
    open_page(page, app_url, "cluster", "cluster_minutes=60&cluster_load=4&cluster_seeds=5")
    expect(page.get_by_text("This view is expensive")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    page.get_by_role("button", name="Run it").click()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3, timeout=120_000)
    assert_no_exception(page)
