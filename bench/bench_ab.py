"""Paired warm reruns: the same controls changed on two checkouts' servers, in turns, in one run.

On this shared 2-core host one change's median moves by up to ±0.1 s from one run of
``bench_rerun.py`` to the next, more than most changes to a view are worth, so two separate runs
cannot tell whether a change made a view faster. This starts the app of this checkout (A) and of
``--other`` (B, e.g. a ``git worktree`` of the commit before) on two loopback ports, opens each in
its own context of one headless Chromium, and moves the same control on A and on B in turns (A B,
then B A, …), timed exactly as ``bench_rerun.py`` times it, so both see the same load. Printed per
control: each side's median, the median of the paired differences A − B and the ratio of the
medians; a change is only worth keeping where the paired difference is clear of zero. Without
``--other``, B is a temporary ``git worktree`` of HEAD: what the uncommitted change does (with a
clean tree, A = B, the noise itself).

``.venv/bin/python -m bench.bench_ab [--other /tmp/kvviz-base] [--pages cluster] [--controls cluster_view]
[--repeats 10]``
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from bench.bench_rerun import PAGES, Change, change_once, controls, load_average, open_default
from tests.e2e.browser import LAUNCH, VIEWPORT, streamlit_process

ROOT = Path(__file__).resolve().parents[1]


def paired(pages: dict[str, Page], changes: dict[str, Change], repeats: int) -> dict[str, list[float]]:
    """``repeats`` rounds; in each, every side changes the control and back (2 timed changes), the
    side going first alternating from round to round. After one untimed change and back each."""
    walls: dict[str, list[float]] = {side: [] for side in pages}
    for side, page in pages.items():
        change_once(page, changes[side].forward)
        change_once(page, changes[side].back)
    order = list(pages)
    for i in range(repeats):
        for side in order if i % 2 == 0 else order[::-1]:
            for move in (changes[side].forward, changes[side].back):
                walls[side].append(change_once(pages[side], move)["wall"])
    return walls


def report(stem: str, name: str, walls: dict[str, list[float]]) -> None:
    a, b = walls["A"], walls["B"]
    diff = statistics.median(x - y for x, y in zip(a, b))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{stem:<15}{name:<42.42}{len(a):>3}{ma:>8.3f}{mb:>8.3f}{diff:>+9.3f}{ma / mb:>7.2f}", flush=True)


@contextmanager
def head_worktree() -> Iterator[Path]:
    """A temporary checkout of this repository's HEAD, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="kvviz-head-") as tmp:
        path = Path(tmp) / "head"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(path), "HEAD"], check=True
        )
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)


def run(other: Path, stems: list[str], repeats: int, only: list[str]) -> None:
    print(f"A = {ROOT}, B = {other}; load average at start {load_average()}; {repeats} rounds of 2 changes per side")
    with ExitStack() as stack, sync_playwright() as pw:
        bases = {
            side: stack.enter_context(streamlit_process(root=root))[0] for side, root in (("A", ROOT), ("B", other))
        }
        browser = pw.chromium.launch(**LAUNCH)
        pages = {side: browser.new_context(viewport=VIEWPORT).new_page() for side in bases}
        print(f"{'page':<15}{'control':<42}{'n':>3}{'A':>8}{'B':>8}{'A − B':>9}{'A / B':>7}")
        for stem in stems:
            found = {}
            for side, page in pages.items():
                open_default(page, bases[side], stem)
                found[side] = {
                    c.name: c for c in controls(page, stem, only) if not only or any(o in c.name for o in only)
                }
            for name in [n for n in found["A"] if n in found["B"]]:
                report(stem, name, paired(pages, {side: found[side][name] for side in pages}, repeats))
            for name in sorted(set(found["A"]) ^ set(found["B"])):
                print(f"{stem:<15}{name:<42.42} on one side only: not compared")
        browser.close()
    print(f"load average at end {load_average()}")


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop both servers and the browser on `timeout`
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, help="the other checkout (B); default: a temporary worktree of HEAD")
    ap.add_argument("--pages", default=",".join(PAGES), help="comma-separated page stems (default: all)")
    ap.add_argument("--controls", default="", help="only controls whose name contains one of these (comma-separated)")
    ap.add_argument("--repeats", type=int, default=8, help="rounds per control (default 8), 2 timed changes each")
    args = ap.parse_args()
    stems = [s.strip() for s in args.pages.split(",") if s.strip()]
    if (args.other and not (args.other / "app.py").exists()) or set(stems) - set(PAGES) or args.repeats < 1:
        ap.exit(2, "bench_ab: --other must be a kvviz checkout, --pages known page stems, --repeats ≥ 1\n")
    only = [c.strip() for c in args.controls.split(",") if c.strip()]
    with ExitStack() as stack:
        other = args.other.resolve() if args.other else stack.enter_context(head_worktree())
        run(other, stems, args.repeats, only)


if __name__ == "__main__":
    main()
