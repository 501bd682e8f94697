"""Browser: nothing in a figure is clipped or drawn over another label, every figure is drawn once in
the margins the server sized for it, and no table needs a sideways scroll, on every view of every page, at
1366 × 768 and 1920 × 1080, and in presenter mode.

What is measured is what Chromium drew: the bounding boxes (``getBoundingClientRect``) of each
figure's title, annotations (subplot titles, marker labels), legend and text labels must lie inside
the figure's own box, and no two of them may overlap (a tree's node labels included). Each view is shown
once: a page's first view from its link, the next ones (where a click reaches them) by clicking the view
switch or the next step as a visitor does, which reruns the page without loading the app again and
asserts the address then links that view; the window is then resized in the same page and the check
waits until every figure has been laid out again at its new width (plotly's SVG as wide as its
container), not for a time.

A table (``st.dataframe``, ``st.data_editor``) draws its cells on a canvas inside a scroller; its
columns, measured in its own font once its cells are drawn, must fit that scroller's width. Each is
brought into view to be measured (a grid below the fold has not laid its columns out), after the page's
fonts have loaded.

``kvviz.common.style.fitted_margins`` sizes each figure's margins for its labels, legend and colour bar so
that plotly's ``automargin`` finds nothing to grow. When a margin is too small, plotly.js lays the whole
figure out and draws it a second time, on every rerun that shows the figure: the margins plotly drew with
(``_fullLayout._size``) must be the ones asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import Page

from tests.e2e.browser import assert_no_exception, open_page, run_ends, screenshot
from tests.e2e.test_presenter_browser import projector_faults

NEXT = "▶"  # a stepped view's next step


@dataclass(frozen=True)
class View:
    """A view checked: the link that opens it (``query``), or, with ``clicks``, the buttons a visitor
    clicks to reach that same view from the one checked before it on the page. A click reruns the
    page in the tab it is in, where a link loads the whole app again and draws every part anew."""

    query: str
    clicks: tuple[str, ...] = ()


def clicked(key: str, *labels: str) -> list[View]:
    """The views of a view switch (URL parameter ``key``) reached in turn by clicking each of ``labels``."""
    return [View(f"{key}={label.replace(' ', '+')}", (label,)) for label in labels]


# every view of every page (light where a view computes much) and the overlapping leaders;
# presenter mode is the same views at projector fonts with the sidebar closed (a wider figure with larger
# labels)
VIEWS = {
    "": [View("")],
    "trace": [View("trace_tree=true")],
    "eviction": [
        View("eviction_points=6"),
        View("eviction_requests=1000&eviction_seed=3&eviction_qa=0.6&eviction_chat=0.1&eviction_oneshot=0.8"),
    ],
    "radix": [
        View("radix_step=5"),  # a step whose tree has a legend (step 0 holds only the root)
        View("radix_step=7", (NEXT, NEXT)),  # evicted ghosts under live nodes: where two-line labels crowded
        View("radix_view=Requests"),
        *clicked("radix_view", "Text dump"),
    ],
    "radix_schedule": [View("")],
    "prefix_cache": [
        View("prefix_view=Curves"),
        *clicked("prefix_view", "Worked example", "Per request", "Over time", "Prefix tree"),
    ],
    "ledger": [View("ledger_view=Size"), *clicked("ledger_view", "Load or recompute", "Economics", "Tiers")],
    "strata": [View("strata_view=Page+size"), *clicked("strata_view", "Loading-bound", "Balanced batching")],
    "cluster": [View("cluster_minutes=5&cluster_seeds=1"), View("cluster_view=Scheduling&cluster_source=Example")],
    "cachegen": [
        View("cachegen_k=100"),
        View("cachegen_view=Violation+vs+SLO&cachegen_k=100", ("Violation vs SLO",)),
        View("cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32"),
    ],
    "cacheblend": [
        View("cacheblend_view=One+document"),
        *clicked("cacheblend_view", "Accuracy vs ratio", "Loading controller", "The model"),
    ],
    "tiers": [View("tiers_requests=300")],
}

OPEN = {("ledger", "ledger_view=Size"): "Presets: edit any model"}
"""Expanders opened on a view before it is checked, so the tables they hold are checked too."""

SIZES = ({"width": 1366, "height": 768}, {"width": 1920, "height": 1080})
# Each figure's boxes, once every figure is as wide as its container (null while one is not):
# the figure, and its title, annotations, legend and text labels, each with its text.
BOXES = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd.offsetParent !== null);
  const box = e => { const r = e.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const out = [];
  for (const gd of plots) {
    const svg = gd.querySelector('.main-svg');
    if (!svg || Math.abs(svg.getBoundingClientRect().width - gd.getBoundingClientRect().width) > 1) return null;
    const items = [];
    const add = (kind, e) => { const b = box(e);
      if (b.x1 - b.x0 > 0 && b.y1 - b.y0 > 0) items.push({kind, text: (e.textContent || '').slice(0, 40), ...b}); };
    gd.querySelectorAll('.gtitle').forEach(e => add('title', e));
    gd.querySelectorAll('g.annotation-text-g').forEach(e => add('annotation', e));
    gd.querySelectorAll('g.legend').forEach(e => add('legend', e));
    gd.querySelectorAll('.textpoint text, g.text text').forEach(e => add('label', e));
    const key = (gd.closest('[class*=st-key-]') || {className: ''}).className.match(/st-key-(\\S+)/);
    const m = gd._fullLayout.margin, s = gd._fullLayout._size;
    out.push({figure: key ? key[1] : String(out.length), ...box(svg), items,
              asked: [m.l, m.r, m.t, m.b], drawn: [s.l, s.r, s.t, s.b].map(Math.round)});
  }
  return out;
}"""
# every shown table (not one in a closed expander or tab) has drawn its cells (its scroller exists): false
# while one is still loading
GRIDS_DRAWN = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')]
  .filter(f => f.checkVisibility()).every(f => f.querySelector('.dvn-scroller'))"""
# each shown table, once the fonts have loaded, brought into view: its first headers, the width its columns
# need and the width its scroller shows
GRIDS = """async () => {
  await document.fonts.ready;
  const out = [];
  for (const f of document.querySelectorAll('[data-testid=stDataFrame]')) {
    if (!f.checkVisibility()) continue;
    f.scrollIntoView({block: 'center'});
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const g = f.querySelector('.dvn-scroller');
    const heads = [...f.querySelectorAll('th')].map(t => t.innerText.trim()).filter(Boolean).slice(0, 3);
    out.push({table: heads.join(', ') || `table ${out.length + 1}`, needs: g.scrollWidth, shows: g.clientWidth});
  }
  return out;
}"""
FIRST_RUN_MS = 180_000  # a view's first run on a fresh server compiles its kernels: slow on a loaded machine
SLACK_PX = 1.5  # antialiasing: a box may pass its figure's edge by a fraction of a pixel


def _overlap(a: dict, b: dict) -> bool:
    return min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > SLACK_PX and (
        min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > SLACK_PX
    )


def layout_faults(figures: list[dict]) -> list[str]:
    """What is clipped (a box past its figure's edge), overlapping (any two of its title, annotations,
    legend and text labels: a tree's node labels, a marker's words) or drawn twice (a margin plotly grew),
    one line each."""
    faults = []
    for fig in figures:
        if fig.get("asked", []) != fig.get("drawn", []):
            faults.append(f"{fig['figure']}: plotly grew its margins (l, r, t, b) {fig['asked']} to {fig['drawn']}")
        for item in fig["items"]:
            if (
                item["x0"] < fig["x0"] - SLACK_PX
                or item["x1"] > fig["x1"] + SLACK_PX
                or item["y0"] < fig["y0"] - SLACK_PX
                or item["y1"] > fig["y1"] + SLACK_PX
            ):
                faults.append(f"{fig['figure']}: {item['kind']} {item['text']!r} is cut by the figure's edge")
        texts = fig["items"]
        faults += [
            f"{fig['figure']}: {a['kind']} {a['text']!r} and {b['kind']} {b['text']!r} overlap"
            for i, a in enumerate(texts)
            for b in texts[i + 1 :]
            if _overlap(a, b)
        ]
    return faults


def grid_faults(grids: list[dict]) -> list[str]:
    """The tables whose columns need more than the width they are shown in (a sideways scroll), one line each."""
    return [
        f"table '{g['table']}' needs {g['needs']} px and shows {g['shows']}: it scrolls sideways"
        for g in grids
        if g["needs"] > g["shows"] + 1
    ]


def check_layouts(page: Page, where: str) -> list[str]:
    """The faults at each window size, after the figures have been laid out at it. The width the page
    is at comes first (a screenshot leaves the window taller): the browser lays every figure out once
    for it already, and a resize to another width and back would lay them out twice more for nothing."""
    faults = []
    for size in sorted(SIZES, key=lambda size: size["width"] != page.viewport_size["width"]):
        if size != page.viewport_size:
            page.set_viewport_size(size)
        figures = page.wait_for_function(BOXES, timeout=30_000).json_value()
        page.wait_for_function(GRIDS_DRAWN, timeout=30_000)
        found = layout_faults(figures) + grid_faults(page.evaluate(GRIDS))
        faults += [f"{where} at {size['width']}×{size['height']}: {f}" for f in found]
    return faults


def test_layout_faults_names_a_cut_label_and_an_overlap():
    figure = {"figure": "f", "x0": 0, "y0": 0, "x1": 100, "y1": 100}
    inside = {"kind": "annotation", "text": "a", "x0": 10, "y0": 10, "x1": 40, "y1": 20}
    over = {**inside, "text": "b", "x0": 30, "x1": 60}
    cut = {**inside, "kind": "title", "text": "t", "y0": 80, "y1": 90, "x1": 120}
    label = {**inside, "kind": "label", "text": "Hello ! (2)", "y0": 15, "y1": 30}
    assert layout_faults([{**figure, "items": [inside, over, cut]}]) == [
        "f: title 't' is cut by the figure's edge",
        "f: annotation 'a' and annotation 'b' overlap",
    ]
    assert layout_faults([{**figure, "items": [inside, label]}]) == [
        "f: annotation 'a' and label 'Hello ! (2)' overlap"
    ]
    assert layout_faults([{**figure, "items": [inside, {**over, "x0": 41, "x1": 60}]}]) == []


def test_grid_faults_names_a_table_that_scrolls_sideways():
    fits, edge = {"table": "a, b", "needs": 600, "shows": 600}, {"table": "c", "needs": 601, "shows": 600}
    wide = {"table": "setup, GPU hit %, CPU hit %", "needs": 1164, "shows": 865}
    assert grid_faults([fits, edge, wide]) == [
        "table 'setup, GPU hit %, CPU hit %' needs 1164 px and shows 865: it scrolls sideways"
    ]


def click(page: Page, label: str) -> None:
    """Click ``label``, an option of the page's view switch or its next step (``NEXT``), and wait until
    the run it starts has ended."""
    main = page.get_by_test_id("stMain")
    with run_ends(page, FIRST_RUN_MS):
        if label == NEXT:
            main.get_by_role("button", name=NEXT, exact=True).click()
        else:
            main.get_by_test_id("stButtonGroup").get_by_text(label, exact=True).click()


def reached(url: str, query: str) -> bool:
    """Whether the page's address holds every parameter of ``query``: the clicks made the view it links to."""
    return set(parse_qsl(query)) <= set(parse_qsl(urlsplit(url).query))


