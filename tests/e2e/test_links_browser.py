"""Browser: on every page, every control changed, the copied link reopened by a second visitor
(a browser context of its own) shows the same values.

The test knows no page: it finds the widgets on the page (sliders, number inputs, select boxes,
multiselects, toggles and checkboxes, segmented controls and pills, radios, text fields) by their
test ids and their keys (Streamlit marks a keyed widget's container ``st-key-<key>``), changes each
visible one that belongs to the page (key ``<stem>_...``) in rounds — a change can reveal or enable
others — takes "Copy link" (``window.kvvizCopiedLink``, ui/kit/links.py), opens that link in a tab
of another browser context (one for the module, see ``_second_visitor_tab``) and compares what
both show. A widget without a key cannot be in the URL: it counts as a failure too.

The browser draws no figure and no interactive table here (``without_drawing``):
what is compared is the controls, the static tables and the numbers, and Chromium drawing each
rerun's figures and grids in software was most of what the test cost. The server still builds and
sends every figure and grid, so an error building one still shows as an exception; the layout tests
draw every figure and grid of every view (and take each page's screenshots).

The same visit checks the cache replay through the real server: a cached function's elements are
replayed on a cache hit, and one that drew a progress bar or took an element from an earlier run
crashes the view exactly then. The page is rerun (the "r" shortcut) at the view it starts from and
must show the same key numbers, and the copied link, opened in the other context, is a second visitor
of the changed view, served from the cache: it must show the same key numbers too. Every other view
with a cached function of its own gets the rerun and second-visitor check in AppTest
(tests/pages/test_cached_views.py).

Every select box is opened with one click (``open_select``) and its option clicked at once: a
list that closed again right after opening (a rerun after the load, a scroll) fails here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError

from kvviz.common.catalog import PAGES
from tests.e2e.browser import (
    assert_no_exception,
    key_numbers,
    open_page,
    open_select,
    rerun,
    settle,
    wait_idle,
    watch_runs,
    without_drawing,
)
from ui.kit import keys, links

ROOT = Path(__file__).resolve().parents[2]
BUILT = [p.stem for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]
LAPTOP = {"width": 1366, "height": 768}
ROUNDS = 3
ACTION_MS = 10_000  # one change; a widget an earlier change removed is skipped after this
NOT_VIEW_STATE = keys.PLAYBACK_SUFFIXES  # Play and its speed move the view, they are not a view
# Controls known not to survive a link yet: {stem: {key, ...}} (a key fixed here must leave the list)
KNOWN: dict[str, set[str]] = {}
# Where a page's defaults make every change a long run, it starts from a light view: every control is
# still changed from there, and the light values themselves must survive the link too. A page that
# replays a synthetic trace starts from its smallest, 100 requests (3,000 by default).
LIGHT = {
    "cluster": "cluster_minutes=5&cluster_seeds=1&cluster_requests=100",
    "cachegen": "cachegen_k=100",
    "eviction": "eviction_points=6&eviction_requests=100",
    "prefix_cache": "prefix_points=4&prefix_requests=100",
    "tiers": "tiers_requests=100",
    "trace": "trace_requests=100",
}

# Every visible widget in the app: its key (null without one), kind, label, value and state.
WIDGETS = """() => {
  const kinds = ['stSlider', 'stNumberInput', 'stSelectbox', 'stMultiSelect', 'stCheckbox', 'stButtonGroup',
                 'stRadio', 'stTextArea', 'stTextInput'];
  const value = (kind, w) => {
    switch (kind) {
      case 'stSlider': return Array.from(w.querySelectorAll('input[type=range]')).map(i => i.value).join(' – ');
      case 'stMultiSelect': return Array.from(w.querySelectorAll('[data-tag]')).map(t => t.innerText.trim()).join(', ');
      case 'stCheckbox': return String(w.querySelector('input').checked);
      case 'stButtonGroup':
        return Array.from(w.querySelectorAll('button[aria-checked=true], button[aria-pressed=true]'))
          .map(b => b.innerText.trim()).join(', ');
      case 'stRadio': {
        const i = w.querySelector('input:checked'); return i ? i.closest('label').innerText.trim() : ''; }
      case 'stTextArea': return w.querySelector('textarea').value;
      default: return w.querySelector('input').value;
    }
  };
  const disabled = w => {
    const controls = Array.from(w.querySelectorAll('input, textarea, button[role=radio], button[aria-pressed]'));
    return controls.length > 0 && controls.every(c => c.disabled || c.getAttribute('aria-disabled') === 'true');
  };
  const out = [];
  for (const kind of kinds) {
    for (const w of document.querySelectorAll(`[data-testid=${kind}]`)) {
      if (!w.getClientRects().length) continue;                 // in a closed expander or another tab
      const box = w.closest('[data-testid=stElementContainer]');
      const key = box ? (Array.from(box.classList).find(c => c.startsWith('st-key-')) || '').slice(7) || null : null;
      const label = (w.querySelector('[data-testid=stWidgetLabel]') || w).textContent.trim().slice(0, 60);
      out.push({key, kind, label, value: value(kind, w), disabled: disabled(w)});
    }
  }
  return out;
}"""


def owner(key: str) -> str | None:
    """The page a widget key belongs to: the longest stem ``s`` with the key starting ``s_``."""
    stems = [stem for stem in BUILT if key.startswith(links.page_prefix(stem))]
    return max(stems, key=len) if stems else None


def widgets(page: Page, stem: str) -> list[dict]:
    """The page's own visible widgets (keyed ``<stem>_...``, or with no key at all)."""
    return [w for w in page.evaluate(WIDGETS) if w["key"] is None or owner(w["key"]) == stem]


