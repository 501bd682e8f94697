"""Browser: a link to a damaged library entry shows its damage, and the server keeps serving.

The damages are the ones that once took the server down for everyone: offsets shifted by 2^40
(under a checksum that matches, so only the array checks stand between the kernels and the bad
offsets), and an entry's block ids cut short while the server held the entry (read from a memory
map, they killed it).

Both tests share one server and its library (``served``): each damages an entry of its own, and the
second finds the server still serving after the first's damage too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.e2e.browser import VIEWPORT, assert_no_exception, open_page, screenshot, streamlit_process
from tests.traces.library_setup import fresh_library, seal


@dataclass
class Served:
    url: str
    server: Popen
    root: Path  # the library's folder, which the server was started on


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """One server on a library of its own for the module; a test stores its entries with ``on_library``."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        root = fresh_library(tmp_path_factory.mktemp("library"), monkeypatch)  # the server inherits it
        with streamlit_process() as (url, server):
            yield Served(url, server, root)


def on_library(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """Have this test's process store into the served library."""
    fresh_library(served.root.parent, monkeypatch)


def test_a_damaged_entrys_link_shows_the_damage_and_the_server_serves_the_next_session(
    undrawn: Page, served: Served, monkeypatch
):
    page = undrawn  # what is read is the error and the next session's title: no figure or grid is drawn
    on_library(served, monkeypatch)
    damaged = library.store(load_trace(fx.jsonl(fx.QWEN)), "damaged").entry.id
    sound = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "sound").entry.id
    offsets = library.root() / damaged / "offsets.npy"
    np.save(offsets, np.load(offsets) + 2**40)
    seal(library.root() / damaged)
    open_page(page, served.url, "eviction", f"eviction_source=Library&eviction_library={damaged}")
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text(
        f"library entry '{damaged}' is damaged (offsets do not start at 0)"
    )
    screenshot(page, "library_damaged_entry")

    page.set_viewport_size(VIEWPORT)  # the screenshot made the window as tall as the page
    open_page(page, served.url, "eviction", f"eviction_source=Library&eviction_library={sound}")  # the next session
    assert_no_exception(page)
    expect(page.locator("h1").first).to_contain_text("Eviction")
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    assert served.server.poll() is None


def test_an_entry_cut_short_while_the_server_holds_it_is_named_and_the_server_serves_on(
    undrawn: Page, served: Served, monkeypatch
):
    page = undrawn  # the errors shown are read: no figure or grid is drawn
    on_library(served, monkeypatch)
    # not the other test's sound trace (an equal trace is one entry): each test damages only its own
    held = library.store(load_trace(fx.jsonl(fx.MOONCAKE[:-1])), "held").entry.id
    open_page(page, served.url, "trace", f"trace_source=Library&trace_library={held}")
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    os.truncate(library.root() / held / "blocks.npy", 128)
    open_page(page, served.url, "prefix_cache", f"prefix_source=Library&prefix_library={held}")
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text(
        f"library entry '{held}' is damaged (blocks.npy is not as long as its header says"
    )
    assert served.server.poll() is None
