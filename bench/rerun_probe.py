"""The timing probe of bench_rerun: when a change's input happened, when the page settled after it.

Installed in the page after each load (``PROBE``): a trusted key or pointer press starts a change,
the script-state transitions and the last DOM mutation end it. ``settle`` waits for the run the last
input started and returns its wall and script seconds; accounting of CPU time is here too: the
server's from ``/proc`` (bench_classroom.cpu_seconds) and the browser's (Chromium and Playwright's driver).
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page

from bench.bench_classroom import cpu_seconds
from tests.e2e.browser import open_page

QUIET_MS = 300  # no DOM change for this long after the run: the page has settled
NO_RUN_MS = 30_000  # a change that starts no run within this is reported, not waited for
TIMEOUT_MS = 240_000

# Installed after each page load: input time, script-state transitions, last DOM mutation.
PROBE = """() => {
  const k = window.__kvb = {input: 0, states: [], lastMut: performance.now(), ctl: '', shown: 0};
  const aside = n => { const e = n.nodeType === 1 ? n : n.parentElement;
    return !e || e.closest('[data-baseweb=popover], [data-baseweb=tooltip]')
      || (k.ctl && e.closest('.st-key-' + k.ctl)); };
  // A canvas's children are its fallback content, never painted (glide-data-grid, st.dataframe's grid,
  // fills its accessibility table ~0.3 s after the grid is drawn): they do not count as the page changing.
  const unpainted = r => { const e = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    return e && (e.tagName === 'CANVAS' ? r.type === 'childList' : e.closest('canvas')); };
  new MutationObserver(records => {
    const now = performance.now();
    for (const r of records) {
      if (unpainted(r)) continue;
      k.lastMut = now;
      if (r.attributeName === 'data-test-script-state') k.states.push([r.target.dataset.testScriptState, now]);
      else if (!aside(r.target)) k.shown = now;
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  for (const t of ['keydown', 'pointerdown'])
    document.addEventListener(t, e => { if (e.isTrusted) k.input = performance.now(); }, true);
}"""
ARM = "key => { Object.assign(window.__kvb, {input: 0, states: [], ctl: key, shown: 0}); }"
SETTLED = """([quiet, noRun]) => {
  const k = window.__kvb, now = performance.now();
  if (!k || !k.input) return false;
  const ran = k.states.filter(([s, t]) => s !== 'notRunning');
  const app = document.querySelector('[data-testid=stApp]');
  const idle = app.dataset.testScriptState === 'notRunning' && app.dataset.testConnectionState === 'CONNECTED'
      && !document.querySelector('[data-testid=stSkeleton]') && now - k.lastMut >= quiet;
  if (!ran.length) {
    // A quick fragment run can leave the page's script state unchanged; what it redrew outside the
    // control itself (and outside pop-overs) still shows that it ran, and when it ended.
    if (idle && k.shown > k.input) return {wall: (k.lastMut - k.input) / 1000, script: null};
    return now - k.input > noRun ? {norun: true} : false;
  }
  if (!idle) return false;
  const done = k.states.filter(([s, t]) => s === 'notRunning');
  const end = Math.max(k.lastMut, done.length ? done[done.length - 1][1] : 0);
  return {wall: (end - k.input) / 1000,
          script: ((done.length ? done[done.length - 1][1] : end) - ran[0][1]) / 1000};
}"""


class NoRerun(RuntimeError):
    """The change started no script run (the control did not commit a value)."""


def arm(page: Page, key: str) -> None:
    """Start timing a change of control ``key`` (its own redraws do not count as the page's)."""
    page.evaluate(ARM, key)


def settle(page: Page) -> dict:
    """Wait for the run the last input started; its wall and script seconds."""
    out = page.wait_for_function(SETTLED, arg=[QUIET_MS, NO_RUN_MS], timeout=TIMEOUT_MS, polling=50).json_value()
    if out.get("norun"):
        raise NoRerun("the change started no rerun")
    return out


def open_default(page: Page, base: str, stem: str) -> str:
    """Open the page at its defaults (as the browser tests do) and install the probe; the URL it settles on."""
    open_page(page, base, stem, timeout=TIMEOUT_MS)
    page.wait_for_timeout(QUIET_MS)
    page.evaluate(PROBE)
    return page.url


def cpu_now(server: int) -> tuple[float, float]:
    """CPU seconds so far of the server process and of the browser."""
    return cpu_seconds(server), browser_cpu_seconds(server)


def browser_cpu_seconds(server: int) -> float:
    """CPU seconds of this process's descendants but the server: Chromium and Playwright's driver."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        parents[int(stat.parent.name)] = int(fields[1])
    mine, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parents.items() if p == pid and c != server]
        mine.update(kids)
        todo += kids
    total = 0.0
    for pid in mine:
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
