"""The ledger page in headless Chromium: every view renders, controls work, screenshots for a person."""

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle


def _click_option(page: Page, label: str) -> None:
    page.get_by_role("radio", name=label, exact=True).first.click()
    wait_idle(page)


def test_ledger_views_in_browser(page: Page, app_url: str):
    open_page(page, app_url, "ledger")
    assert_no_exception(page)
    expect(page.get_by_text("Where should KV live?").first).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    screenshot(page, "ledger_size")
    _click_option(page, "Load or recompute")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    screenshot(page, "ledger_breakeven")
    _click_option(page, "Tiers")
    assert_no_exception(page)
    assert "ledger_view=Tiers" in page.url


def test_strata_page_views(page: Page, app_url: str):
    open_page(page, app_url, "strata")
    assert_no_exception(page)
    expect(page.get_by_text("Small pages waste the link").first).to_be_visible()
    screenshot(page, "strata_pages")
    _click_option(page, "Loading-bound")
    assert_no_exception(page)
    assert "strata_view=Loading-bound" in page.url


def test_ledger_views_from_url(page: Page, app_url: str):
    """A shared link opens the same view with its controls: the batch timeline with batches of 4,
    the tiered cache with 50 users, and the break-even curves over two links (repeated parameters)."""
    for stem, query, text, shot, control, value in (
        (
            "strata",
            "strata_view=Balanced+batching&strata_batch=4",
            "FCFS vs balanced batching",
            "strata_timeline",
            "Requests per batch",
            "4",
        ),
        ("ledger", "ledger_view=Tiers&ledger_users=50", "Tiered KV cache", "ledger_tiers", "Users", "50"),
        (
            "ledger",
            "ledger_view=Load+or+recompute&ledger_links=nvme&ledger_links=cloud-3g",
            "Load if your link is above",
            "ledger_two_links",
            None,
            None,
        ),
    ):
        open_page(page, app_url, stem, query)
        assert_no_exception(page)
        expect(page.get_by_text(text).first).to_be_visible()
        if control:
            expect(page.get_by_label(control, exact=True)).to_have_value(value)
        else:
            links = page.get_by_test_id("stMultiSelect").first
            expect(links).to_contain_text("cloud-3g")
            expect(links).not_to_contain_text("pcie5-x16")
        screenshot(page, shot)


def test_ledger_preset_edit_is_validated(page: Page, app_url: str):
    """Type 0 into Llama-3-8B's layers in the presets table: a named error, not a traceback.

    The grid is a canvas: select the cell with one click, then typing replaces its value (a double
    click sometimes opened no editor). The canvas settles after the expander opens, so the edit is
    retried a few times before the test gives up.
    """
    open_page(page, app_url, "ledger")
    page.get_by_text("Presets: edit any model").click()
    wait_idle(page)
    grid = page.get_by_test_id("stDataFrame").first
    expect(grid).to_be_visible()
    error = page.get_by_test_id("stAlertContentError")
    for _ in range(4):
        grid.scroll_into_view_if_needed()
        page.wait_for_timeout(1500)
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 170, box["y"] + 54)  # first row, 'layers' column
        page.wait_for_timeout(300)
        page.keyboard.type("0")
        page.keyboard.press("Enter")
        wait_idle(page)
        try:
            expect(error).to_contain_text("layers must be a whole number > 0", timeout=6_000)
            break
        except AssertionError:
            page.keyboard.press("Escape")
    assert_no_exception(page)
    expect(error).to_contain_text("layers must be a whole number > 0")
    screenshot(page, "ledger_bad_edit")
