"""Browser: every page survives a rerun and a second visitor through the real server.

A cached function's elements are replayed on a cache hit; one that drew a progress bar or took an
element from an earlier run crashes the view exactly then: on the rerun of the same session, or
for the next visitor, who gets the cached result. One view per page is opened, rerun (the "r"
shortcut), then opened again in a second browser context, which must show the same key numbers.
Every other view with a cached function of its own gets the same check in AppTest
(tests/pages/test_cached_views.py), which runs the same cache code without drawing in a browser.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from tests.e2e.browser import assert_no_exception, open_page, rerun, watch_runs

VIEWS = [  # every page, each at a view whose cached work is light
    ("", ""),
    ("trace", "trace_source=Example"),
    ("eviction", "eviction_source=Example&eviction_points=6"),
    ("radix", ""),
    ("ledger", ""),
    ("strata", ""),
    ("cluster", "cluster_minutes=5&cluster_seeds=1"),
    ("cachegen", "cachegen_k=100"),
    ("cacheblend", ""),
]


def key_numbers(page: Page) -> list[str]:
    """What a viewer reads off the page: metric values and static tables (paper vs simulation)."""
    return page.get_by_test_id("stMetricValue").all_inner_texts() + page.get_by_test_id("stTable").all_inner_texts()


@pytest.mark.parametrize(("stem", "query"), VIEWS, ids=[f"{s or 'home'}?{q}" if q else s or "home" for s, q in VIEWS])
def test_view_survives_rerun_and_a_second_visitor(
    page: Page, browser: Browser, browser_context_args: dict, app_url: str, stem: str, query: str
):
    watch_runs(page)
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
