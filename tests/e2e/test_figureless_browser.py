"""Browser: the tests that read only controls and numbers really skip drawing figures and grids.

``without_figures`` and ``without_grids`` serve Streamlit's figure and grid components by their file
names, which are Streamlit's own and not public. The day one changes, those tests would silently draw
again (slower, checking the same), or a grid served empty would break the page; this test fails that
day instead.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import open_page, with_figures, with_grids, without_figures, without_grids

DRAWN = ".js-plotly-plot"


def test_a_figureless_tab_draws_no_figure_and_a_normal_one_does(page: Page, app_url: str):
    without_figures(page)
    try:
        open_page(page, app_url, "eviction")
        expect(page.get_by_role("heading", level=1)).to_have_count(1)
        expect(page.locator(DRAWN)).to_have_count(0)
    finally:
        with_figures(page)
    open_page(page, app_url, "eviction")
    expect(page.locator(DRAWN).first).to_be_visible()


def test_a_gridless_tab_draws_no_grid_and_a_normal_one_does(page: Page, app_url: str):
    without_grids(page)
    try:
        open_page(page, app_url, "ledger")
        expect(page.get_by_role("heading", level=1)).to_have_count(1)
        expect(page.get_by_test_id("stMetricValue").first).to_be_visible()
        expect(page.get_by_test_id("stDataFrame")).to_have_count(0)
    finally:
        with_grids(page)
    open_page(page, app_url, "ledger")
    expect(page.get_by_test_id("stDataFrame")).not_to_have_count(0)
