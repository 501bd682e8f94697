"""Browser: every view of the Prefix-cache replay page and the RadixAttention scheduling page, reruns of the
cached views, and a second browser context (another visitor) opening them from the cache."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

VIEWS = ("Curves", "Worked example", "Per request", "Over time", "Prefix tree")
QUERY = "prefix_source=Example&prefix_points=8"
CHART_WAIT = 120_000  # plotly's bundle loads slowly on a loaded shared machine


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the kernels here, once, so the server loads them from numba's disk cache."""
    from kvviz import prefix_cache
    from kvviz.eviction import replay as eviction

    eviction.warm_up()
    prefix_cache.warm_up()


@pytest.fixture
def wide(page: Page) -> Page:
    page.set_viewport_size({"width": 1920, "height": 1080})
    return page


def test_every_view_then_a_rerun(wide: Page, app_url: str):
    for view in VIEWS:
        open_page(wide, app_url, "prefix_cache", f"{QUERY}&prefix_view={view.replace(' ', '+')}")
        assert_no_exception(wide)
        expect(wide.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=CHART_WAIT)
        expect(wide.get_by_text("What to notice")).to_be_visible()
        screenshot(wide, f"prefix_cache_{view.lower().replace(' ', '_')}")
    wide.get_by_test_id("stSidebarUserContent").get_by_text("Points on the curve").scroll_into_view_if_needed()
    wide.reload()
    wait_idle(wide)
    assert_no_exception(wide)
    expect(wide.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=CHART_WAIT)


def test_worked_example_slider_steps(wide: Page, app_url: str):
    open_page(wide, app_url, "prefix_cache", "prefix_view=Worked+example&prefix_step=1")
    assert_no_exception(wide)
    expect(wide.get_by_text("After request 1: A·B·C").first).to_be_visible()
    slider = wide.get_by_role("slider")
    slider.focus()
    wide.keyboard.press("ArrowRight")
    wait_idle(wide)
    assert_no_exception(wide)
    expect(wide.get_by_text("After request 2: A·B·D").first).to_be_visible()
    assert "prefix_step=2" in wide.url


def test_the_worked_example_keeps_the_trace_views_settings_in_the_address(wide: Page, app_url: str):
    """The worked example draws no trace controls; a link copied there still carries them."""
    open_page(wide, app_url, "prefix_cache", f"{QUERY}&prefix_model=llama-3.1-70b")
    wide.get_by_test_id("stButtonGroup").get_by_text("Worked example", exact=True).click()
    wide.wait_for_url(lambda url: "prefix_view=Worked+example" in url)
    wait_idle(wide)
    assert_no_exception(wide)
    wide.wait_for_url(lambda url: "prefix_model=llama-3.1-70b" in url and "prefix_points=8" in url)


def test_arrow_keys_step_the_worked_example(wide: Page, app_url: str):
    open_page(wide, app_url, "prefix_cache", "prefix_view=Worked+example")
    heading = wide.get_by_text("Empty caches").first
    expect(heading).to_be_visible()
    heading.click()  # focus on the page, not on a widget
    wide.wait_for_function("() => !!window.kvvizStepListener")  # the keys component has loaded
    wide.keyboard.press("ArrowLeft")  # no step before the first: dropped
    wide.keyboard.press("ArrowRight")
    expect(wide.get_by_text("After request 1: A·B·C").first).to_be_visible()
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):  # pressed faster than a step reruns: they queue
        wide.keyboard.press(key)
    expect(wide.get_by_text("After request 2: A·B·D").first).to_be_visible()
    wide.wait_for_function("() => !window.kvvizStepBusy && !window.kvvizStepQueue.length")
    wait_idle(wide)
    assert_no_exception(wide)
    expect(wide.get_by_text("After request 2: A·B·D").first).to_be_visible()
    expect(wide.get_by_role("slider")).to_have_attribute("aria-valuetext", "2")
    assert "prefix_step=2" in wide.url


def test_a_second_visitor_gets_the_cached_views(browser: Browser, app_url: str):
    for _ in range(2):
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        for view in ("Curves", "Over time"):
            page.goto(f"{app_url}/prefix_cache?{QUERY}&prefix_view={view.replace(' ', '+')}")
            wait_idle(page, timeout=180_000)  # a shared, loaded machine: a fresh session can be slow
            assert_no_exception(page)
            expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=CHART_WAIT)
        context.close()


def test_radix_schedule_page(wide: Page, app_url: str):
    open_page(wide, app_url, "radix_schedule")
    assert_no_exception(wide)
    expect(wide.get_by_test_id("stPlotlyChart")).to_have_count(2, timeout=CHART_WAIT)
    screenshot(wide, "radix_schedule")
    open_page(
        wide,
        app_url,
        "radix_schedule",
        "radix_schedule_queue=Trace+window&radix_schedule_source=Example&radix_schedule_size=40"
        "&radix_schedule_capacity=300&radix_schedule_budget=64",
    )
    assert_no_exception(wide)
    expect(wide.get_by_test_id("stPlotlyChart")).to_have_count(2, timeout=CHART_WAIT)
    screenshot(wide, "radix_schedule_trace")
