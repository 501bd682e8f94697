"""AppTest: no dead controls on the Radix page, every control in the URL.

For a preset on the RadixCache, one on the HiRadixCache, a typed script and a trace, every enabled
control is changed in turn (and put back) and what the viewer sees must change; the controls that
cannot matter are disabled and say why first (helpers in ``tests/pages/page_controls.py``). The step
controls and the preset are left to test_page_radix: the step is kept in the URL by hand, Play and its
speed are not shared, and a preset starts its script again from step 0, where the tree is empty.
"""

from __future__ import annotations

import pytest

from tests.conftest import open_page, open_with_session_trace
from tests.pages.page_controls import assert_every_control_counts

pytestmark = pytest.mark.shared_caches

SKIP = ("radix_step", "radix_preset")  # the step, ◀ ▶, Play and its speed; the preset
CACHE = {"radix_cache", "radix_device", "radix_page", "radix_policy", "radix_legacy"}
HICACHE = {"radix_host", "radix_write", "radix_ack"}
SCHEDULER = {"radix_strata", "radix_threshold"}
TYPED = {"radix_text": "a b c => d\n& a b c => e\na b x => y"}  # a script whose last request shares a prefix
# The Strata preset's memory is larger than its script: a quarter of each fills, a bigger one would not.
STRATA_MEMORY = {"radix_device": 256, "radix_host": 512}
VIEWS = [
    ({}, HICACHE, {}, {"radix_source"} | CACHE | SCHEDULER),
    ({"radix_preset": "Delay hits (Strata)"}, set(), STRATA_MEMORY, {"radix_source"} | CACHE | HICACHE | SCHEDULER),
    ({"radix_source": "Type"}, HICACHE, TYPED, {"radix_source", "radix_text"} | CACHE | SCHEDULER),
]


@pytest.mark.parametrize(
    ("query", "disabled", "values", "expected"), VIEWS, ids=["radix-preset", "hiradix-preset", "typed"]
)
def test_every_enabled_control_changes_what_is_shown(query, disabled, values, expected):
    at = open_page("radix", {**query, "radix_step": "8"})
    changed = assert_every_control_counts(at, "radix", disabled, values=values, skip=SKIP)
    assert set(changed) == expected


def test_a_trace_replays_its_first_requests_and_every_control_counts():
    at = open_with_session_trace("radix", {"kind": "example"}, {"radix_source": "Trace", "radix_step": "8"})
    changed = assert_every_control_counts(at, "radix", HICACHE, skip=SKIP)
    assert set(changed) == {"radix_source", "radix_n", "radix_round"} | CACHE | SCHEDULER
