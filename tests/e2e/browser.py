"""Helpers for browser tests: open a page, wait until the script is idle, check and screenshot."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import SHOTS

TIMEOUT = 60_000
expect.set_options(timeout=30_000)  # a shared 2-core machine can be slow to rerun


def wait_idle(page: Page, timeout: float = TIMEOUT) -> None:
    """Wait until the app is connected, the script has finished and nothing is still loading."""
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=timeout)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=timeout)


def open_page(page: Page, app_url: str, stem: str = "", query: str = "") -> None:
    """Go to ``/<stem>?<query>`` and wait until it has rendered, with no modal dialog."""
    page.goto(f"{app_url}/{stem}" + (f"?{query}" if query else ""))
    page.get_by_test_id("stAppViewContainer").wait_for(timeout=TIMEOUT)
    # The script state also reads "notRunning" before the first run has begun (a loaded server starts
    # it late): wait for the title every page draws first, then for the run to end.
    page.locator("h1").first.wait_for(timeout=TIMEOUT)
    wait_idle(page)
    expect(page.locator("[role=dialog]")).to_have_count(0)


def settle(page: Page) -> None:
    """Wait two animation frames: a scroll made now has fired its scroll event by then."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def open_select(combo: Locator) -> None:
    """Open a select box (or multiselect) with one click, as a person does: scrolled into view first.

    Streamlit 1.67's select box (react-aria) closes its list when anything around it scrolls.
    Playwright's ``click`` scrolls a half-hidden box into view and clicks in the same frame, so
    the scroll event arrives after the list opened and closes it: "the first click only focuses
    it". Scrolling first and letting that event pass makes the one click open it.
    """
    combo.scroll_into_view_if_needed()
    settle(combo.page)
    combo.click()


def choose(combo: Locator, option: str) -> None:
    """Pick ``option`` in a select box with one click on the box and one on the option."""
    open_select(combo)
    combo.page.get_by_role("option", name=option, exact=True).click()


def assert_no_exception(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def screenshot(page: Page, name: str) -> None:
    """A PNG of the whole page in test-results/, for a person to look at.

    Streamlit scrolls inside its main container, so the window is first made as tall as that content.
    """
    SHOTS.mkdir(exist_ok=True)
    height = page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                           " return m ? m.scrollHeight : document.body.scrollHeight; }")
    width = page.viewport_size["width"] if page.viewport_size else 1400
    page.set_viewport_size({"width": width, "height": max(600, min(int(height) + 40, 12000))})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
