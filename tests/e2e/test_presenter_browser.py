"""Presenter mode in headless Chromium: ``?presenter=1`` in a fresh context, the link bar, keyboard
stepping and Play on the radix page, the stepped views (radix, the prefix cache's worked example) in
the first screen, and a zoomed table as wide as its column. The font sizes of every
view (``projector_faults``) and the presenting screenshots are taken by test_layout_browser.py, which
opens every view in presenter mode anyway."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, settle, wait_idle

PROJECTOR = {"width": 1920, "height": 1080}
MIN_PX = 20

# the smallest computed font size of each kind of text on the page (null when the page has none)
FONT_SIZES = """() => {
  const kinds = {
    body: '[data-testid=stMain] [data-testid=stMarkdownContainer] p',
    caption: '[data-testid=stMain] [data-testid=stCaptionContainer]',
    table: '[data-testid=stTable] td, [data-testid=stTable] th',
    metric: '[data-testid=stMetricValue], [data-testid=stMetricLabel] p',
    button: '[data-testid=stMain] button p',
    label: '[data-testid=stWidgetLabel] p, [data-testid=stMultiSelectTagsContainer] span',
    input: '[data-testid=stMain] input[type=text], [data-testid=stMain] input[type=number]',
    expander: '[data-testid=stExpander] summary p',
    alert: '[data-testid=stAlert] p',
  };
  const out = {};
  for (const [kind, selector] of Object.entries(kinds)) {
    const sizes = Array.from(document.querySelectorAll(selector))
      .filter(e => e.offsetParent !== null && e.innerText.trim())
      .map(e => parseFloat(getComputedStyle(e).fontSize));
    out[kind] = sizes.length ? Math.min(...sizes) : null;
  }
  return out;
}"""


@pytest.fixture
def projector(page: Page) -> Page:
    page.set_viewport_size(PROJECTOR)
    return page


def projector_faults(page: Page, where: str) -> list[str]:
    """Text below projector size on the page as shown, figure ticks included, one line each."""
    sizes = page.evaluate(FONT_SIZES)
    faults = [f"{where}: {kind} text at {px} px in presenter mode" for kind, px in sizes.items() if px and px < MIN_PX]
    if not sizes["body"]:  # the selectors still find the page's text
        faults.append(f"{where}: no body text to measure ({sizes})")
    # one evaluate over the ticks there are now: a figure redrawn meanwhile cannot leave a stale handle
    ticks = page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot .xtick text, "
        ".js-plotly-plot .ytick text')).slice(0, 20)"
        ".map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    if ticks and min(ticks) < MIN_PX:
        faults.append(f"{where}: figure ticks at {min(ticks)} px in presenter mode")
    return faults


def test_a_presenter_link_opens_presenter_mode_in_a_fresh_browser(browser, app_url: str):
    context = browser.new_context(viewport=PROJECTOR)
    try:
        page = context.new_page()
        open_page(page, app_url, "cacheblend", "presenter=1")
        expect(page.locator("html")).to_have_css("font-size", "22px")
        expect(page.get_by_test_id("stSidebar")).to_have_attribute("data-collapsed", "true")
        page.get_by_test_id("stExpandSidebarButton").click()
        expect(page.get_by_test_id("stSidebar").get_by_role("switch", name="Presenter mode")).to_be_checked()
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Radix tree").click()
        page.wait_for_url("**/radix**")
        wait_idle(page)
        expect(page.locator("html")).to_have_css("font-size", "22px")
        assert "presenter=true" in page.url
    finally:
        context.close()


def test_copy_link_and_reset_to_defaults(projector: Page, app_url: str):
    page = projector
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    try:
        open_page(page, app_url, "cacheblend", "cacheblend_chunk=3&cacheblend_seed=7")
        page.get_by_test_id("stButtonGroup").get_by_text("The model").click()
        wait_idle(page)
        page.frame_locator("iframe").first.locator("#copy").click()
        expect(page.frame_locator("iframe").first.locator("#done")).to_have_text("Copied")
        copied = page.evaluate("() => window.kvvizCopiedLink")
        assert "cacheblend_chunk=3" in copied and "cacheblend_view=The+model" in copied
        page.get_by_role("button", name="Reset to defaults").click()
        page.wait_for_url(lambda url: "cacheblend_chunk" not in url)
        wait_idle(page)
        assert_no_exception(page)
        expect(page.get_by_test_id("stSlider").first).to_contain_text("5")
        expect(page.get_by_text("Document 0: which tokens are recomputed")).to_be_visible()
    finally:
        page.context.clear_permissions()


def test_arrow_keys_step_the_radix_page(projector: Page, app_url: str):
    open_page(projector, app_url, "radix")
    assert_no_exception(projector)
    heading = projector.get_by_role("heading", name="Step 0 of", exact=False)
    expect(heading).to_be_visible()
    heading.click()  # focus on the page, not on a widget
    projector.wait_for_function("() => !!window.kvvizStepListener")  # the keys component has loaded
    projector.keyboard.press("ArrowRight")
    expect(projector.get_by_role("heading", name="Step 1 of", exact=False)).to_be_visible()
    projector.keyboard.press("ArrowRight")
    projector.keyboard.press("ArrowLeft")
    # both presses taken: the queue is empty and no step is waiting for its run (ui/kit/keys.py)
    projector.wait_for_function("() => !window.kvvizStepBusy && !window.kvvizStepQueue.length")
    expect(projector.get_by_role("heading", name="Step 1 of", exact=False)).to_be_visible()
    projector.wait_for_url(lambda url: "radix_step=1" in url)


# whether the radix page's step heading says step ``n`` or later (looked at on every frame: at 0.5 s a
# step, a heading can come and go between two looks of a slower poll)
STEP_AT_LEAST = """(n) => [...document.querySelectorAll('[data-testid=stMain] h4')]
  .some(h => { const m = h.innerText.match(/^Step (\\d+) of/); return m && Number(m[1]) >= n; })"""


def test_play_steps_the_radix_page_by_itself_and_stops(projector: Page, app_url: str):
    """Play at its quickest speed moves the step by itself, twice, and stops when switched off."""
    open_page(projector, app_url, "radix")
    projector.get_by_test_id("stButtonGroup").get_by_text("0.5 s", exact=True).click()
    wait_idle(projector)
    play = projector.get_by_test_id("stMain").get_by_text("Play", exact=True)
    play.click()
    projector.wait_for_function(STEP_AT_LEAST, arg=2, polling="raf", timeout=30_000)
    play.click()
    expect(projector.get_by_role("switch", name="Play")).not_to_be_checked()
    wait_idle(projector)
    assert_no_exception(projector)


# Where a stepped view's parts are on the screen: the step's words (the first heading or paragraph matching
# ``words``), ▶, the figure, and the radix page's metric cards and the step's explanation under its heading
# (null where absent).
STEPPED_PARTS = """(words) => {
  const box = e => { if (!e) return null; const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom}; };
  const main = document.querySelector('[data-testid=stMain]');
  const said = [...main.querySelectorAll('h4, p')].find(e => new RegExp(words).test(e.innerText));
  const next = [...main.querySelectorAll('button')].find(b => b.innerText.trim() === '▶');
  return {words: box(said), next: box(next), figure: box(main.querySelector('.js-plotly-plot')),
          cards: box(main.querySelector('.st-key-radix_cards')),
          explanation: box(said && said.tagName === 'H4' ? main.querySelector('p em') : null)};
}"""
STEPPED = [
    ("radix", "radix_step=5", "^Step \\d+ of", {"words", "next", "figure", "cards", "explanation"}),
    (
        "radix",
        "radix_step=7&radix_cache=HiRadixCache",
        "^Step \\d+ of",
        {"words", "next", "figure", "cards", "explanation"},
    ),
    ("prefix_cache", "prefix_view=Worked+example&prefix_step=3", "^After request 3", {"words", "next", "figure"}),
]


@pytest.mark.parametrize(("stem", "query", "words", "parts"), STEPPED, ids=["radix", "hiradix", "prefix_cache"])
def test_a_stepped_view_fits_the_first_screen_in_presenter_mode(page: Page, app_url: str, stem, query, words, parts):
    """At 1366 × 768 and 1920 × 1080: the figure, the step's words, the arrows and (radix) the step's
    explanation and the cards that say what the step did, with no scroll (HiRadixCache's too)."""
    page.set_viewport_size({"width": 1366, "height": 768})
    open_page(page, app_url, stem, f"presenter=1&{query}")
    assert_no_exception(page)
    for size in ({"width": 1366, "height": 768}, PROJECTOR):
        page.set_viewport_size(size)
        wait_idle(page)
        found = page.evaluate(STEPPED_PARTS, words)
        assert {k for k, v in found.items() if v} == parts, found
        outside = {k: v for k, v in found.items() if v and (v["top"] < 0 or v["bottom"] > size["height"])}
        assert not outside, f"below the first screen at {size['width']}×{size['height']}: {outside}"


# each shown grid's width as drawn beside its container's, and the width its columns need beside the width
# they are shown in (its scroll area)
GRID_WIDTHS = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')]
  .filter(f => f.offsetParent !== null)
  .map(f => { const g = f.querySelector('.dvn-scroller');
    return [f.getBoundingClientRect().width, f.parentElement.getBoundingClientRect().width,
            g.scrollWidth, g.clientWidth]; })"""


def test_a_table_fills_its_width_in_presenter_mode(page: Page, app_url: str):
    """At 1366 × 768 the Strata page-size table, zoomed to projector size, is as wide as the page's column
    and shows all its columns (drawn at 69% of it, it needed a sideways scroll)."""
    page.set_viewport_size({"width": 1366, "height": 768})
    # a grid sizes its columns once, with the font it has then: the app's font is loaded first
    open_page(page, app_url, "", "presenter=1")
    page.evaluate("() => document.fonts.ready")
    open_page(page, app_url, "strata", "presenter=1&strata_view=Page+size")
    assert_no_exception(page)
    page.get_by_test_id("stDataFrame").scroll_into_view_if_needed()
    settle(page)
    [(drawn, column, needs, shows)] = page.evaluate(GRID_WIDTHS)
    assert abs(drawn - column) <= 1, f"the table is {drawn:.0f} px wide in a {column:.0f} px column"
    assert needs <= shows + 1, f"the table's columns need {needs} px and get {shows}"
