"""The browser driver of the browser tests and the benchmarks: the server (``streamlit run app.py``),
Debian's Chromium settings, and opening a page, waiting until the script is idle, checking and screenshotting.

Benchmarks import it as ``tests.e2e.browser`` (run from the repository root with ``python -m``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from playwright.sync_api import BrowserContext, Locator, Page, WebSocket, expect

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "test-results"
# Debian's Chromium, headless, with no background traffic to the closed network: tests and benchmarks alike.
LAUNCH = {
    "executable_path": CHROMIUM,
    "headless": True,
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ],
}
VIEWPORT = {"width": 1400, "height": 900}


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(port: int | None = None):
    """Run ``streamlit run app.py`` on a loopback port until the block ends; yields its URL."""
    with streamlit_process(port) as (url, _):
        yield url


@contextmanager
def streamlit_process(port: int | None = None, root: Path = ROOT, log: IO[str] | None = None):
    """Like :func:`streamlit_server`, yielding ``(url, process)`` (benchmarks read its CPU time).

    ``port`` defaults to a free one; a test that restarts the server passes the same port again.
    ``root`` is the checkout whose app.py is served (a paired benchmark serves two). ``log``: a
    text file the server's output goes to, for a test that reads it (default: a temporary one).
    """
    port = port or free_port()
    log = log or tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError("streamlit did not start:\n" + log.read()) from None
                time.sleep(0.3)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


TIMEOUT = 60_000
expect.set_options(timeout=30_000)  # a shared 2-core machine can be slow to rerun


def wait_idle(page: Page, timeout: float = TIMEOUT) -> None:
    """Wait until the app is connected, the script has finished and nothing is still loading.

    The script state reads "notRunning" too before a run has begun: after choosing a file, the
    browser sends it before asking for the run. Wait first for something that run draws."""
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=timeout)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=timeout)


def open_page(page: Page, app_url: str, stem: str = "", query: str = "", timeout: float = TIMEOUT) -> None:
    """Go to ``/<stem>?<query>`` and wait until it has rendered, with no modal dialog."""
    page.goto(f"{app_url}/{stem}" + (f"?{query}" if query else ""), timeout=timeout)
    page.get_by_test_id("stAppViewContainer").wait_for(timeout=timeout)
    # The script state also reads "notRunning" before the first run has begun (a loaded server starts
    # it late): wait for the title every page draws first (or the error of a page that failed before
    # it, which the test's own checks then name), then for the run to end.
    page.locator("h1, [data-testid=stException]").first.wait_for(timeout=timeout)
    wait_idle(page, timeout)
    expect(page.locator("[role=dialog]")).to_have_count(0)


_SOCKETS: weakref.WeakKeyDictionary[Page, WebSocket] = weakref.WeakKeyDictionary()


_WATCHED: weakref.WeakSet[Page] = weakref.WeakSet()


def watch_runs(page: Page) -> None:
    """Keep the page's connection to the server (call before the page opens), for :func:`rerun`.
    A tab that several tests reuse is watched once."""
    if page not in _WATCHED:
        _WATCHED.add(page)
        page.on("websocket", lambda socket: _SOCKETS.__setitem__(page, socket))


def _run_ended(payload: bytes | str) -> bool:
    """Whether a message from the server says a script run ended, other than to start the next one
    at once (Streamlit's wire protocol: a test that waits on it fails, by timing out, the day that
    protocol changes)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if not isinstance(payload, bytes):
        return False
    msg = ForwardMsg.FromString(payload)
    return msg.WhichOneof("type") == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN


def _socket(page: Page) -> WebSocket:
    if page not in _SOCKETS:
        raise AssertionError("the page's connection is not watched: call watch_runs(page) before it opens")
    return _SOCKETS[page]


@contextmanager
def run_ends(page: Page, timeout: float = TIMEOUT):
    """Wait, once the block has acted on ``page``, until the server says the script run the action
    started has ended, then until the page is idle (the page must be watched, :func:`watch_runs`).

    The page's own script state cannot tell: a warm run can go from idle to running and back between
    two looks, and under load the browser can take the run's start and end in one update, so the
    state never reads "running" at all. The end of the run is read from the server's messages instead.
    """
    with _socket(page).expect_event("framereceived", predicate=_run_ended, timeout=timeout):
        yield
    wait_idle(page, timeout)


