"""The RadixAttention scheduling page in AppTest: the teaching queue, a trace window, an upload, URL controls."""

from __future__ import annotations

import pytest

from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_each_changes_the_view
from tests.pages.test_page_prefix_cache import uploaded

pytestmark = pytest.mark.shared_caches


def _orders(at):
    return next(df.value for df in at.dataframe if "rounds" in df.value.columns).set_index("order")


def test_teaching_queue_lpm_and_dfs_beat_fcfs():
    at = open_page("radix_schedule")
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2
    table = _orders(at)
    assert table.loc["FCFS", "hits"] == 0 and table.loc["LPM", "hits"] == 24
    paper = at.table[-1].value
    assert paper.loc["In-batch prefix caching, worked example: queue R1 R2 R3 R4, cold cache", "status"] == "agrees"
    assert "What to notice" in [h.value for h in at.subheader]


def test_a_bigger_cache_from_the_url_makes_the_orders_tie():
    at = open_page("radix_schedule", {"radix_schedule_capacity": "100", "radix_schedule_budget": "5"})
    assert_clean(at)
    assert at.number_input(key="radix_schedule_capacity").value == 100
    table = _orders(at)
    assert table["hits"].nunique() == 1


def test_a_trace_window_on_the_example_and_on_an_upload():
    at = open_page(
        "radix_schedule",
        {
            "radix_schedule_queue": "Trace window",
            "radix_schedule_source": "Example",
            "radix_schedule_size": "30",
            "radix_schedule_capacity": "200",
            "radix_schedule_budget": "64",
        },
        timeout=120,
    )
    assert_clean(at)
    assert at.slider(key="radix_schedule_size").value == 30
    assert _orders(at)["blocks"].nunique() == 1
    trace = generate(WorkloadConfig(requests=120, seed=3))
    up = uploaded("radix_schedule", trace.to_jsonl().encode(), {"radix_schedule_queue": "Trace window"})
    assert_clean(up)
    assert len(up.get("plotly_chart")) == 2


def test_every_control_changes_what_is_shown():
    at = open_page("radix_schedule")
    assert at.toggle(key="radix_schedule_inbatch").disabled  # the teaching queue is served the same either way
    assert any(c.value.startswith("In-batch prefix caching is off here: LPM serves") for c in at.sidebar.caption)
    assert_each_changes_the_view(
        at,
        [
            ("number_input", "radix_schedule_capacity", 9),
            ("number_input", "radix_schedule_budget", 3),
            ("segmented_control", "radix_schedule_queue", "Trace window"),
        ],
    )
    at.segmented_control(key="radix_schedule_source").set_value("Example").run()
    assert_each_changes_the_view(
        at,
        [
            ("number_input", "radix_schedule_capacity", 2000),
            ("number_input", "radix_schedule_budget", 200),
            ("toggle", "radix_schedule_inbatch", False),  # matters once a batch holds many requests
            ("number_input", "radix_schedule_start", 100),
            ("slider", "radix_schedule_size", 20),
            ("slider", "radix_schedule_warm", 200),
        ],
    )
    assert any(b.label == "Download scheduler table (CSV)" for b in at.get("download_button"))
