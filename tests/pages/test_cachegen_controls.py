"""AppTest: no dead controls on the CacheGen page, every control in the URL.

For each view, every enabled control is changed in turn (and put back) and something the viewer
sees — a figure's data, a table, a caption, a message — must change with it; the controls a view
cannot use are disabled and say why in their help. Every control's key starts with the page stem
and is bound to the URL (helpers in ``tests/pages/page_controls.py``).
"""

from __future__ import annotations

import pytest

from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_every_control_counts, widgets

pytestmark = pytest.mark.shared_caches

SMALL_CODEC = {"cachegen_view": "Codec", "cachegen_layers": "3", "cachegen_tokens": "256", "cachegen_channels": "16"}
SIDEBAR = {
    "cachegen_bw",
    "cachegen_persist",
    "cachegen_seed",
    "cachegen_k",
    "cachegen_slo",
    "cachegen_context",
    "cachegen_chunk",
    "cachegen_sizes",
    "cachegen_recompute",
}
CODEC = {
    "cachegen_kvsource",
    "cachegen_kvseed",
    "cachegen_layers",
    "cachegen_tokens",
    "cachegen_channels",
    "cachegen_rho",
    "cachegen_offset",
    "cachegen_outliers",
    "cachegen_outscale",
    "cachegen_group",
    "cachegen_level",
    "cachegen_sens",
}
# One step up, not half as much again: a longer context makes every view's sweep slower.
ONE_STEP = {"cachegen_context": 9_600, "cachegen_chunk": 1_600}
VIEWS = [
    ({}, set()),
    ({"cachegen_view": "Violation vs SLO", "cachegen_k": "100"}, set()),
    ({"cachegen_view": "Violation vs SLO", "cachegen_against": "Mean bandwidth", "cachegen_k": "100"}, set()),
    (
        {
            "cachegen_view": "Violation vs SLO",
            "cachegen_against": "Persistence",
            "cachegen_k": "100",
            "cachegen_bw": "Step",
        },
        {"cachegen_persist"},
    ),  # the sweep draws its own K traces: seed and K count
    (SMALL_CODEC, set()),
]


@pytest.mark.parametrize("query,disabled", VIEWS, ids=["timeline", "slo", "mean-bandwidth", "persistence", "codec"])
def test_every_enabled_control_changes_what_is_shown(query, disabled):
    at = open_page("cachegen", query, timeout=120)
    changed = set(assert_every_control_counts(at, "cachegen", disabled, {"cachegen_against"}, values=ONE_STEP))
    expected = CODEC if query.get("cachegen_view") == "Codec" else SIDEBAR - disabled
    assert changed == expected | ({"cachegen_policies"} if not query else set())


def test_a_fixed_trace_disables_its_random_knobs_and_says_why():
    at = open_page("cachegen", {"cachegen_bw": "Step"})
    assert_clean(at)
    off = {w.key: w.help for w in widgets(at) if w.disabled}
    assert set(off) == {"cachegen_persist", "cachegen_seed", "cachegen_k"}
    assert "one fixed trace" in off["cachegen_k"] and "AR(1)" in off["cachegen_persist"]


def test_policies_come_from_the_url_and_a_bad_name_is_ignored():
    at = open_page(
        "cachegen",
        {
            "cachegen_policies": ["oracle (bound)", "text only"],  # the labels shown
            "cachegen_chunk_table": "true",
        },
    )
    assert_clean(at)
    assert at.multiselect(key="cachegen_policies").value == ["oracle (bound)", "text only"]
    rows = next(d.value for d in at.dataframe if "chunk" in d.value.columns)
    assert list(dict.fromkeys(rows.policy)) == ["oracle (bound)", "text only"]
    at = open_page("cachegen", {"cachegen_policies": ["oracle (bound)", "no-such-rule"]})
    assert_clean(at)
    assert at.multiselect(key="cachegen_policies").value == ["oracle (bound)"]  # the bad name alone is dropped
