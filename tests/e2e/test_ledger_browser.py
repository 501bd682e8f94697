"""The ledger page in headless Chromium: an edit of the presets grid (a canvas only a browser can type into).

Every ledger and Strata view is opened in the browser by the layout test, and every control is changed
and reopened from a copied link by the link test; AppTest checks what each view says."""

from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

# Resolves once the element's box is the same in two animation frames in a row (the expander has opened).
STILL = """async (el) => {
  const box = () => JSON.stringify(el.getBoundingClientRect());
  for (let last = box(); ; ) {
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const now = box();
    if (now === last) return true;
    last = now;
  }
}"""
GRID_FOCUSED = "() => !!(document.activeElement && document.activeElement.closest('[data-testid=stDataFrame]'))"


def test_ledger_preset_edit_is_validated(figureless: Page, app_url: str):
    """Type 0 into Llama-3-8B's layers in the presets table: a named error, not a traceback.

    The grid is a canvas: select the cell with one click once the grid has stopped moving (the
    expander opens with an animation), wait until the grid has the keyboard, then typing replaces
    the cell's value (a double click sometimes opened no editor). A click the grid did not take (it
    has not got the keyboard, or no error shows) is tried again, a few times at most. The browser draws
    no figure (``without_figures``): what is checked is the grid and the message it gives.
    """
    page = figureless
    open_page(page, app_url, "ledger")
    page.get_by_text("Presets: edit any model").click()
    wait_idle(page)
    grid = page.get_by_test_id("stDataFrame").first
    expect(grid).to_be_visible()
    error = page.get_by_test_id("stAlertContentError")
    for _ in range(4):
        grid.scroll_into_view_if_needed()
        grid.evaluate(STILL)
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 170, box["y"] + 54)  # first row, 'layers' column
        try:
            page.wait_for_function(GRID_FOCUSED, timeout=10_000)
        except PlaywrightTimeoutError:  # the grid did not take the click: click again
            continue
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
