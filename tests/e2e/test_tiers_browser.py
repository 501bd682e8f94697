"""Browser: the Tiers page, a rerun after a change, a second visitor, and its copied link reopened
in a fresh browser with the same deployment and numbers."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import VIEWPORT, assert_no_exception, copy_link, open_link, open_page, screenshot, wait_idle

QUERY = "tiers_source=Synthetic&tiers_requests=300&tiers_gpu=a100"
CHART_WAIT = 180_000  # a new browser loads plotly's and the tables' bundles slowly on a loaded shared machine


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the kernels here, once, so the server loads them from numba's disk cache."""
    from kvviz import prefix_cache
    from kvviz.tiers.config import TierConfig
    from kvviz.tiers.replay import replay
    from kvviz.traces.workload import WorkloadConfig, generate

    prefix_cache.warm_up()
    replay(generate(WorkloadConfig(requests=100)), TierConfig(dram_gib=8.0, ssd_gib=8.0))


def _cost_card(page: Page):
    return page.get_by_test_id("stMetric").filter(has_text="Cost").get_by_test_id("stMetricValue")


def _cost(page: Page) -> str:
    return _cost_card(page).inner_text()


def test_rerun_second_visitor_and_copied_link(page: Page, browser: Browser, app_url: str):
    open_page(page, app_url, "tiers", QUERY, timeout=CHART_WAIT)  # the first replay and search of the server
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2, timeout=CHART_WAIT)  # TTFT and the front
    expect(page.get_by_text("What to notice")).to_be_visible()
    one = _cost(page)
    instances = page.get_by_label("Prefill instances", exact=True)
    instances.fill("2")
    instances.press("Enter")
    wait_idle(page)
    assert_no_exception(page)
    expect(page).to_have_url(re.compile("tiers_instances=2"))
    # the run the change starts may not have begun when the page first looks idle: wait for its answer
    expect(_cost_card(page)).not_to_have_text(one, timeout=CHART_WAIT)  # twice the GPUs, DRAM and SSD
    wait_idle(page)
    two = _cost(page)
    screenshot(page, "tiers")

    visitor = browser.new_context(viewport=VIEWPORT)
    other = visitor.new_page()
    open_page(other, app_url, "tiers", QUERY + "&tiers_instances=2", timeout=CHART_WAIT)  # from the cache this time
    assert_no_exception(other)
    assert _cost(other) == two
    visitor.close()

    fresh = browser.new_context(viewport=VIEWPORT)
    there = open_link(fresh, copy_link(page), timeout=CHART_WAIT)
    assert_no_exception(there)
    expect(there.get_by_role("combobox", name="GPU")).to_have_value("a100")
    expect(there.get_by_label("Prefill instances", exact=True)).to_have_value("2")
    assert _cost(there) == two
    fresh.close()
