"""AppTest checks of the Mooncake cluster page: both views, controls, shared links, bad input."""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_each_changes_the_view

pytestmark = pytest.mark.shared_caches

FAST = {"cluster_minutes": "5", "cluster_seeds": "1"}
UPLOAD = {**FAST, "cluster_arrivals": "Trace replay", "cluster_source": "Upload"}


def by_scheduler(at, index: int = 0):
    """A table shown turned (a column per scheduler or policy) back to a row each, its numbers as read."""
    return at.dataframe[index].value.set_index("").T.map(_number)


def _number(text: str) -> float | str:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def _titles(at) -> list[str]:
    """The figures' titles as read, a line break where a long title wraps read as a space."""
    return [
        json.loads(el.proto.spec)["layout"].get("title", {}).get("text", "").replace("<br>", " ")
        for el in at.get("plotly_chart")
    ]


def test_overload_view_renders_every_section():
    at = open_page("cluster", FAST)
    assert_clean(at)
    assert at.title[0].value == "Mooncake cluster"
    assert len(at.get("plotly_chart")) == 3
    assert [m.label for m in at.metric] == [
        "Completed",
        "Rejected on arrival",
        "Rejected after prefill",
        "Wasted prefill",
    ]
    assert "Early rejection: load and admissions over time (10-s windows)" in _titles(at)
    summary = json.loads(at.dataframe[0].proto.columns)  # a column per policy, under its short name
    predict = summary["Early rejection + prediction"]
    assert (predict["label"], predict["help"]) == ("Prediction", "Early rejection + prediction")
    assert (summary["Baseline"]["label"], summary["Baseline"].get("help")) == ("Baseline", None)
    assert by_scheduler(at).loc["Early rejection", "Completed"] == float(at.metric[0].value.replace(",", ""))
    paper = at.table[-1].value
    assert any("4,183" in p for p in paper["paper"].tolist())
    assert set(paper["status"]) <= {"agrees", "differs", "input", "calibrated"}
    assert any("What to notice" in s.value for s in at.subheader)


@pytest.mark.parametrize("policy", ["Early rejection + prediction", "predict"], ids=["words", "old link with code"])
def test_policy_switch_and_a_shared_link_open_the_same_view(policy):
    at = open_page("cluster", {**FAST, "cluster_policy": policy, "cluster_p": "4"})
    assert_clean(at)
    assert at.slider(key="cluster_p").value == 4
    assert at.query_params["cluster_policy"] == "Early rejection + prediction"  # what the reader sees
    assert "Early rejection + prediction: load and admissions over time (10-s windows)" in _titles(at)
    at.segmented_control(key="cluster_policy").set_value("Baseline").run()
    assert_clean(at)
    assert "Baseline: load and admissions over time (10-s windows)" in _titles(at)


def test_an_impossible_tbt_slo_is_an_error_not_a_traceback():
    at = open_page("cluster", FAST)
    at.slider(key="cluster_tbt").set_value(20).run()
    assert_clean(at)
    assert at.error and "TBT SLO" in at.error[0].value


def test_trace_replay_of_a_trace_without_block_ids():
    at = open_page("cluster", {**FAST, "cluster_arrivals": "Trace replay", "cluster_source": "Upload"})
    assert_clean(at)
    csv = b"arrival_time,prompt_tokens,decode_tokens\n0.0,8000,100\n0.5,12000,50\n1.0,4000,300\n"
    at.file_uploader(key="cluster_upload").upload("t.csv", csv, "text/csv").run()
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 3
    at.segmented_control(key="cluster_view").set_value("Scheduling").run()
    assert_clean(at)
    assert at.warning and "no block ids" in at.warning[0].value


def test_scheduling_view_compares_four_schedulers():
    at = open_page("cluster", {"cluster_view": "Scheduling", "cluster_requests": "600", "cluster_instances": "4"})
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 4
    assert "What happened to the requests" in _titles(at)
    table = by_scheduler(at)
    assert table.index.tolist() == ["Random", "Load balancing", "Cache-aware", "KVCache-centric"]
    assert table["Requests"].tolist() == [600] * 4
    assert table["Remote fetches"].iloc[:3].tolist() == [0, 0, 0]
    at.select_slider(key="cluster_bw").set_value(3).run()
    assert_clean(at)
    assert by_scheduler(at).index.tolist()[-1] == "KVCache-centric"


def test_a_bad_upload_shows_the_line_that_is_wrong():
    at = open_page("cluster", {**FAST, "cluster_arrivals": "Trace replay", "cluster_source": "Upload"})
    at.file_uploader(key="cluster_upload").upload(
        "t.jsonl", b'{"timestamp": 0, "input_length": -5}\n', "application/json"
    ).run()
    assert_clean(at)
    assert at.error and "line 1" in at.error[0].value


