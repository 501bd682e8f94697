"""The Prefix-cache page's engine choice in AppTest: vLLM's block pool beside SGLang on the bundled example."""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_clean, open_page

pytestmark = pytest.mark.shared_caches

EXAMPLE = {"prefix_source": "Example", "prefix_points": "4", "prefix_range": ["100", "1k"]}


def _specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def _notes(at) -> str:
    """Every markdown of the page, one per line (the notes are one markdown list)."""
    return "\n".join(m.value for m in at.markdown)


def test_curves_draw_vllm_beside_sglang_and_say_where_they_differ():
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_engine": "vLLM", "prefix_policies": ["LRU"]}, timeout=180)
    assert_clean(at)
    assert at.segmented_control(key="prefix_engine").value == "vLLM"
    assert at.segmented_control(key="prefix_sample").proto.disabled
    curves = next(s for s in _specs(at) if "radix keys" in s["layout"]["title"]["text"])
    assert [t["name"] for t in curves["data"]] == ["vLLM", "LRU"]
    vllm_y = curves["data"][0]["y"]
    assert vllm_y[0] == 2714 / 30384  # the pool's hits at 100 blocks over the example's block accesses
    notes = _notes(at)
    assert "is ahead where the engines differ most: at 100 blocks" in notes and "whole radix edge" in notes
    assert "0 cached blocks of vLLM's final pool are orphaned" in notes
    table = next(df.value for df in at.dataframe if "share of ceiling" in df.value.columns)
    assert set(table["policy"]) == {"vLLM", "LRU"}


def test_worked_example_where_the_engines_part_ways():
    at = open_page("prefix_cache", {"prefix_view": "Worked example", "prefix_engine": "vLLM", "prefix_step": "4"})
    assert_clean(at)
    rows = at.dataframe[0].value
    assert rows.columns.tolist()[2:] == ["vLLM pool, tail first: hits", "SGLang tree, LRU leaves first: hits"]
    assert rows.iloc[:, 2].tolist() == [0, 1, 3, 1] and rows.iloc[:, 3].tolist() == [0, 1, 1, 1]
    notes = _notes(at)
    assert "vLLM's pool has 5 prefix hits and SGLang's radix tree 3" in notes
    assert "- Request 3 (A·B·C·D) shows why: before it, vLLM held A, B, C, E and SGLang A, E." in notes


def test_over_time_and_per_request_show_vllm():
    at = open_page(
        "prefix_cache",
        {**EXAMPLE, "prefix_view": "Over time", "prefix_engine": "vLLM", "prefix_policies": ["LRU"]},
        timeout=180,
    )
    assert_clean(at)
    assert at.selectbox(key="prefix_heat_a").value == "vLLM" and at.selectbox(key="prefix_heat_b").value == "LRU"
    assert [s["layout"]["title"]["text"] for s in _specs(at)][1].startswith("vLLM − LRU")
    at.segmented_control(key="prefix_view").set_value("Per request").run()
    assert_clean(at)
    assert at.selectbox(key="prefix_req_policy").value == "vLLM"
    assert ", vLLM" in json.dumps(_specs(at)[0]["layout"]["title"])
