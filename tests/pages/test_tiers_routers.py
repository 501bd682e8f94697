"""AppTest: the Tiers page's router comparison is the cluster's, it starts at the instance count the
search above it chose (one included), its controls are in the URL, and "What to notice" opens with its
answer as one sentence."""

from __future__ import annotations

import pandas as pd
import pytest

from kvviz.cluster import REFERENCE, compare
from kvviz.cluster.deployment import cluster_config
from kvviz.prefix_cache.replay import prepare
from kvviz.tiers.config import TierConfig
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import assert_clean, open_page

pytestmark = pytest.mark.shared_caches

ROUTED = {
    "tiers_source": "Synthetic",
    "tiers_requests": "300",
    "tiers_routers": ["round-robin", "kv-aware"],
    "tiers_router_counts": ["2", "4"],
}
SHOWN = ["router", "instances", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "imbalance", "dollars_per_hour"]


def test_the_comparison_is_the_clusters_and_the_notes_read_it():
    at = open_page("tiers", ROUTED, timeout=300)
    assert_clean(at)
    assert at.multiselect(key="tiers_routers").value == ["round-robin", "kv-aware"]
    assert at.multiselect(key="tiers_router_counts").value == [2, 4]
    table = next(d.value for d in at.dataframe if "imbalance" in d.value.columns)
    trace = generate(WorkloadConfig(requests=300))
    config = cluster_config(TierConfig("llama-3-8b", "h100", instances=2), prepare(trace))
    # the search above answers one instance on this trace, so the comparison starts there
    expected = compare(trace, ["round-robin", "kv-aware"], config, instance_counts=[1, 2, 4], target_p90_s=2.0)
    served = expected[expected["router"] != REFERENCE].reset_index(drop=True)
    shared = expected[expected["router"] == REFERENCE].set_index("instances")["hit_ratio"]
    assert table["router"].tolist() == ["round-robin", "kv-aware"] * 3
    assert table["instances"].tolist() == [1, 1, 2, 2, 4, 4]
    assert "Cheapest deployment that keeps TTFT p90 within 2 s: 1 instance(s)" in at.success[1].value
    pd.testing.assert_frame_equal(table[SHOWN], served[SHOWN], check_dtype=False)
    assert table["hits_pct"].tolist() == pytest.approx((100 * served["hit_ratio"]).tolist())
    assert table["shared_pct"].tolist() == pytest.approx([100 * shared[n] for n in served["instances"]])
    said = " ".join(m.value for m in at.markdown)
    assert f"one shared cache of all their GPU memory, the reference, would hit {shared[4]:.1%}" in said
    words = [
        "cheapest" if c else "meets" if m else "misses" for c, m in zip(served["cheapest"], served["meets_target"])
    ]
    assert table["target"].tolist() == words
    cheapest = served[served["cheapest"]].iloc[0]
    assert cheapest["instances"] == 1  # the search's answer meets the target behind any router
    answer = (
        "Behind a router, each instance keeping its own GPU memory, the cheapest that keeps TTFT p90 within 2 s is "
        "one instance of 1 × H100 (with one instance there is no router to choose), at "
        f"${cheapest['dollars_per_hour']:,.2f} per hour for the whole cluster"
    )
    assert answer in said
    assert at.success[0].value.startswith(answer)  # at a glance: the page's first answer, above the replay


def test_the_conductors_copies_are_said_apart_from_its_hits():
    at = open_page("tiers", {**ROUTED, "tiers_routers": ["conductor"], "tiers_router_counts": ["4"]}, timeout=300)
    assert_clean(at)
    trace = generate(WorkloadConfig(requests=300))
    config = cluster_config(TierConfig("llama-3-8b", "h100", instances=4), prepare(trace))
    row = compare(trace, ["conductor"], config).iloc[0]
    said = " ".join(m.value for m in at.markdown)
    copied = f"conductor at 4 instances also copied {row['fetched'] / row['accesses']:.1%} of block accesses"
    assert (copied in said) == (row["fetched"] > 0)


def test_several_replicas_per_instance_are_not_routed_and_the_page_says_why():
    at = open_page("tiers", {**ROUTED, "tiers_gpus": "2", "tiers_tp": "1"}, timeout=300)
    assert_clean(at)
    assert any("each instance is one model replica" in i.value for i in at.info)
    assert not any("imbalance" in d.value.columns for d in at.dataframe)
    assert at.multiselect(key="tiers_routers").disabled and at.multiselect(key="tiers_router_counts").disabled


def test_each_control_changes_the_comparison():
    at = open_page("tiers", ROUTED, timeout=300)
    before = next(d.value for d in at.dataframe if "imbalance" in d.value.columns)
    at.multiselect(key="tiers_routers").set_value(["least-load"]).run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "imbalance" in d.value.columns)
    assert table["router"].tolist() == ["least-load"] * 3 and not table.equals(before)
    at.multiselect(key="tiers_router_counts").set_value([3]).run()
    table = next(d.value for d in at.dataframe if "imbalance" in d.value.columns)
    assert table["instances"].tolist() == [1, 3]  # from the search's one instance


def test_the_counts_start_at_the_searchs_and_those_below_it_are_said_left_out():
    from ui.tiers.routers import starting_at

    assert starting_at(3, (2, 4, 8)) == ((3, 4, 8), (2,))
    assert starting_at(1, ()) == ((1,), ())
    assert starting_at(8, (2, 4, 8)) == ((8,), (2, 4))


def test_the_answer_at_the_top_warns_when_no_router_meets_the_target():
    at = open_page("tiers", {**ROUTED, "tiers_slo": "0.01"}, timeout=300)
    assert_clean(at)
    first = at.warning[0].value
    assert first.startswith("None of these routers and instance counts keeps TTFT p90 within 0.01 s")
    assert not any(s.value.startswith("Behind a router") for s in at.success)


def test_the_load_choices_of_one_instance_leave_the_routers_comparison_as_it_is():
    """Overlapping loads and recomputing slow ones are the single instance's choices; behind a router
    every block found loads, so the comparison is the same table with them off or on."""
    plain = open_page("tiers", ROUTED, timeout=300)
    chosen = open_page("tiers", {**ROUTED, "tiers_overlap": "false", "tiers_load": "true"}, timeout=300)
    assert_clean(chosen)
    assert not chosen.toggle(key="tiers_overlap").value and chosen.toggle(key="tiers_load").value
    assert not chosen.error, [e.value for e in chosen.error]
    tables = [next(d.value for d in at.dataframe if "imbalance" in d.value.columns) for at in (plain, chosen)]
    pd.testing.assert_frame_equal(*tables)
