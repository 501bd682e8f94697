"""The Prefix-cache replay page in AppTest: every view on the bundled example and on an uploaded trace."""

from __future__ import annotations

import pytest

from kvviz.workload import WorkloadConfig, generate
from tests.conftest import APP, assert_clean, open_page

EXAMPLE = {"prefix_source": "Example", "prefix_points": "6", "prefix_range": ["100", "10k"]}


def _paper(at):
    return at.table[-1].value


@pytest.mark.parametrize(("view", "charts"), [("Curves", 2), ("Worked example", 1), ("Per request", 1),
                                              ("Over time", 2), ("Prefix tree", 1)])
def test_every_view_opens_clean_on_the_example(view, charts):
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_view": view}, timeout=180)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == charts
    assert "What to notice" in [h.value for h in at.subheader]
    if view in ("Curves", "Worked example"):
        paper = _paper(at)
        assert set(paper["status"]) <= {"agrees", "differs", "input"}
        assert "7 / 2" in paper["this simulation"].tolist()


def test_curves_view_table_and_controls_in_the_url():
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_policies": ["LRU", "MRU"], "prefix_model": "llama-2-7b"},
                   timeout=180)
    assert_clean(at)
    assert at.multiselect(key="prefix_policies").value == ["lru", "mru"]
    table = next(df.value for df in at.dataframe if "share of ceiling" in df.value.columns)
    assert set(table["policy"]) == {"LRU", "MRU"} and set(table["share of ceiling"]) == {"80%", "90%", "95%"}
    assert any("MiB of llama-2-7b KV" in c.value for c in at.caption)
    assert at.get("download_button")


def test_worked_example_steps_from_the_url():
    at = open_page("prefix_cache", {"prefix_view": "Worked example", "prefix_step": "2"})
    assert_clean(at)
    assert at.slider(key="prefix_step").value == 2
    assert len(at.dataframe[0].value) == 2
    assert any("7 prefix hits" in m.value for m in at.markdown)


def test_an_uploaded_trace_with_turns_gets_the_by_turn_view():
    from streamlit.testing.v1 import AppTest

    trace = generate(WorkloadConfig(requests=250, seed=5))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["kvviz_trace_spec"] = {"kind": "upload", "data": trace.to_jsonl().encode(),
                                            "block_size": 512, "name": "mine.jsonl"}
    at.run()
    at.query_params["prefix_view"] = "Per request"
    at.switch_page("pages/prefix_cache.py").run()
    assert_clean(at)
    assert any(f"{len(trace.blocks):,} block accesses" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 1
    at.segmented_control(key="prefix_view").set_value("Over time").run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2


def test_a_trace_without_block_ids_is_an_error_message():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["kvviz_trace_spec"] = {
        "kind": "upload", "data": b"timestamp,input_length,output_length\n0,100,5\n10,200,7\n",
        "block_size": 512, "name": "lengths only"}
    at.run()
    at.switch_page("pages/prefix_cache.py").run()
    assert_clean(at)
    assert at.error and "no block ids" in at.error[0].value


def test_no_policy_and_garbage_url_values_open_clean():
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_policies": ["NOPE"], "prefix_points": "many",
                                    "prefix_view": "Nowhere"})
    assert_clean(at)
    at.multiselect(key="prefix_policies").set_value([]).run()
    assert_clean(at)
    assert any("Pick at least one" in i.value for i in at.info)


def test_the_curves_from_a_request_sample_say_so_and_their_ceiling_error():
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_sample": "50%", "prefix_range": ["100", "20k"]}, timeout=180)
    assert_clean(at)
    note = next(c.value for c in at.caption if c.value.startswith("**Sampled**"))
    assert "kept whole, by the hash of their first block" in note and "infinite-cache ceiling" in note
    assert len(at.get("plotly_chart")) == 2
