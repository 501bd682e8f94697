"""AppTest: no dead controls on the CacheBlend page, every control in the URL.

The sidebar's document controls (chunk length, ratio, token selection, seed) are disabled, with
the reason, on the views that do not use them; every enabled control changes what is shown
(helpers in ``tests/pages/page_controls.py``)."""

from __future__ import annotations

import pytest

from kvviz.cacheblend.model import WEIGHTS
from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_every_control_counts, widgets

pytestmark = pytest.mark.shared_caches

SIDEBAR = {"cacheblend_chunk", "cacheblend_ratio", "cacheblend_variant", "cacheblend_seed"}
VIEWS = [
    ("One document", set(), SIDEBAR),
    ("Accuracy vs ratio", {"cacheblend_seed"}, SIDEBAR - {"cacheblend_seed"}),
    ("Loading controller", SIDEBAR, {"cacheblend_preset", "cacheblend_context"}),
    ("The model", SIDEBAR, set()),
]


@pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")
@pytest.mark.parametrize("view,disabled,changed", VIEWS, ids=[v for v, _, _ in VIEWS])
def test_every_enabled_control_changes_what_is_shown(view, disabled, changed):
    at = open_page("cacheblend", {"cacheblend_view": view}, timeout=120)
    assert set(assert_every_control_counts(at, "cacheblend", disabled)) == changed


@pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")
def test_the_accuracy_table_downloads_with_its_settings_and_no_none_is_shown():
    at = open_page("cacheblend", {"cacheblend_view": "Accuracy vs ratio", "cacheblend_chunk": "4"})
    assert_clean(at)
    shown = at.dataframe[0].value  # shown as "–" where no record is cut
    assert shown["cut records"].dtype == float and shown["cut records"].isna().all() and shown["all"].notna().all()
    assert any(b.label == "Download accuracy table (CSV)" for b in at.get("download_button"))
    off = {w.key: w.help for w in widgets(at) if w.disabled}
    assert set(off) == {"cacheblend_seed"} and "fresh documents" in off["cacheblend_seed"]
