"""AppTest: the CacheGen page's three views, its bandwidth sources, shareable URLs and bad input."""

from __future__ import annotations

import pytest

from tests.conftest import assert_clean, open_page

SMALL_CODEC = {"cachegen_view": "Codec", "cachegen_layers": "3", "cachegen_tokens": "256",
               "cachegen_channels": "16"}


def test_timeline_view_renders_every_policy_row():
    at = open_page("cachegen")
    assert_clean(at)
    assert at.title[0].value == "CacheGen streaming"
    assert at.segmented_control(key="cachegen_view").value == "Streaming timeline"
    assert at.multiselect(key="cachegen_policies").value == ["paper", "artifact", "level2", "quant8", "text", "oracle"]
    assert any("What to notice" in s.value for s in at.subheader)
    tables = [d.value for d in at.dataframe]
    timeline = next(t for t in tables if "config" in t.columns)
    assert set(timeline.policy) == {"paper", "artifact", "level2", "quant8", "text", "oracle"}
    summary = next(t for t in tables if "violation_rate" in t.columns)
    assert len(summary) == 8


def test_query_params_open_the_same_view():
    at = open_page("cachegen", {"cachegen_bw": "step", "cachegen_slo": "2.5", "cachegen_recompute": "fixed"})
    assert_clean(at)
    assert at.segmented_control(key="cachegen_bw").value == "step"
    assert at.slider(key="cachegen_slo").value == 2.5
    timeline = next(d.value for d in at.dataframe if "config" in d.columns)
    assert timeline.end_s.max() > 0.3                        # the step trace drops to 1 Gb/s at 0.3 s


def test_widget_changes_rerun_cleanly():
    at = open_page("cachegen")
    at.segmented_control(key="cachegen_bw").set_value("iid").run()
    assert_clean(at)
    at.slider(key="cachegen_persist").set_value(0.5)
    at.slider(key="cachegen_slo").set_value(0.5).run()
    assert_clean(at)
    summary = next(d.value for d in at.dataframe if "violation_rate" in d.columns)
    assert summary.set_index("policy").loc["quant8", "violation_rate"] == 1.0   # 8-bit never fits 0.5 s


def test_violation_view():
    at = open_page("cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_k": "100"})
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
    summary = next(d.value for d in at.dataframe if "violation_rate" in d.columns)
    assert set(summary.policy) >= {"paper", "artifact", "oracle"}


def test_codec_view_round_trips():
    at = open_page("cachegen", SMALL_CODEC)
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "roundtrip" in d.columns)
    assert table.roundtrip.iloc[0] == "exact"
    assert (table.roundtrip != "MISMATCH").all()
    paper_rows = next(d.value for d in at.dataframe if "quantity" in d.columns)
    assert paper_rows.quantity.str.contains("global").any()


def test_codec_sizes_feed_the_streaming_levels():
    at = open_page("cachegen", {"cachegen_sizes": "codec"})
    assert_clean(at)
    paper_rows = next(d.value for d in at.dataframe if "quantity" in d.columns)
    assert "622 MB vs 176 MB" in paper_rows.paper.iloc[0]


@pytest.mark.parametrize("query, message", [
    ({"cachegen_chunk": "20000"}, "larger than the context"),
])
def test_bad_input_is_a_message(query, message):
    at = open_page("cachegen", query)
    assert_clean(at)
    assert any(message in e.value for e in at.error)


def test_upload_source_asks_for_a_file():
    at = open_page("cachegen", {"cachegen_bw": "upload"})
    assert_clean(at)
    assert any("time_s, gbps" in i.value for i in at.info)
