"""URL parameters: every page survives a hostile URL (each widget parameter set to garbage), and a
hidden view's controls stay in the URL (ui.links.keep_hidden_params)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1.element_tree import Widget

from kvviz.common.catalog import PAGES
from tests.conftest import assert_clean, open_page

ROOT = Path(__file__).resolve().parents[2]
BUILT = ["home"] + [p.stem for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]


def widget_keys(at) -> list[str]:
    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)
    return sorted({e.key for e in walk(at._tree) if isinstance(e, Widget) and e.key and e.key != "presenter"})


@pytest.mark.parametrize("stem", BUILT)
def test_garbage_in_every_url_parameter_never_raises(stem):
    keys = widget_keys(open_page(stem))
    for bad in ("zzz", "1e309", "nan", "", "-1"):
        at = open_page(stem, {key: bad for key in keys})
        assert_clean(at)


def test_a_hidden_views_controls_stay_in_the_url_and_come_back():
    at = open_page("cacheblend", {"cacheblend_view": "Loading controller"})
    at.slider(key="cacheblend_context").set_value(8192).run()
    at.button_group(key="cacheblend_view").set_value("One document").run()
    assert_clean(at)
    assert at.query_params["cacheblend_context"] == "8192"      # Streamlit alone deletes it here
    at.button_group(key="cacheblend_view").set_value("Loading controller").run()
    assert at.slider(key="cacheblend_context").value == 8192


def test_a_link_with_a_hidden_views_control_opens_it_when_that_view_is_chosen():
    at = open_page("cacheblend", {"cacheblend_context": "8192"})
    assert at.query_params["cacheblend_context"] == "8192"
    at.button_group(key="cacheblend_view").set_value("Loading controller").run()
    assert_clean(at)
    assert at.slider(key="cacheblend_context").value == 8192


def test_reset_takes_a_hidden_control_out_of_the_url():
    at = open_page("cacheblend", {"cacheblend_context": "8192", "cacheblend_view": "Loading controller"})
    at.button_group(key="cacheblend_view").set_value("One document").run()
    at.button(key="kvviz_reset_cacheblend").click().run()
    assert "cacheblend_context" not in at.query_params
    at.button_group(key="cacheblend_view").set_value("Loading controller").run()
    assert at.slider(key="cacheblend_context").value == 4096

