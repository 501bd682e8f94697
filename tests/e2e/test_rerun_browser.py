"""Browser: every page and every cached view survives a rerun and a second visitor.

A cached function's elements are replayed on a cache hit; one that drew a progress bar or took an
element from an earlier run crashes the view exactly then: on the rerun of the same session, or
for the next visitor, who gets the cached result. Each view is opened, rerun (the "r" shortcut),
then opened again in a second browser context, which must show the same key numbers.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import TIMEOUT, assert_no_exception, open_page, wait_idle

LIGHT_CACHEGEN = "cachegen_k=100"
VIEWS = [  # every page, and each view with a cached function of its own
    ("", ""),
    ("trace", "trace_source=Example"),
    ("trace", "trace_source=Synthetic&trace_requests=500"),
    ("eviction", "eviction_source=Example&eviction_points=6"),
    ("radix", ""),
    ("ledger", ""),
    ("ledger", "ledger_view=Tiers"),
    ("strata", ""),
    ("cluster", "cluster_minutes=5&cluster_seeds=1"),
    ("cluster", "cluster_view=Scheduling&cluster_source=Example"),
    ("cachegen", LIGHT_CACHEGEN),
    ("cachegen", f"cachegen_view=Violation+vs+SLO&{LIGHT_CACHEGEN}"),
    ("cachegen", f"cachegen_view=Violation+vs+SLO&cachegen_against=Mean+bandwidth&{LIGHT_CACHEGEN}"),
    ("cachegen", f"cachegen_view=Violation+vs+SLO&cachegen_against=Persistence&{LIGHT_CACHEGEN}"),
    ("cachegen", "cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32"),
    ("cacheblend", ""),
    ("cacheblend", "cacheblend_view=Accuracy+vs+ratio"),
]


def key_numbers(page: Page) -> list[str]:
    """What a viewer reads off the page: metric values and static tables (paper vs simulation)."""
    return page.get_by_test_id("stMetricValue").all_inner_texts() + page.get_by_test_id("stTable").all_inner_texts()


def rerun(page: Page) -> None:
    """Press Streamlit's rerun shortcut and wait for the run it starts to finish."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no input has focus
    page.keyboard.press("r")
    app = page.get_by_test_id("stApp")
    try:
        expect(app).to_have_attribute("data-test-script-state", "running", timeout=3_000)
    except AssertionError:
        pass  # a warm rerun may finish before we look
    wait_idle(page, TIMEOUT)


@pytest.mark.parametrize(("stem", "query"), VIEWS, ids=[f"{s or 'home'}?{q}" if q else s or "home" for s, q in VIEWS])
def test_view_survives_rerun_and_a_second_visitor(
    page: Page, browser: Browser, browser_context_args: dict, app_url: str, stem: str, query: str
):
    open_page(page, app_url, stem, query)
    assert_no_exception(page)
    first = key_numbers(page)
    rerun(page)
    assert_no_exception(page)
    assert key_numbers(page) == first
    other = browser.new_context(**browser_context_args)
    try:
        second = other.new_page()
        open_page(second, app_url, stem, query)
        assert_no_exception(second)
        assert key_numbers(second) == first
    finally:
        other.close()
