"""AppTest: the Eviction page says how it reads workload shares that do not add up to 1, and asks
before a replay whose estimate is long."""

from __future__ import annotations

import pytest

from tests.conftest import assert_clean, open_page, open_with_session_trace
from ui.kit.traces import share_note

pytestmark = pytest.mark.shared_caches

ISSUE = {"eviction_requests": "1000", "eviction_seed": "3", "eviction_qa": "0.6", "eviction_chat": "0.1"}


def test_shares_that_do_not_add_up_to_one_are_divided_by_their_sum():
    assert share_note(0.6, 0.1, 0.8) == (
        "The shares add up to 1.50, so each is divided by that: 40% document QA, 7% multi-turn chat, 53% one-shot."
    )
    assert share_note(0.35, 0.35, 0.3) is None and share_note(0.0, 0.0, 0.0) is None


def test_the_page_shows_how_it_normalised_the_shares():
    at = open_page("eviction", {**ISSUE, "eviction_oneshot": "0.8", "eviction_points": "4"})
    assert_clean(at)
    assert share_note(0.6, 0.1, 0.8) in [c.value for c in at.sidebar.caption]


def long_trace(requests: int = 3_000, blocks: int = 1_000) -> bytes:
    """A Mooncake JSONL upload of 3M block accesses: every policy at 41 capacities is a long replay
    (the synthetic workload's largest is not, on this machine)."""
    lines = (
        f'{{"timestamp": {i * 100}, "input_length": {blocks * 512}, "output_length": 8, '
        f'"hash_ids": [{",".join(str(i * 7 + b) for b in range(blocks))}]}}'
        for i in range(requests)
    )
    return ("\n".join(lines) + "\n").encode()


def test_a_long_replay_waits_for_a_click_with_its_estimate():
    spec = {"kind": "upload", "data": long_trace(), "name": "long"}
    at = open_with_session_trace("eviction", spec, {"eviction_points": "40", "eviction_sample": "exact"}, timeout=120)
    assert_clean(at)
    assert any("replaying every policy at every capacity" in i.value for i in at.info)
    assert not at.get("plotly_chart")  # nothing replayed yet
