"""AppTest: no dead controls on the ledger and Strata pages, every control in the URL.

For each view, every enabled control is changed in turn and something the viewer sees (a
figure's data or title, a metric, a table, a caption) must change with it; the controls a view
cannot use are disabled, and say why in their help. Every control's key is bound to the URL
(helpers in ``tests/pages/page_controls.py``).
"""

from __future__ import annotations

import pytest

from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_every_control_counts

pytestmark = pytest.mark.shared_caches

VIEW_KEYS = {"ledger_lr"}  # switches the Load-or-recompute view (besides each page's *_view); each is opened
EDITORS = ("ledger_edit_",)  # the presets tables: edits, not in the URL

# Any threshold between the two kinds of pair in the burst (two document questions: 57,344 / 512 = 112
# cached per new token; a question with a fresh prompt: 7.5) batches alike; crossing 112 changes it.
OVERRIDES = {"strata_thr": 200.0}


LEDGER = {"ledger_model", "ledger_gpu", "ledger_mfu"}
STRATA = {"strata_model", "strata_gpu", "strata_mfu"}
VIEWS = [
    ("ledger", {}, {"ledger_gpu", "ledger_mfu"}),
    ("ledger", {"ledger_view": "Load or recompute"}, {"ledger_model"}),
    ("ledger", {"ledger_view": "Load or recompute", "ledger_lr": "One context, every link"}, set()),
    ("ledger", {"ledger_view": "Load or recompute", "ledger_lr": "20-turn chat"}, set()),
    ("ledger", {"ledger_view": "Economics"}, {"ledger_model"}),
    (
        "ledger",
        {
            "ledger_view": "Tiers",
            "ledger_users": "60",
            "ledger_tturns": "6",
            "ledger_gpu_gib": "4",
            "ledger_cpu_gib": "6",
            "ledger_ssd_gib": "10",
        },
        set(),
    ),  # small, and every tier overflows
    ("strata", {}, {"strata_gpu", "strata_mfu"}),
    ("strata", {"strata_view": "Loading-bound"}, set()),
    ("strata", {"strata_view": "Balanced batching"}, STRATA),
]


@pytest.mark.parametrize(
    "stem,query,disabled", VIEWS, ids=[f"{s}-{'-'.join(q.values()) or 'default'}" for s, q, _ in VIEWS]
)
def test_every_enabled_control_changes_what_is_shown(stem, query, disabled):
    at = open_page(stem, query)
    assert_clean(at)
    assert_every_control_counts(at, stem, disabled, VIEW_KEYS, values=OVERRIDES, skip=EDITORS)


@pytest.mark.parametrize(
    "query",
    [
        {"ledger_view": "Load or recompute", "ledger_links": "no-such-link", "ledger_models": "gpt-9"},
        {"ledger_view": "Tiers", "ledger_users": "-5", "ledger_rps": "nan", "ledger_fill": "sideways"},
        {"ledger_view": "Load or recompute", "ledger_lr": "20-turn chat", "ledger_turns": "1e9", "ledger_overlap": "x"},
    ],
)
def test_bad_view_parameters_in_the_url_are_ignored(query):
    at = open_page("ledger", query)
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) >= 1


@pytest.mark.parametrize(
    "query",
    [
        {"strata_flight": "0", "strata_platform": "Mars"},
        {"strata_view": "Balanced batching", "strata_batch": "1e6", "strata_thr": "-inf"},
    ],
)
def test_bad_strata_parameters_in_the_url_are_ignored(query):
    at = open_page("strata", query)
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 1
