"""A page's replay is weighed against the server's free memory before anything is prepared: refused in
one message naming what it needs, what is free and what to cut when it cannot fit, asked for with the
expensive-view confirmation when it needs much of what is free, and a memory limit that is not valid is
the operator's to fix (the viewer reads that, the log names the variable)."""

from __future__ import annotations

import logging

import pytest

from kvviz.common import budget
from tests.conftest import assert_clean, limit_memory, open_page, shown
from ui.kit.errors import SETTING_BROKEN

PAGES = ["tiers", "eviction", "prefix_cache", "trace"]


@pytest.mark.parametrize("stem", PAGES)
def test_a_replay_that_cannot_fit_is_refused_in_one_message(stem, monkeypatch):
    limit_memory(monkeypatch, 2**20)
    at = open_page(stem)
    assert_clean(at)
    errors = [shown(e.value) for e in at.error]
    assert any("needs about" in e and "is free here; cut the trace" in e for e in errors), errors
    assert not at.metric  # nothing was replayed or shown as if it had been


def test_a_replay_that_needs_much_of_what_is_free_asks_first_and_runs_on_a_click(monkeypatch):
    monkeypatch.setattr(budget, "CONFIRM_MEMORY_SHARE", 0.0)  # any replay needs more than none of what is free
    at = open_page("tiers")
    assert_clean(at)
    asked = [shown(i.value) for i in at.info if "This view is expensive" in i.value]
    assert asked and "a tiered replay of this trace" in asked[0] and "free on this server" in asked[0], asked
    assert not at.metric
    at.button(key="tiers_replay_memory_confirm").click().run()
    assert_clean(at)
    assert any(m.label == "Hit ratio" for m in at.metric)


def test_a_memory_limit_that_is_not_valid_is_the_operators_to_fix(monkeypatch, caplog):
    monkeypatch.setenv(budget.MEMORY_ENV, "lots")
    with caplog.at_level(logging.ERROR):
        at = open_page("tiers")
    assert_clean(at)
    assert [e.value for e in at.error] == [SETTING_BROKEN]
    assert budget.MEMORY_ENV in caplog.text and budget.MEMORY_ENV not in SETTING_BROKEN


def test_an_upload_that_expands_beyond_the_memory_is_refused_on_tiers_and_the_server_serves_on(monkeypatch):
    """A small compressed upload of hundreds of thousands of ids, with less memory free than reading them
    needs: the Tiers page names what it needs and what is free, and the next page opens."""
    import zstandard

    line = (
        b'{"timestamp": %d, "input_length": 16000, "output_length": 1, "hash_ids": ['
        + b", ".join(b"%d" % i for i in range(1000))
        + b"]}\n"
    )
    packed = zstandard.ZstdCompressor(level=19).compress(b"".join(line % k for k in range(300)))
    monkeypatch.setattr(budget, "free_memory", lambda: 200 * 2**20)
    at = open_page("tiers", {"tiers_source": "Upload"})
    at.sidebar.file_uploader(key="tiers_upload").upload("ids.zst", packed, "application/zstd").run()
    assert_clean(at)
    assert not at.metric and "needs about 0.3 GiB of memory and 0.2 GiB is free" in shown(at.error[0].value)
    monkeypatch.undo()
    at.switch_page("pages/trace.py").run()
    assert_clean(at)
    assert at.metric