def test_reached_needs_every_parameter_of_the_views_link():
    url = "http://h/cachegen?cachegen_k=100&cachegen_view=Violation+vs+SLO&presenter=true"
    assert reached(url, "cachegen_view=Violation+vs+SLO&cachegen_k=100")
    assert not reached(url, "cachegen_view=Codec&cachegen_k=100")
    assert not reached("http://h/radix?radix_step=6", "radix_step=7")


def show(page: Page, app_url: str, stem: str, view: View, presenter: bool) -> str:
    """Bring ``view`` of page ``stem`` up in ``page`` and return the link that opens it as it is shown."""
    link = "&".join(filter(None, [view.query, "presenter=true" if presenter else ""]))
    if not view.clicks:
        open_page(page, app_url, stem, link, timeout=FIRST_RUN_MS)
    for label in view.clicks:
        click(page, label)
    if view.clicks:
        page.wait_for_url(lambda url: reached(url, view.query))
    assert_no_exception(page)
    if expander := OPEN.get((stem, view.query)):
        page.get_by_test_id("stExpander").filter(has_text=expander).locator("summary").click()
    return f"{stem or 'home'}?{link}"


@pytest.mark.parametrize("stem", VIEWS, ids=[stem or "home" for stem in VIEWS])
@pytest.mark.parametrize("presenter", [False, True], ids=["laptop", "presenter"])
def test_no_figure_text_is_clipped_or_overlapping(page: Page, app_url: str, presenter: bool, stem: str):
    """Every view of the page once per mode, checked at both window sizes (figures and tables); in
    presenter mode every text is at projector size too. One test per page and mode, so the two workers
    share the views evenly. The page's first view is screenshot for a person to look at: at 1366×768 on a
    laptop, at 1920×1080 in presenter mode."""
    faults = []
    page.set_viewport_size(SIZES[0])  # the first view opens at a size it is checked at
    for i, view in enumerate(VIEWS[stem]):
        where = show(page, app_url, stem, view, presenter)
        if not presenter and i == 0:
            screenshot(page, f"laptop_{stem or 'home'}")
            page.set_viewport_size(SIZES[0])
        faults += check_layouts(page, where)
        if presenter:
            faults += projector_faults(page, where)
            if i == 0:
                screenshot(page, f"presenter_{stem or 'home'}")
    assert not faults, "\n".join(faults)
