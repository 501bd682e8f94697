"""Browser: the Tiers page, a rerun after a change, a second visitor, and its copied link reopened
in a fresh browser with the same deployment and numbers; in presenter mode on a laptop screen every
table shows all its columns."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import (
    VIEWPORT,
    assert_no_exception,
    copy_link,
    open_link,
    open_page,
    screenshot,
    settle,
    wait_idle,
    without_drawing,
)

QUERY = "tiers_source=Synthetic&tiers_requests=300&tiers_gpu=a100"
CHART_WAIT = 180_000  # a new browser loads plotly's and the tables' bundles slowly on a loaded shared machine
TABLES = ("TTFT", "where the prompts came from", "routers", "capacity of each tier", "every mix tried")


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
    # TTFT, the routers and the front
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3, timeout=CHART_WAIT)
    expect(page.get_by_text("What to notice").first).to_be_visible()  # the tiers', then the routers'
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

    # the second visitor and the fresh browser read numbers and controls: they draw no figure or grid
    visitor = browser.new_context(viewport=VIEWPORT)
    without_drawing(visitor)
    other = visitor.new_page()
    open_page(other, app_url, "tiers", QUERY + "&tiers_instances=2", timeout=CHART_WAIT)  # from the cache this time
    assert_no_exception(other)
    assert _cost(other) == two
    visitor.close()

    fresh = browser.new_context(viewport=VIEWPORT)
    without_drawing(fresh)
    there = open_link(fresh, copy_link(page), timeout=CHART_WAIT)
    assert_no_exception(there)
    expect(there.get_by_role("combobox", name="GPU")).to_have_value("A100")
    expect(there.get_by_label("Prefill instances", exact=True)).to_have_value("2")
    assert _cost(there) == two
    fresh.close()


def test_every_table_reads_in_full_in_presenter_mode_on_a_laptop(page: Page, app_url: str):
    """At 1366 × 768 with projector fonts and the sidebar closed, no table needs a sideways scroll."""
    page.set_viewport_size({"width": 1366, "height": 768})
    # A grid sizes its columns once, with the font it has then: the home page loads the app's font first,
    # so the tables are measured in it (in a narrower fallback font a cut table can fit).
    open_page(page, app_url, "", "presenter=1")
    page.evaluate("() => document.fonts.ready")
    open_page(page, app_url, "tiers", QUERY + "&presenter=1", timeout=CHART_WAIT)
    assert_no_exception(page)
    page.get_by_text("Every mix tried").click()
    frames = page.get_by_test_id("stDataFrame")
    expect(frames).to_have_count(len(TABLES))
    cut = []
    for i, name in enumerate(TABLES):
        grid = frames.nth(i).locator(".dvn-scroller")  # the grid's scroll area: as wide as its columns need
        grid.scroll_into_view_if_needed()
        settle(page)  # a grid brought into view has laid out its columns
        need, shown = grid.evaluate("g => [g.scrollWidth, g.clientWidth]")
        cut += [f"{name}: needs {need} px, shows {shown}"] if need > shown + 1 else []
    assert not cut, "; ".join(cut)
