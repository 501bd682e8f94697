"""Browser: a link to a damaged library entry shows its damage, and the server keeps serving.

The damages are the ones that once took the server down for everyone: offsets shifted by 2^40
(under a checksum that matches, so only the array checks stand between the kernels and the bad
offsets), and an entry's block ids cut short while the server held the entry (read from a memory
map, they killed it).
"""

from __future__ import annotations

import os

import numpy as np
from playwright.sync_api import Page, expect

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.e2e.browser import VIEWPORT, assert_no_exception, open_page, screenshot, streamlit_process
from tests.traces.library_setup import fresh_library, seal


def test_a_damaged_entrys_link_shows_the_damage_and_the_server_serves_the_next_session(
    page: Page, tmp_path, monkeypatch
):
    fresh_library(tmp_path, monkeypatch)  # the server inherits this library
    damaged = library.store(load_trace(fx.jsonl(fx.QWEN)), "damaged").entry.id
    sound = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "sound").entry.id
    offsets = library.root() / damaged / "offsets.npy"
    np.save(offsets, np.load(offsets) + 2**40)
    seal(library.root() / damaged)
    with streamlit_process() as (url, server):
        open_page(page, url, "eviction", f"eviction_source=Library&eviction_library={damaged}")
        assert_no_exception(page)
        expect(page.get_by_test_id("stAlertContentError")).to_contain_text(
            f"library entry '{damaged}' is damaged (offsets do not start at 0)"
        )
        screenshot(page, "library_damaged_entry")

        page.set_viewport_size(VIEWPORT)  # the screenshot made the window as tall as the page
        open_page(page, url, "eviction", f"eviction_source=Library&eviction_library={sound}")  # the next session
        assert_no_exception(page)
        expect(page.locator("h1").first).to_contain_text("Eviction")
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
        assert server.poll() is None


def test_an_entry_cut_short_while_the_server_holds_it_is_named_and_the_server_serves_on(
    figureless: Page, tmp_path, monkeypatch
):
    page = figureless  # the errors shown are read: no figure is drawn
    fresh_library(tmp_path, monkeypatch)
    held = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "held").entry.id
    with streamlit_process() as (url, server):
        open_page(page, url, "trace", f"trace_source=Library&trace_library={held}")
        assert_no_exception(page)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
        os.truncate(library.root() / held / "blocks.npy", 128)
        open_page(page, url, "prefix_cache", f"prefix_source=Library&prefix_library={held}")
        assert_no_exception(page)
        expect(page.get_by_test_id("stAlertContentError")).to_contain_text(
            f"library entry '{held}' is damaged (blocks.npy is not as long as its header says"
        )
        assert server.poll() is None
