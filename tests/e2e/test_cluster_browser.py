"""The Mooncake cluster page in a real browser: both views, a policy switch, and a shared link."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle


def test_overload_view_switch_policy(page: Page, app_url: str):
    open_page(page, app_url, "cluster", "cluster_minutes=10&cluster_seeds=2")
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3, timeout=60_000)
    assert_no_exception(page)
    page.get_by_role("radio", name="Early rejection + prediction", exact=True).click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("Early rejection + prediction: load and admissions")).to_be_visible()
    screenshot(page, "cluster_overload")


def test_scheduling_view_with_rejection_from_a_link(page: Page, app_url: str):
    query = "cluster_view=Scheduling&cluster_instances=4&cluster_requests=1000&cluster_reject=true"
    open_page(page, app_url, "cluster", query)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(4, timeout=60_000)
    assert_no_exception(page)
    expect(page.get_by_role("radio", name="Scheduling", exact=True)).to_have_attribute("aria-checked", "true")
    expect(
        page.get_by_test_id("stSidebar").get_by_role("switch", name="Reject requests that would miss an SLO")
    ).to_be_checked()
    expect(page.get_by_text("What happened to the requests")).to_be_visible()
    expect(page.get_by_text("What the paper reports vs this simulation")).to_be_visible()
    screenshot(page, "cluster_scheduling")


def test_an_expensive_link_asks_and_runs_on_a_click(page: Page, app_url: str):
    open_page(page, app_url, "cluster", "cluster_minutes=60&cluster_load=4&cluster_seeds=5")
    expect(page.get_by_text("This view is expensive")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    page.get_by_role("button", name="Run it").click()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3, timeout=120_000)
    assert_no_exception(page)
