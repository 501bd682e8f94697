"""AppTest: no dead controls on the Prefix-cache page, every control in the URL.

On each view, on the bundled example trace, every enabled control is changed in turn (and put back)
and what the viewer sees must change; the controls a view cannot use are disabled and say why first
(helpers in ``tests/pages/page_controls.py``). The worked example's ◀ ▶, Play and its speed are left
to test_page_prefix_cache (Play is not shared in the URL).
"""

from __future__ import annotations

import pytest

from tests.conftest import open_page
from tests.pages.page_controls import assert_every_control_counts

pytestmark = pytest.mark.shared_caches

EXAMPLE = {"prefix_source": "Example", "prefix_points": "6", "prefix_range": ["100", "10k"]}
PLAYBACK = ("prefix_step_",)
VALUES = {"prefix_range": (100, 5000), "prefix_at": 100}  # a range slider; a capacity of the curve's
CACHE = {"prefix_policies", "prefix_range", "prefix_points", "prefix_model"}
PRICED = {"prefix_gpu", "prefix_sample"}
VIEWS = [
    ({}, set(), {"prefix_source", "prefix_engine"} | CACHE | PRICED),
    ({"prefix_engine": "vLLM"}, {"prefix_sample"}, {"prefix_source", "prefix_engine", "prefix_gpu"} | CACHE),
    (
        {"prefix_view": "Per request"},
        PRICED | {"prefix_policies"},
        {"prefix_source", "prefix_engine", "prefix_req_policy", "prefix_at"} | CACHE - {"prefix_policies"},
    ),
    (
        {"prefix_view": "Over time"},
        PRICED | {"prefix_policies"},
        {"prefix_source", "prefix_engine", "prefix_heat_a", "prefix_heat_b"} | CACHE - {"prefix_policies"},
    ),
    ({"prefix_view": "Prefix tree"}, {"prefix_engine"} | CACHE | PRICED, {"prefix_source", "prefix_tree_top"}),
    ({"prefix_view": "Worked example"}, set(), {"prefix_engine", "prefix_step"}),
]


@pytest.mark.parametrize(
    ("query", "disabled", "expected"),
    VIEWS,
    ids=["curves", "curves-vllm", "per-request", "over-time", "prefix-tree", "worked-example"],
)
def test_every_enabled_control_changes_what_is_shown(query, disabled, expected):
    at = open_page("prefix_cache", {**EXAMPLE, **query}, timeout=180)
    changed = assert_every_control_counts(at, "prefix", disabled, values=VALUES, skip=PLAYBACK)
    assert set(changed) == expected
