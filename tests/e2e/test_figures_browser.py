"""Browser: every figure of every view is drawn once, in the margins the server sized for it.

``kvviz.common.style.fitted_margins`` sizes each figure's margins for its labels, legend and colour bar so
that plotly's ``automargin`` finds nothing to grow. When a margin is too small, plotly.js lays the
whole figure out and draws it a second time (30% of plotly.js's time on the cluster's scheduling view), on every rerun
that shows the figure. Here the margins plotly drew with (``_fullLayout._size``) must be the ones
asked for, for every figure on every view, at the test browser's 1400 × 900, and on five views in
presenter mode.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.e2e.browser import assert_no_exception, open_page

VIEWS = [
    ("trace", "trace_tree=true"),
    ("eviction", "eviction_points=6"),
    ("radix", ""),
    ("radix", "radix_view=Requests"),
    ("radix_schedule", ""),
    *[
        ("prefix_cache", f"prefix_view={v}")
        for v in ("Curves", "Worked+example", "Per+request", "Over+time", "Prefix+tree")
    ],
    *[("ledger", f"ledger_view={v}") for v in ("Size", "Load+or+recompute", "Economics", "Tiers")],
    *[("strata", f"strata_view={v}") for v in ("Page+size", "Loading-bound", "Balanced+batching")],
    ("cluster", "cluster_minutes=5&cluster_seeds=1"),
    ("cluster", "cluster_view=Scheduling&cluster_source=Example"),
    ("cachegen", "cachegen_k=100"),
    ("cachegen", "cachegen_view=Violation+vs+SLO&cachegen_k=100"),
    ("cachegen", "cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32"),
    *[
        ("cacheblend", f"cacheblend_view={v}")
        for v in ("One+document", "Accuracy+vs+ratio", "Loading+controller", "The+model")
    ],
    *[
        (stem, f"{query}&presenter=1")
        for stem, query in (  # projector fonts, the sidebar closed: a wider figure
            ("cacheblend", "cacheblend_view=One+document"),
            ("cluster", "cluster_view=Scheduling&cluster_source=Example"),
            ("prefix_cache", "prefix_view=Curves"),
            ("ledger", "ledger_view=Tiers"),
            ("cachegen", "cachegen_k=100"),
        )
    ],
]

MARGINS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const m = gd._fullLayout.margin, s = gd._fullLayout._size;
  const key = (gd.closest('[class*=st-key-]') || {className: ''}).className.match(/st-key-(\\S+)/);
  return {figure: key ? key[1] : '?', asked: [m.l, m.r, m.t, m.b], drawn: [s.l, s.r, s.t, s.b].map(Math.round)};
})"""


@pytest.mark.parametrize(("stem", "query"), VIEWS, ids=[f"{s}?{q}" if q else s for s, q in VIEWS])
def test_every_figure_is_drawn_in_the_margins_it_asked_for(page: Page, app_url: str, stem: str, query: str):
    open_page(page, app_url, stem, query)
    assert_no_exception(page)
    page.wait_for_timeout(300)  # a figure drawn in the last run has finished its layout
    figures = page.evaluate(MARGINS)
    assert figures, "the view shows no figure"
    grown = [f for f in figures if f["asked"] != f["drawn"]]
    assert not grown, f"plotly grew these margins (l, r, t, b) and drew the figure again: {grown}"