def changeable(page: Page, stem: str) -> set[str]:
    """The keys of the page's widgets that show and are enabled now."""
    return {w["key"] for w in widgets(page, stem) if w["key"] and not w["disabled"]}


def name(w: dict) -> str:
    return w["key"] or f"{w['kind']} '{w['label']}' (no key)"


def open_expanders(page: Page) -> None:
    """Open every closed expander, one at a time: opening one that draws its content only while open
    (``ui.kit.frame.folded``) reruns the page, which may add more."""
    closed = page.locator("[data-testid=stExpander] details:not([open]) > summary")
    for _ in range(20):
        if not closed.count():
            return
        closed.first.click()
        wait_idle(page)


def change(page: Page, w: dict) -> None:
    """Move one widget off its current value, the way a person would."""
    box = page.locator(f".st-key-{w['key']}").first
    kind = w["kind"]
    if kind == "stSlider":
        thumb = box.locator("input[type=range]").first
        at_max = thumb.evaluate("i => Number(i.value) >= Number(i.max)")
        thumb.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
    elif kind == "stNumberInput":
        field = box.locator("input")
        if not field.input_value():
            field.fill(field.get_attribute("min") or "1")
            field.press("Enter")
        else:
            # the arrow keys step it as its + and − do (which a narrow column hides)
            at_max = field.evaluate("i => i.max !== '' && Number(i.value) >= Number(i.max)")
            field.focus()
            page.keyboard.press("ArrowDown" if at_max else "ArrowUp")
    elif kind in ("stSelectbox", "stMultiSelect"):
        listbox = page.get_by_role("listbox")
        for attempt in range(2):
            # A rerun that ends while the list is open redraws the widget and closes the list (so does
            # any scroll around it, e.g. a table's grid sizing itself): open it on an idle page, twice
            # at most, as a person clicks again.
            wait_idle(page)
            open_select(box.get_by_role("combobox"))
            try:
                expect(listbox).to_be_visible(timeout=3_000 if attempt == 0 else ACTION_MS)
                break
            except AssertionError:
                if attempt:
                    raise
                page.keyboard.press("Escape")
        others = [o for o in listbox.get_by_role("option").all() if o.inner_text().strip() != w["value"]]
        if others:
            others[0].click()
            if kind == "stMultiSelect":
                # Its list stays open after a pick, over the controls below it: close it, as a person
                # clicks away, or the next click there waits behind it until the action times out.
                page.keyboard.press("Escape")
        else:
            page.keyboard.press("Escape")
            box.locator("[data-tag] button").last.click()
    elif kind == "stCheckbox":
        box.locator("label").first.click()
    elif kind == "stButtonGroup":
        box.locator("button[aria-checked=false]:enabled, button[aria-pressed=false]:enabled").first.click()
    elif kind == "stRadio":
        box.locator("label:has(input:enabled:not(:checked))").first.click()
    elif kind == "stTextArea":
        area = box.locator("textarea")
        area.fill(area.input_value() + "\n" + area.input_value().splitlines()[0] if area.input_value() else "1")
        area.press("Control+Enter")
    else:
        field = box.locator("input")
        field.fill(field.input_value() + "1")
        field.press("Enter")


def change_every_control(page: Page, stem: str) -> dict[str, str]:
    """Change each of the page's controls once it shows; returns the first value each showed."""
    first: dict[str, str] = {}
    tries: dict[str, int] = {}
    for _ in range(ROUNDS):
        open_expanders(page)
        todo = [
            w
            for w in widgets(page, stem)
            if w["key"]
            and not w["key"].endswith(NOT_VIEW_STATE)
            and not w["disabled"]
            and w["value"] == first.setdefault(w["key"], w["value"])
            and tries.get(w["key"], 0) < 2
        ]
        if not todo:
            break
        for w in todo:
            if w["key"] not in changeable(page, stem):
                continue  # an earlier change of this round removed or disabled it: the next round sees
            tries[w["key"]] = tries.get(w["key"], 0) + 1
            try:
                change(page, w)
            except PlaywrightError:  # gone or disabled by an earlier change of this round: next round
                page.keyboard.press("Escape")
            settle(page)
        wait_idle(page)
    return first


