"""The URL is the whole view: a hidden view's controls stay in it (ui.kit.links.keep_hidden_params),
a control the address lost comes back with the next run, also one that ends early, and no page ends
early but through the stop that writes the address. (Hostile URLs: test_fuzz_pages.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import assert_clean, open_page

pytestmark = pytest.mark.shared_caches


def test_a_control_the_address_lost_is_written_back_by_the_next_run():
    """A late URL message of an earlier run can drop a control from the browser's address; the
    next run starts from that address and must put the control, still shown, back into it."""
    at = open_page("cacheblend", {"cacheblend_chunk": "3"})
    del at.query_params["cacheblend_chunk"]
    at.button_group(key="cacheblend_view").set_value("The model").run()
    assert_clean(at)
    assert at.slider(key="cacheblend_chunk").value == 3
    assert at.query_params["cacheblend_chunk"] == "3"


def test_a_hidden_views_controls_stay_in_the_url_and_come_back():
    at = open_page("cacheblend", {"cacheblend_view": "Loading controller"})
    at.slider(key="cacheblend_context").set_value(8192).run()
    at.button_group(key="cacheblend_view").set_value("One document").run()
    assert_clean(at)
    assert at.query_params["cacheblend_context"] == "8192"  # Streamlit alone deletes it here
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


def test_a_view_that_ends_early_writes_the_controls_it_shows_back_into_the_address():
    """A page can end before its last element (here: a view to confirm before it runs). Streamlit
    sends nothing after such an end, so the page writes the address first."""
    at = open_page("tiers", {"tiers_requests": "300", "tiers_source": "Example"})
    del at.query_params["tiers_source"]  # what a late message of an earlier run does
    at.run()
    assert_clean(at)
    assert [b.label for b in at.button][-1] == "Run it"  # the run ended there
    assert at.query_params["tiers_source"] == "Example"


def test_no_page_ends_early_but_through_the_stop_that_writes_the_address():
    root = Path(__file__).resolve().parents[2]
    files = [root / "app.py", *sorted(root.glob("pages/*.py")), *sorted(root.glob("ui/**/*.py"))]
    calls = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in files
        if path.name != "links.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "st.stop"
    ]
    assert calls == [], "end a page early with ui.kit.links.stop, which writes the address first"
