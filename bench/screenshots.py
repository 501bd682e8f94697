"""Screenshots of pages for a person to look at: each page at 1920 × 1080 and 1366 × 768, in and
out of presenter mode, as the first screen (what shows without a scroll) and as the whole page.

    python -m bench.screenshots                  # every page
    python -m bench.screenshots radix eviction   # some pages
    python -m bench.screenshots "radix?radix_view=Requests"

PNGs go to test-results/shots/<page>_<width>x<height>[_presenter]_{screen,page}.png.
"""

from __future__ import annotations

import sys

from playwright.sync_api import sync_playwright

from kvviz.common.catalog import PAGES
from tests.e2e.browser import LAUNCH, SHOTS, open_page, screenshot, streamlit_server

FIRST_RUN_MS = 300_000
SIZES = ({"width": 1920, "height": 1080}, {"width": 1366, "height": 768})


def shoot(page, url: str, target: str, presenter: bool) -> None:
    """The first screen and the whole page of ``target`` ("stem" or "stem?query") at each size."""
    stem, _, query = target.partition("?")
    name = stem + (f"_{query.replace('=', '-').replace('&', '_')[:60]}" if query else "")
    for size in SIZES:
        page.set_viewport_size(size)
        # a page's first run on a fresh server compiles its kernels: minutes on a loaded machine
        open_page(
            page, url, stem, "&".join(filter(None, [query, "presenter=1" if presenter else ""])), timeout=FIRST_RUN_MS
        )
        tag = f"{name}_{size['width']}x{size['height']}{'_presenter' if presenter else ''}"
        (SHOTS / "shots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "shots" / f"{tag}_screen.png"))
        screenshot(page, f"shots/{tag}_page")


def main(targets: list[str]) -> None:
    targets = targets or [p.stem for p in PAGES]
    with streamlit_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(**LAUNCH)
        page = browser.new_page()
        for target in targets:
            for presenter in (False, True):
                shoot(page, url, target, presenter)
                print(f"{target} {'presenter' if presenter else ''}", flush=True)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