def shown(page: Page, stem: str) -> dict[str, str]:
    open_expanders(page)
    wait_idle(page)
    return {name(w): w["value"] for w in widgets(page, stem) if not (w["key"] or "").endswith(NOT_VIEW_STATE)}


def url_settled(page: Page, quiet_s: float = 1.0, most_s: float = 20.0) -> None:
    """Wait until the address has not changed, and no script has run, for ``quiet_s`` (at most
    ``most_s``): a fragment's quick rerun can leave the page's script state as it was, so
    ``wait_idle`` may return before the run that writes the last control into the URL, and on a
    loaded machine a slider's debounced change starts a run that outlasts a quiet second."""
    app = page.get_by_test_id("stApp")
    last, since, end = page.url, time.monotonic(), time.monotonic() + most_s
    while time.monotonic() < end and time.monotonic() - since < quiet_s:
        page.wait_for_timeout(100)
        if page.url != last or app.get_attribute("data-test-script-state") != "notRunning":
            last, since = page.url, time.monotonic()


@pytest.fixture(scope="module")
def _second_visitor_tab(browser: Browser, browser_context_args: dict):
    """The tab every page's copied link is opened in: a browser context of its own, so it shares
    no cookie or storage with the tab whose controls were changed, reused from page to page.

    It is the second visitor of each changed view: it never had a session on that view, and
    opening the link starts a new one. What it keeps from earlier links is what a second visitor
    on the same machine has anyway: the browser's cache of Streamlit's scripts, and its storage
    of other pages' visits. A new context per page started a new renderer, which parsed and
    compiled those scripts again each time, without checking anything more.
    """
    context = browser.new_context(**{**browser_context_args, "viewport": LAPTOP})
    without_drawing(context)
    yield context.new_page()
    context.close()


@pytest.fixture
def second_visitor(_second_visitor_tab: Page):
    """The second-visitor tab; its last page is left for a blank one (its session ends)."""
    yield _second_visitor_tab
    if not _second_visitor_tab.is_closed():
        _second_visitor_tab.goto("about:blank")


@pytest.mark.parametrize("stem", BUILT)
def test_every_control_survives_the_copied_link(undrawn: Page, second_visitor: Page, app_url: str, stem: str):
    page = undrawn
    watch_runs(page)
    page.set_viewport_size(LAPTOP)
    open_page(page, app_url, stem, LIGHT.get(stem, ""))
    page.set_default_timeout(ACTION_MS)
    assert_no_exception(page)
    before_rerun = key_numbers(page)
    rerun(page)
    assert_no_exception(page)
    assert key_numbers(page) == before_rerun, f"{stem}: the rerun shows other numbers"
    first = change_every_control(page, stem)
    assert_no_exception(page)
    url_settled(page)
    here = shown(page, stem)
    numbers = key_numbers(page)
    page.frame_locator("iframe").first.locator("#copy").click()
    page.wait_for_function("() => window.kvvizCopiedLink")
    link = page.evaluate("() => window.kvvizCopiedLink")
    there_page = second_visitor
    there_page.goto(link)
    there_page.get_by_test_id("stAppViewContainer").wait_for()
    wait_idle(there_page)
    assert_no_exception(there_page)
    there = shown(there_page, stem)
    there_numbers = key_numbers(there_page)
    lost = {k: (v, there.get(k)) for k, v in here.items() if there.get(k) != v}
    lost |= {k: (None, v) for k, v in there.items() if k not in here}
    lost |= {k: ("no key", "not in the URL") for k in here if k.endswith("(no key)")}
    unchanged = sorted(k for k, v in first.items() if here.get(k) == v)
    failing = set(lost) - KNOWN.get(stem, set())
    assert not failing, (
        f"{stem}: shown here → in the copied link: "
        + "; ".join(f"{k}: {lost[k][0]!r} → {lost[k][1]!r}" for k in sorted(failing))
        + f" (link {link}; not changed by the test: {unchanged})"
    )
    assert there_numbers == numbers, f"{stem}: the second visitor of {link} reads other numbers"


def test_a_control_the_address_lost_comes_back_with_the_next_run(page: Page, app_url: str):
    """Under load, a run's URL message can reach the browser after the viewer changed another
    control: the address then lacks that control, and the next change's rerun carries the address
    without it. The run's end writes every control shown back into the address."""
    open_page(page, app_url, "cacheblend", "cacheblend_chunk=3")
    page.evaluate("() => history.replaceState({}, '', location.pathname)")  # what the late message does
    page.get_by_test_id("stButtonGroup").get_by_text("The model").click()
    page.wait_for_url(lambda url: "cacheblend_chunk=3" in url)
    wait_idle(page)
    assert "cacheblend_view=The+model" in page.url
    expect(page.get_by_test_id("stSlider").first).to_contain_text("3")
