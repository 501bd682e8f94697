"""Browser: the tests that read only controls and numbers really skip drawing figures.

``without_figures`` serves Streamlit's figure component by its file name, which is Streamlit's own
and not public. The day it changes, the figureless tests would silently draw every figure again (slower,
checking the same); this test fails that day instead.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import open_page, with_figures, without_figures

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
