"""A classroom on one server: N students open every page at once, at its defaults and after one change.

The real server (``streamlit run``, loopback only) and N browser contexts of ONE headless Chromium.
A warm-up pass by one student fills the caches; then, for each N, every student walks through every
page (default URL, then the same page with one control changed). Printed per page: median and p95
time until the page is idle, errors (an exception element or a timeout), and for the whole pass
the server's CPU seconds per page view (its own utime + stime from /proc: the browsers do not
count) and its peak memory (VmHWM). Run with ``make bench`` or
``.venv/bin/python bench/bench_classroom.py [N ...]`` (default 5 10 20).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import Browser, Page, async_playwright  # noqa: E402

from tests.e2e.conftest import LAUNCH, VIEWPORT, streamlit_process  # noqa: E402

VISITS = [             # (page, the URL after one control change)
    ("", "presenter=true"),
    ("trace", "trace_seed=1"),
    ("eviction", "eviction_points=10"),
    ("radix", "radix_view=Text+dump"),
    ("ledger", "ledger_context=16000"),
    ("strata", "strata_view=Loading-bound"),
    ("cluster", "cluster_load=3"),
    ("cachegen", "cachegen_slo=2"),
    ("cacheblend", "cacheblend_ratio=0.3"),
]
TIMEOUT_MS = 180_000
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (not its children), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Results:
    seconds: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, seconds: float | None) -> None:
        if seconds is None:
            self.errors[name] = self.errors.get(name, 0) + 1
        else:
            self.seconds.setdefault(name, []).append(seconds)

    @property
    def views(self) -> int:
        return sum(map(len, self.seconds.values())) + sum(self.errors.values())


async def visit(page: Page, url: str) -> float | None:
    """Open ``url``; seconds until the script is idle, or None on an exception element or timeout."""
    start = time.perf_counter()
    try:
        await page.goto(url, timeout=TIMEOUT_MS)
        await page.locator("h1").first.wait_for(timeout=TIMEOUT_MS)
        app = page.get_by_test_id("stApp")
        await page.wait_for_function(
            "() => { const a = document.querySelector('[data-testid=stApp]');"
            " return a && a.dataset.testConnectionState === 'CONNECTED'"
            " && a.dataset.testScriptState === 'notRunning'"
            " && !document.querySelector('[data-testid=stSkeleton]'); }", timeout=TIMEOUT_MS)
        if await page.get_by_test_id("stException").count() or not await app.count():
            return None
    except Exception:   # noqa: BLE001 - a timeout or a closed page counts as an error
        return None
    return time.perf_counter() - start


async def student(browser: Browser, base: str, results: Results) -> None:
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    for stem, change in VISITS:
        name = stem or "home"
        results.add(f"{name}", await visit(page, f"{base}/{stem}"))
        results.add(f"{name} +change", await visit(page, f"{base}/{stem}?{change}"))
    await context.close()


async def classroom(browser: Browser, base: str, n: int) -> Results:
    results = Results()
    await asyncio.gather(*(student(browser, base, results) for _ in range(n)))
    return results


def report(n: int, results: Results, cpu: float, wall: float, peak: float) -> None:
    print(f"\n== N = {n} students: {results.views} page views in {wall:.0f} s wall; server "
          f"{cpu / max(results.views, 1):.3f} CPU s per page view ({cpu:.0f} s in all), peak memory {peak:,.0f} MB")
    print(f"{'page':<24}{'median s':>10}{'p95 s':>10}{'errors':>8}")
    for name in [f"{s or 'home'}{suffix}" for s, _ in VISITS for suffix in ("", " +change")]:
        times = sorted(results.seconds.get(name, []))
        med = statistics.median(times) if times else float("nan")
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else float("nan")
        print(f"{name:<24}{med:>10.2f}{p95:>10.2f}{results.errors.get(name, 0):>8}")


async def main(sizes: list[int]) -> None:
    with streamlit_process() as (base, proc):
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**LAUNCH)
            cpu0, wall0 = cpu_seconds(proc.pid), time.perf_counter()
            warm = await classroom(browser, base, 1)
            print(f"warm-up (one student, cold caches): {warm.views} page views, "
                  f"{cpu_seconds(proc.pid) - cpu0:.0f} server CPU s, {time.perf_counter() - wall0:.0f} s wall, "
                  f"errors {sum(warm.errors.values())}", flush=True)
            for n in sizes:
                cpu0, wall0 = cpu_seconds(proc.pid), time.perf_counter()
                results = await classroom(browser, base, n)
                report(n, results, cpu_seconds(proc.pid) - cpu0, time.perf_counter() - wall0, peak_memory_mb(proc.pid))
                sys.stdout.flush()
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main([int(a) for a in sys.argv[1:]] or [5, 10, 20]))