def test_an_expensive_link_shows_the_estimate_and_waits_for_a_click():
    # An hour at 4× capacity over three seeds: the least of this run's knobs that is estimated over the
    # point where a view asks first (about 6 s of 5), so the click runs no more than it must.
    at = open_page("cluster", {"cluster_minutes": "60", "cluster_load": "4", "cluster_seeds": "3"})
    assert_clean(at)
    assert at.info and "expensive" in at.info[0].value
    assert not at.get("plotly_chart")
    assert at.button(key="cluster_overload_confirm").label == "Run it"
    at.button(key="cluster_overload_confirm").click().run(timeout=180)
    assert_clean(at)
    assert not at.info and len(at.get("plotly_chart")) == 3


def test_two_requests_thirty_days_apart_replay_at_once():
    at = open_page("cluster", UPLOAD)
    trace = (
        b'{"timestamp": 0, "input_length": 8000, "output_length": 100}\n'
        b'{"timestamp": 2592000000, "input_length": 8000, "output_length": 100}\n'
    )
    at.file_uploader(key="cluster_upload").upload("t.jsonl", trace, "application/json").run(timeout=180)
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 3


def test_the_seed_controls_have_distinct_keys():
    at = open_page("cluster", {**UPLOAD, "cluster_source": "Synthetic"})
    assert_clean(at)
    assert at.number_input(key="cluster_seed").label == "Seed"  # the synthetic trace's
    at = open_page("cluster", FAST)
    assert at.number_input(key="cluster_first_seed").label == "First seed"  # the Poisson runs'


def test_a_tiny_date_time_csv_spanning_centuries_is_refused_with_a_message():
    at = open_page("cluster", UPLOAD)
    csv = b"TIMESTAMP,ContextTokens,GeneratedTokens\n1700-01-01 00:00:00,100,10\n2200-01-01 00:00:00,100,10\n"
    at.file_uploader(key="cluster_upload").upload("t.csv", csv, "text/csv").run(timeout=180)
    assert_clean(at)
    assert at.error and "ten years" in at.error[0].value


def test_every_overload_control_changes_what_is_shown():
    at = open_page("cluster", FAST)
    assert_clean(at)
    assert_each_changes_the_view(
        at,
        [
            ("segmented_control", "cluster_policy", "Baseline"),
            ("slider", "cluster_load", 2.5),
            ("number_input", "cluster_mean_in", 15_000),
            ("number_input", "cluster_mean_out", 150),
            ("number_input", "cluster_first_seed", 3),
            ("slider", "cluster_p", 8),
            ("slider", "cluster_d", 4),
            ("slider", "cluster_batch", 8),
            ("slider", "cluster_ttft", 30.0),
            ("slider", "cluster_tbt", 200),
            ("slider", "cluster_threshold", 0.8),
            ("number_input", "cluster_td", 5.0),
            ("slider", "cluster_seeds", 2),
            ("slider", "cluster_minutes", 10),
        ],
    )


def test_every_scheduling_control_changes_what_is_shown():
    at = open_page("cluster", {"cluster_view": "Scheduling", "cluster_requests": "300", "cluster_instances": "4"})
    assert_clean(at)
    assert_each_changes_the_view(
        at,
        [
            # Two requests of this trace meet a prefix ratio (1.09, 1.14): a threshold of 1.0 fetches for them.
            ("slider", "cluster_balance", 1.0),
            ("slider", "cluster_instances", 3),
            ("number_input", "cluster_cache", 500),
            ("select_slider", "cluster_bw", 3),
            ("slider", "cluster_sched_speedup", 5.0),
            ("slider", "cluster_decode", 2),
            ("slider", "cluster_sched_ttft", 2.0),
            ("slider", "cluster_sched_tbt", 50),
            ("toggle", "cluster_reject", True),
        ],
    )
    assert any(b.label == "Download scheduler table (CSV)" for b in at.get("download_button"))


def test_rejection_on_an_overloaded_replay_turns_requests_away_and_keeps_ttft_within_the_slo():
    at = open_page(
        "cluster",
        {
            "cluster_view": "Scheduling",
            "cluster_requests": "600",
            "cluster_sched_speedup": "10",
            "cluster_reject": "true",
        },
    )
    assert_clean(at)
    kv = by_scheduler(at).loc["KVCache-centric"]
    assert kv["Rejected: TTFT"] > 0 and kv["Accepted"] + kv["Rejected: TTFT"] + kv["Rejected: TBT"] == 600
    assert kv["P90 TTFT (s)"] <= 30 and kv["Over TTFT SLO"] == "0%"
    assert any("With **rejection** on, KVCache-centric admitted" in m.value for m in at.markdown)


