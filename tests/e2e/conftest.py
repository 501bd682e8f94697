"""Browser tests: the real server (``streamlit run``) and headless Debian Chromium via Playwright.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (``make test``
installs it through apt when missing). Screenshots go to ``test-results/`` for a person to look at.
The server and the browser's settings live in tests/e2e/browser.py, which benchmarks share.

One server per pytest-xdist worker (``app_url``, session-scoped) serves every test of that
worker. Some tests start servers of their own, because what they check needs one: a fresh
server's first session (test_trace_browser's deep link), a separate trace library set through
the server's environment (test_trace_browser's kept upload, test_trace_return_browser, and one
server for test_library_browser's damaged entries), a server restart (test_sessions_browser), and
the server's upload bytes, which other tests' sessions would change (test_sessions_browser's closed
tab, with a short grace period and sweep interval set in the server's environment). Likewise one browser tab per
worker (``page``) serves every test that does not open a browser context of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.e2e.browser import (
    CHROMIUM,
    LAUNCH,
    VIEWPORT,
    streamlit_server,
    watch_runs,
    with_drawing,
    with_figures,
    without_drawing,
    without_figures,
)

TIMEOUT_MS = 30_000
"""Playwright's own default for an action, which a test may change for its page (test_links_browser)."""

if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
    pytest.skip("Chromium is not installed (make test installs it)", allow_module_level=True)


@pytest.fixture(scope="session")
def app_url():
    """One server for all the browser tests of this pytest-xdist worker."""
    with streamlit_server() as url:
        yield url


@pytest.fixture
def fresh_app_url():
    """A server of its own, for what only a fresh server shows (its first session)."""
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def _tab(browser: Browser, browser_context_args: dict):
    """The worker's one browser tab (in a context of its own), which every test's ``page`` reuses."""
    context = browser.new_context(**browser_context_args)
    tab = context.new_page()
    watch_runs(tab)
    yield tab
    context.close()


@pytest.fixture
def page(_tab: Page, browser_context_args: dict):
    """The worker's tab, as a new visitor: each test opens its page by address, which starts a new
    Streamlit session, and its last page is left for a blank one (its session ends) with the window
    and the timeouts as they were. A test that needs a browser with nothing cached opens a new context.

    A new tab (or context) starts a new renderer, which parses and compiles Streamlit's and plotly's
    scripts again: a few CPU seconds each time, more than most pages take to draw. One tab for all
    tests does that once per worker.
    """
    _tab.set_default_timeout(TIMEOUT_MS)
    yield _tab
    if not _tab.is_closed():
        _tab.goto("about:blank")  # before the resize: the last page is not laid out again
        _tab.set_viewport_size(browser_context_args["viewport"])


@pytest.fixture
def figureless(page: Page):
    """The worker's tab, drawing no figure until the test ends (``without_figures``): for a test
    whose checks read controls, text, tables and numbers."""
    without_figures(page)
    yield page
    with_figures(page)


@pytest.fixture
def undrawn(page: Page):
    """The worker's tab, drawing no figure and no interactive table until the test ends
    (``without_drawing``): for a test whose checks read controls, text, metrics and static tables."""
    without_drawing(page)
    yield page
    with_drawing(page)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, headless, with no background traffic to the closed network."""
    return {**browser_type_launch_args, **LAUNCH}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT}
