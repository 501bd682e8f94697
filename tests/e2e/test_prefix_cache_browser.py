"""Browser: the Prefix-cache worked example steps with the arrow keys and keeps the trace views' settings in
the address (every view is opened by the layout test; every control changed, rerun and reopened by a second
visitor in the link test)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, wait_idle

QUERY = "prefix_source=Example&prefix_points=8"


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


def test_the_worked_example_keeps_the_trace_views_settings_in_the_address(wide: Page, app_url: str):
    """The worked example draws no trace controls; a link copied there still carries them."""
    open_page(wide, app_url, "prefix_cache", f"{QUERY}&prefix_model=llama-3.1-70b")
    wide.get_by_test_id("stButtonGroup").get_by_text("Worked example", exact=True).click()
    wide.wait_for_url(lambda url: "prefix_view=Worked+example" in url)
    wait_idle(wide)
    assert_no_exception(wide)
    wide.wait_for_url(lambda url: "prefix_model=Llama+3.1+70B" in url and "prefix_points=8" in url)


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
