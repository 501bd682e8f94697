"""The Eviction page in AppTest: it draws, reacts to its controls, opens from a URL and reports bad input."""

from __future__ import annotations

import pytest

from tests.conftest import LENGTHS_ONLY, assert_clean, open_page, open_with_session_trace
from tests.pages.page_controls import assert_each_changes_the_view

pytestmark = pytest.mark.shared_caches

SMALL = {
    "eviction_requests": "300",  # a small synthetic trace keeps each run quick
    "eviction_table": "true",
}  # the curve's table, folded (and not drawn) until opened


def _curve_table(at):
    return next(df.value for df in at.dataframe if "capacity (blocks)" in df.value.columns)


def test_default_view_draws_both_figures_the_table_and_the_teaching_sections():
    at = open_page("eviction", SMALL)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2
    table = _curve_table(at)
    assert list(table.columns) == ["capacity (blocks)", "LRU", "LFU", "LengthAware", "S3-FIFO", "Belady (OPT)"]
    assert table["capacity (blocks)"].iloc[-1] == "∞"
    assert (table.iloc[-1, 1:] == table.iloc[-1, 1]).all()  # all policies meet at the infinite cache
    headers = [h.value for h in at.subheader]
    assert "What to notice" in headers and "What the paper reports vs this simulation" in headers
    paper = at.table[-1].value
    assert paper["paper"].iloc[0] == "0.30 / 0.30 / 0.30 (best: tie)" and set(paper["status"]) == {"not compared"}
    assert any("23,608 requests" in m.value for m in at.markdown)
    assert at.get("download_button")


def test_changing_policies_prefix_mode_and_block_size_updates_the_view():
    at = open_page("eviction", SMALL)
    full = _curve_table(at)
    at.multiselect(key="eviction_policies").set_value(["FIFO", "SIEVE"]).run()
    assert_clean(at)
    assert list(_curve_table(at).columns)[1:] == ["FIFO", "SIEVE", "Belady (OPT)"]
    at.multiselect(key="eviction_policies").set_value(["LRU", "LFU", "LengthAware", "S3-FIFO"])
    at.toggle(key="eviction_prefix").set_value(True).run()
    assert_clean(at)
    prefix = _curve_table(at)
    assert (prefix.iloc[:, 1:] <= full.iloc[:, 1:] + 1e-12).all().all()
    assert (prefix["S3-FIFO"] < full["S3-FIFO"]).any()
    assert (prefix["LRU"] == full["LRU"]).all()  # chained ids: LRU's hits are always whole prefixes
    at.toggle(key="eviction_prefix").set_value(False)
    at.segmented_control(key="eviction_block").set_value(2).run()
    assert_clean(at)
    assert any("of 1,024 tokens" in c.value for c in at.caption)


@pytest.mark.parametrize("policies", [["FIFO", "ARC"], ["fifo", "arc"]], ids=["names", "old link with codes"])
def test_a_shared_url_opens_the_same_view(policies):
    at = open_page(
        "eviction",
        {
            **SMALL,
            "eviction_policies": policies,
            "eviction_prefix": "true",
            "eviction_points": "6",
            "eviction_range": ["100", "1k"],
            "eviction_block": "1024",
        },
    )
    assert_clean(at)
    assert at.multiselect(key="eviction_policies").value == ["FIFO", "ARC"]
    assert at.query_params["eviction_policies"] == ["FIFO", "ARC"]  # what the reader sees, in a copied link
    assert at.toggle(key="eviction_prefix").value is True
    assert at.select_slider(key="eviction_range").value == (100, 1000)
    assert at.segmented_control(key="eviction_block").value == 2
    capacities = _curve_table(at)["capacity (blocks)"].tolist()
    assert capacities[0] == "100" and capacities[-2] == "1,000" and len(capacities) == 7


def test_capacities_stop_at_the_trace_s_distinct_blocks():
    at = open_page("eviction", {**SMALL, "eviction_range": ["10", "5M"]})
    assert_clean(at)
    caption = next(c.value for c in at.caption if "distinct blocks" in c.value)
    assert "capped at the" in caption
    distinct = caption.split(" distinct blocks of")[0].split("· ")[-1]
    assert _curve_table(at)["capacity (blocks)"].iloc[-2] == distinct


def test_invalid_url_values_are_ignored():
    at = open_page(
        "eviction", {**SMALL, "eviction_points": "many", "eviction_policies": ["NOPE"], "eviction_block": "-3"}
    )
    assert_clean(at)
    assert not at.error
    assert at.slider(key="eviction_points").value == 20


def test_a_trace_without_block_ids_is_an_error_message_not_a_traceback():
    at = open_with_session_trace("eviction", LENGTHS_ONLY)
    assert_clean(at)
    assert at.error and "no block ids" in at.error[0].value


