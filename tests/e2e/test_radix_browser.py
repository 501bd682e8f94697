"""Browser: the radix page deep-links to a step, steps with its buttons, and steps through a chosen preset."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from kvviz.radix.presets import PRESETS
from tests.e2e.browser import assert_no_exception, choose, open_page, screenshot, wait_idle


def test_step_buttons_and_deep_link(page: Page, app_url: str):
    open_page(page, app_url, "radix", "radix_step=6")
    assert_no_exception(page)
    expect(page.get_by_text("Step 6 of 9")).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    screenshot(page, "radix_step6")
    page.get_by_role("button", name="▶").click()
    wait_idle(page)
    expect(page.get_by_text("Step 7 of 9")).to_be_visible()
    assert "radix_step=7" in page.url
    expect(page.get_by_text("(8) the first session returns", exact=False)).to_be_visible()  # the preset's caption
    expect(page.get_by_text("evicted leaf 'Assistant : Roses … I have .'", exact=False)).to_be_visible()
    assert_no_exception(page)


def test_a_preset_chosen_in_the_sidebar_steps_through(page: Page, app_url: str):
    """One preset through the real select box and the step button (every preset steps in AppTest:
    tests/pages/test_radix_presets.py)."""
    open_page(page, app_url, "radix")
    choose(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Preset"), PRESETS["tiers"].title)
    wait_idle(page)
    expect(page.get_by_text("Step 0 of")).to_be_visible()
    for step in (1, 2):
        page.get_by_role("button", name="▶").click()
        wait_idle(page)
        expect(page.get_by_text(f"Step {step} of")).to_be_visible()
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    screenshot(page, "radix_tiers")
