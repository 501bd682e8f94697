"""The URL is the whole view: a hidden view's controls stay in it (ui.links.keep_hidden_params),
and a control the address lost comes back with the next run. (Hostile URLs: test_fuzz_pages.py.)"""

from __future__ import annotations

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
