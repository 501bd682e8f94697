"""A newcomer's first view of every page: each page opened by a new visitor as the first view of a fresh server.

    .venv/bin/python -m bench.bench_first_view            # every page, a fresh server each
    .venv/bin/python -m bench.bench_first_view cachegen   # only the pages named

Each page gets a server of its own, started as ``make run`` starts it (``ui.kit.serve``: the kernels
compiled or loaded, then the server, warmed), and a new browser context, so no page profits from
another's visit. What is timed is what a visitor meets once ``make run`` said it was ready: the
server's first run of the app and of the page (its cached computations, its figures), from the
address typed until the script is idle (``tests.e2e.browser.open_page``). With ``--plain`` the server
is a bare ``streamlit run app.py`` that was not warmed (the kernels still compiled beforehand), for
comparison. Printed per page: wall seconds in the browser, the server's CPU seconds until ready and
for the view alone, and the load average. Target: at most 5 s per first view on the 2-core
reference machine. Last, the kernels a page had to compile although the start-up had compiled
everything (numba's disk cache gained an index file): the start-up's list of commands
(``kvviz.precompile.COMMANDS``) must grow when this names one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.bench_classroom import cpu_seconds
from kvviz.common import jit
from kvviz.common.catalog import PAGES
from kvviz.precompile import compile_all
from tests.e2e.browser import LAUNCH, ROOT, VIEWPORT, free_port, open_page, streamlit_process

STEMS = ("home", *(p.stem for p in PAGES))
TARGET_S = 5.0


@contextmanager
def served():
    """``python -m ui.kit.serve`` on a free loopback port, once it has printed its ready line: its URL and process."""
    port = str(free_port())
    cmd = [sys.executable, "-m", "ui.kit.serve", "--server.headless", "true", "--server.address", "127.0.0.1"]
    cmd += ["--server.port", port, "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("kvviz: ready on"):
                break
        else:
            raise RuntimeError("the server stopped before it was ready")
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def first_view(browser, stem: str, plain: bool) -> tuple[float, float, float]:
    """Wall seconds of ``stem``'s first view on a fresh server; its CPU seconds until ready and for the view."""
    with streamlit_process() if plain else served() as (url, proc):
        started = cpu_seconds(proc.pid)
        context = browser.new_context(viewport=VIEWPORT)
        try:
            wall = time.perf_counter()
            open_page(context.new_page(), url, "" if stem == "home" else stem)
            return time.perf_counter() - wall, started, cpu_seconds(proc.pid) - started
        finally:
            context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", choices=[[], *STEMS], help="page stems (default: all)")
    parser.add_argument("--plain", action="store_true", help="a bare streamlit run server, not warmed")
    args = parser.parse_args()
    stems = args.pages or STEMS
    compile_all()
    compiled = set(Path(jit.CACHE_DIR).rglob("*.nbi"))
    print(f"{'page':<16}{'wall s':>8}{'server CPU s: ready':>21}{'view':>7}  load")
    worst = 0.0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**LAUNCH)
        for stem in stems:
            wall, start_cpu, view_cpu = first_view(browser, stem, args.plain)
            worst = max(worst, wall)
            print(f"{stem:<16}{wall:>8.2f}{start_cpu:>21.2f}{view_cpu:>7.2f}  {os.getloadavg()[0]:.1f}", flush=True)
        browser.close()
    print(f"slowest first view {worst:.2f} s (target {TARGET_S:.0f} s)")
    late = sorted(p.name for p in set(Path(jit.CACHE_DIR).rglob("*.nbi")) - compiled)
    print(f"kernels a page compiled that the start-up had not: {', '.join(late) or 'none'}")


if __name__ == "__main__":
    main()
