"""Browser tests: the real server (``streamlit run``) and headless Debian Chromium via Playwright.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (``make test``
installs it through apt when missing). Screenshots go to ``test-results/`` for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "test-results"
# Debian's Chromium, headless, with no background traffic to the closed network: tests and benchmarks alike.
LAUNCH = {"executable_path": CHROMIUM, "headless": True,
          "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--no-first-run"]}
VIEWPORT = {"width": 1400, "height": 900}

if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
    pytest.skip("Chromium is not installed (make test installs it)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(port: int | None = None):
    """Run ``streamlit run app.py`` on a loopback port until the block ends; yields its URL."""
    with streamlit_process(port) as (url, _):
        yield url


@contextmanager
def streamlit_process(port: int | None = None, root: Path = ROOT):
    """Like :func:`streamlit_server`, yielding ``(url, process)`` (benchmarks read its CPU time).

    ``port`` defaults to a free one; a test that restarts the server passes the same port again.
    ``root`` is the checkout whose app.py is served (a paired benchmark serves two).
    """
    port = port or _free_port()
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=root, stdout=log, stderr=subprocess.STDOUT, text=True)
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


@pytest.fixture(scope="session")
def app_url():
    """One server for the whole browser-test session."""
    with streamlit_server() as url:
        yield url


@pytest.fixture
def fresh_app_url():
    """A server of its own, for what only a fresh server shows (its first session)."""
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, headless, with no background traffic to the closed network."""
    return {**browser_type_launch_args, **LAUNCH}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT}