def rerun(page: Page) -> None:
    """Press Streamlit's rerun shortcut and wait until the run it started has ended."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no input has focus
    with run_ends(page):
        page.keyboard.press("r")


def upload(box: Locator, files: object) -> None:
    """Give an upload box its files and wait until the run the upload starts has ended.

    The browser first sends the file and only then asks for a run: until that run begins the page
    reads idle and still shows the view before the upload, so waiting on the page's state alone can
    return before the upload's run has started.
    """
    with run_ends(box.page):
        box.set_input_files(files)


def key_numbers(page: Page) -> list[str]:
    """What a viewer reads off the page: metric values and static tables (paper vs simulation)."""
    return page.get_by_test_id("stMetricValue").all_inner_texts() + page.get_by_test_id("stTable").all_inner_texts()


def copy_link(page: Page) -> str:
    """Click the page's "Copy link" and return the link it copied."""
    page.frame_locator("iframe").first.locator("#copy").click()
    page.wait_for_function("() => window.kvvizCopiedLink")
    return page.evaluate("() => window.kvvizCopiedLink")


def open_link(context: BrowserContext, link: str, timeout: float = TIMEOUT) -> Page:
    """``link`` in a new page of ``context`` (a fresh browser when the context is new), once it has rendered."""
    page = context.new_page()
    page.goto(link, timeout=timeout)
    page.get_by_test_id("stAppViewContainer").wait_for(timeout=timeout)
    wait_idle(page, timeout)
    return page


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


FIGURE_MODULE = "**/static/js/PlotlyChart.*.js"
"""Streamlit's figure component, a module of its own that the page loads when it first shows a figure."""
NO_FIGURE = "const PlotlyChart = () => null;\nexport { PlotlyChart, PlotlyChart as default };\n"
GRID_MODULE = "**/static/js/DataFrame.*.js"
"""Streamlit's interactive table (``st.dataframe``, ``st.data_editor``), likewise a module of its own. The
app loads its component as the module's ``n`` (an object whose ``default`` is it); other modules import
the grid's parts (``t``, ``a``, ...) from it, and only when they draw a grid."""
NO_GRID = (
    "const Nothing = () => null;\nconst n = {default: Nothing}, t = Nothing;\n"
    "export { n, t, t as a, t as c, t as i, t as l, t as o, t as r, t as s };\n"
)


def _serve(target: Page | BrowserContext, module: str, body: str) -> None:
    target.route(module, lambda route: route.fulfill(content_type="text/javascript", body=body))


def without_figures(target: Page | BrowserContext) -> None:
    """Have the browser draw no figure: Streamlit's figure component is served as one that draws
    nothing. For a test whose checks need the controls, tables and numbers but not the figures,
    which are most of what Chromium spends on a rerun (drawn in software here); the server still
    builds every figure and sends it, and an error building one still shows. The layout tests draw
    every figure of every view. :func:`with_figures` undoes it."""
    _serve(target, FIGURE_MODULE, NO_FIGURE)


def with_figures(target: Page | BrowserContext) -> None:
    target.unroute(FIGURE_MODULE)


def without_grids(target: Page | BrowserContext) -> None:
    """Have the browser draw no interactive table either, for a test that reads controls, metrics and
    static tables (``st.table``) only: each rerun draws every grid's canvas again. The server still
    builds and sends each one. :func:`with_grids` undoes it."""
    _serve(target, GRID_MODULE, NO_GRID)


def with_grids(target: Page | BrowserContext) -> None:
    target.unroute(GRID_MODULE)


def without_drawing(target: Page | BrowserContext) -> None:
    """Neither figures nor grids (:func:`without_figures`, :func:`without_grids`): for a test that reads
    controls, text, metrics and static tables only. :func:`with_drawing` undoes it."""
    without_figures(target)
    without_grids(target)


def with_drawing(target: Page | BrowserContext) -> None:
    with_figures(target)
    with_grids(target)


def assert_no_exception(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def screenshot(page: Page, name: str) -> None:
    """A PNG of the whole page in test-results/, for a person to look at.

    Streamlit scrolls inside its main container, so the window is first made as tall as that content.
    """
    SHOTS.mkdir(exist_ok=True)
    height = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=stMain]');"
        " return m ? m.scrollHeight : document.body.scrollHeight; }"
    )
    width = page.viewport_size["width"] if page.viewport_size else 1400
    page.set_viewport_size({"width": width, "height": max(600, min(int(height) + 40, 12000))})
    wait_idle(page)
    settle(page)  # the resize has been laid out and painted
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