def test_no_policy_selected_still_draws_the_bounds():
    at = open_page("eviction", SMALL)
    at.multiselect(key="eviction_policies").set_value([]).run()
    assert_clean(at)
    assert list(_curve_table(at).columns) == ["capacity (blocks)", "Belady (OPT)"]
    assert any("Pick policies" in m.value for m in at.markdown)


def test_a_one_point_range_below_or_above_the_trace_opens_clean():
    for ends in (["100", "100"], ["5M", "5M"]):
        at = open_page("eviction", {**SMALL, "eviction_range": ends})
        assert_clean(at)
        assert len(_curve_table(at)) == 2  # the one capacity and ∞


def test_a_sampled_curve_says_its_rate_and_measured_error():
    at = open_page("eviction", {**SMALL, "eviction_sample": "10%", "eviction_policies": ["FIFO", "LRU"]})
    assert_clean(at)
    assert at.segmented_control(key="eviction_sample").value == "10%"
    note = next(c.value for c in at.caption if "SHARDS sample" in c.value)
    assert "10.00% of the blocks" in note and "sampled LRU was off by at most" in note
    assert "FIFO may be off by up to" in note and "only the exact replay holds it" in note  # 300 requests: too few
    table = _curve_table(at)
    assert list(table.columns)[1:] == ["LRU", "FIFO", "Belady (OPT)"]


def test_every_control_changes_what_is_shown():
    at = open_page("eviction", {**SMALL, "eviction_points": "6"})
    assert_clean(at)
    at_options = [int(o.replace(",", "")) for o in at.select_slider(key="eviction_at").options]
    assert_each_changes_the_view(
        at,
        [
            ("select_slider", "eviction_at", at_options[1]),
            ("segmented_control", "eviction_time_show", "All policies"),
            ("slider", "eviction_smooth", 1),
            ("multiselect", "eviction_policies", ["LRU", "FIFO", "ARC"]),
            ("select_slider", "eviction_range", (10, 10_000)),
            ("slider", "eviction_points", 8),
            ("toggle", "eviction_paper", False),
            ("segmented_control", "eviction_sample", "10%"),
            ("segmented_control", "eviction_block", 2),
            ("toggle", "eviction_prefix", True),
        ],
    )
    assert at.segmented_control(key="eviction_sample").disabled  # prefix mode replays every block


def test_the_leader_is_marked_and_the_notes_say_why_from_the_trace():
    at = open_page("eviction", SMALL)
    spec = at.get("plotly_chart")[0].proto.spec
    assert "best online policy" in spec and " leads" in spec
    notice = next(m.value for m in at.markdown if "Best online policy along the curve" in m.value)
    assert "distinct blocks are used only once" in notice and "median LRU stack distance" in notice


def test_the_table_1_toggle_is_disabled_when_no_point_is_in_range():
    at = open_page("eviction", {**SMALL, "eviction_range": ["10", "500"]})
    assert at.toggle(key="eviction_paper").disabled


def _arriving(query: dict[str, str], spec: dict | None = None):
    """The eviction page in a session that arrived with ``query`` in its URL (and ``spec`` as its trace)."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    at = AppTest.from_file(APP, default_timeout=120)
    if spec:
        at.session_state["kvviz_trace_spec"] = spec
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/eviction.py").run()
    assert_clean(at)
    return at


def _lost(at) -> list[str]:
    return [w.value for w in at.main.warning if w.value.startswith("The session trace was kept only")]


def test_a_session_trace_that_is_gone_is_said_until_a_source_is_picked():
    # A link naming "Session trace" in a session that has none: a reconnect after a restart, or a
    # link copied from another browser. The page falls back to its own trace and says why.
    at = _arriving({"eviction_source": "Session trace"})
    assert _lost(at)
    at.button_group(key="eviction_source").set_value("Example").run()
    assert not _lost(at)
    assert "Session trace" not in at.button_group(key="eviction_source").options


def test_a_kept_session_trace_is_not_called_lost():
    at = _arriving({"eviction_source": "Session trace"}, {"kind": "example"})
    assert at.button_group(key="eviction_source").value == "Example"  # the session's trace, by its source
    assert not _lost(at)


def test_the_curve_table_is_drawn_only_once_opened():
    at = open_page("eviction", {"eviction_requests": "300"})
    assert_clean(at)
    assert not any("capacity (blocks)" in df.value.columns for df in at.dataframe)
    assert [e.label for e in at.expander if e.label == "The curve as a table"]
    assert any("hit curve" in b.proto.label for b in at.get("download_button"))  # its CSV is there either way