def test_the_decode_batch_limit_stops_where_the_tbt_slo_does_and_says_so():
    at = open_page("cluster", FAST)
    batch = at.slider(key="cluster_batch")
    assert (batch.max, batch.value) == (16, 16)
    assert "stops a batch at 16 already" in batch.help
    at.slider(key="cluster_tbt").set_value(200).run()
    assert_clean(at)
    assert at.slider(key="cluster_batch").max == 36


def test_kvcentric_placement_on_a_trace_with_block_ids_and_disabled_without():
    at = open_page("cluster", {**FAST, "cluster_arrivals": "Trace replay", "cluster_source": "Example"})
    assert_clean(at)
    placement = at.segmented_control(key="cluster_placement")
    assert not placement.disabled
    placement.set_value("KVCache-centric").run()
    assert_clean(at)
    assert any("Prefill placement: **KVCache-centric**" in c.value for c in at.caption)
    csv = b"arrival_time,prompt_tokens,decode_tokens\n0.0,8000,100\n0.5,12000,50\n"
    at = open_page("cluster", UPLOAD)
    at.file_uploader(key="cluster_upload").upload("t.csv", csv, "text/csv").run()
    assert_clean(at)
    placement = at.segmented_control(key="cluster_placement")
    assert placement.disabled and "needs a trace that lists each request's block ids" in placement.help


ROUTERS = {
    "cluster_view": "Routers",
    "cluster_source": "Synthetic",
    "cluster_requests": "300",
    "cluster_routers": ["round-robin", "cache-aware"],
    "cluster_router_counts": ["2", "4"],
    "cluster_router_blocks": "256",
    "cluster_router_target": "0.5",
}


def test_routers_view_answers_first_with_the_clusters_cheapest():
    from kvviz.cluster import REFERENCE, ClusterConfig, compare
    from kvviz.traces.workload import WorkloadConfig, generate

    at = open_page("cluster", ROUTERS, timeout=300)
    assert_clean(at)
    trace = generate(WorkloadConfig(requests=300))
    config = ClusterConfig(blocks=256)
    expected = compare(trace, ["round-robin", "cache-aware"], config, instance_counts=[2, 4], target_p90_s=0.5)
    served = expected[expected["router"] != REFERENCE]
    table = at.dataframe[0].value
    assert table["router"].tolist() == ["round-robin", "cache-aware"] * 2
    assert table["ttft_p90_s"].tolist() == pytest.approx(served["ttft_p90_s"].tolist())
    answer = at.success[0].value  # first, under the view's switch: seen without scrolling
    assert served["cheapest"].any()  # the target is met on this trace, so the answer names a router
    assert answer.startswith("Behind a router, each instance keeping its own GPU memory, the cheapest that ")
    best = served[served["cheapest"]].iloc[0]
    assert f"{best['instances']:,} instances of 1 × H100 serving Llama 3 8B behind {best['router']}" in answer
    assert f"${best['dollars_per_hour']:,.2f} per hour" in answer
    at.selectbox(key="cluster_engine").set_value("vLLM + LMCache (GPU only)").run()
    assert_clean(at)
    lmcache = compare(
        trace, ["round-robin", "cache-aware"], ClusterConfig(blocks=256, engine="vllm-lmcache"), instance_counts=[2, 4]
    )
    served = lmcache[lmcache["router"] != REFERENCE]
    assert at.dataframe[0].value["hits_pct"].tolist() == pytest.approx((100 * served["hit_ratio"]).tolist())


def test_every_routers_control_changes_what_is_shown_and_a_link_reopens_it():
    at = open_page("cluster", ROUTERS, timeout=300)
    assert_clean(at)
    assert_each_changes_the_view(
        at,
        [
            ("multiselect", "cluster_routers", ["round-robin", "kv-aware"]),
            ("multiselect", "cluster_router_counts", [2, 3]),
            ("number_input", "cluster_router_blocks", 64),
            ("selectbox", "cluster_engine", "vLLM + LMCache (GPU only)"),
            ("number_input", "cluster_router_target", 0.05),
        ],
    )
    params = {
        **ROUTERS,
        "cluster_routers": ["round-robin", "kv-aware"],
        "cluster_router_counts": ["2", "3"],
        "cluster_router_blocks": "64",
        "cluster_engine": "vllm-lmcache",  # by its code, as older links name it
        "cluster_router_target": "0.05",
    }
    again = open_page("cluster", params, timeout=300)
    answer = at.warning[0].value  # no count meets 50 ms: the answer warns, naming the fastest
    assert answer.startswith("None of these routers and instance counts keeps TTFT p90 within 0.05 s")
    assert not at.success and again.warning[0].value == answer
    assert again.dataframe[0].value.equals(at.dataframe[0].value)
    assert again.selectbox(key="cluster_engine").value == "vLLM + LMCache (GPU only)"
    assert again.query_params["cluster_engine"] == "vLLM + LMCache (GPU only)"
