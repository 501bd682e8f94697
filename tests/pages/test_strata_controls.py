"""AppTest: no dead controls on the Strata page, every control in the URL.

On each view every enabled control is changed in turn (and put back) and something shown must
change; the controls a view cannot use are disabled and say why (helpers in page_controls.py).
"""

from __future__ import annotations

import pytest

from tests.conftest import open_page
from tests.pages.page_controls import assert_every_control_counts

pytestmark = pytest.mark.shared_caches

VIEWS = [
    (
        {},
        {"strata_gpu", "strata_mfu"},
        {"strata_model", "strata_l0", "strata_gpu_io", "strata_platform", "strata_flight"},
    ),
    (
        {"strata_view": "Loading-bound"},
        set(),
        {"strata_model", "strata_gpu", "strata_mfu", "strata_l0", "strata_gpu_io", "strata_new"},
    ),
    (
        {"strata_view": "Balanced batching"},
        {"strata_model", "strata_gpu", "strata_mfu"},
        {"strata_l0", "strata_gpu_io", "strata_doc", "strata_q", "strata_fresh", "strata_thr", "strata_batch"},
    ),
]


@pytest.mark.parametrize(("query", "disabled", "expected"), VIEWS, ids=["page-size", "loading-bound", "balanced"])
def test_every_enabled_control_changes_what_is_shown(query, disabled, expected):
    at = open_page("strata", query)
    # any threshold between the two pairs' ratios batches alike (its help says so): one below them
    changed = assert_every_control_counts(at, "strata", disabled, values={"strata_thr": 5.0})
    assert set(changed) == expected
