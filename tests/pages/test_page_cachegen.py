"""AppTest: the CacheGen page's three views, its bandwidth sources, shareable URLs and bad input."""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_clean, open_page, shown


def table_with(at, column: str):
    """The first dataframe on the page that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


TABLES = {"cachegen_chunk_table": "true", "cachegen_levels_table": "true"}  # the two folded tables, opened
SMALL_CODEC = {"cachegen_view": "Codec", "cachegen_layers": "3", "cachegen_tokens": "256", "cachegen_channels": "16"}


def test_timeline_view_renders_every_policy_row():
    at = open_page("cachegen", TABLES)
    assert_clean(at)
    assert at.title[0].value == "CacheGen streaming"
    assert at.segmented_control(key="cachegen_view").value == "Streaming timeline"
    chips = ["paper rule", "artifact rule", "level 2", "8-bit quant", "text only", "oracle (bound)"]
    assert at.multiselect(key="cachegen_policies").value == chips
    assert any("What to notice" in s.value for s in at.subheader)
    assert set(table_with(at, "chunk").policy) == set(chips)  # named as the policy chips name them
    summary = table_with(at, "violation_rate")
    assert len(summary) == 8


def test_query_params_open_the_same_view():
    at = open_page(
        "cachegen", {"cachegen_bw": "Step", "cachegen_slo": "2.5", "cachegen_recompute": "Fixed 0.2 s", **TABLES}
    )
    assert_clean(at)
    assert at.segmented_control(key="cachegen_bw").value == "Step"
    assert at.segmented_control(key="cachegen_recompute").value == "Fixed 0.2 s"
    assert at.slider(key="cachegen_slo").value == 2.5
    timeline = table_with(at, "chunk")
    assert timeline.end_s.max() > 0.3  # the step trace drops to 1 Gb/s at 0.3 s


def test_detail_tables_fold_until_opened_and_download_either_way():
    at = open_page("cachegen")
    assert_clean(at)
    assert [list(d.value.columns)[1] for d in at.dataframe] == ["violation_rate"]  # the summary alone
    assert {e.label for e in at.expander} >= {
        "Per-chunk table: each chunk's level, size, bandwidth and times",
        "The compression levels, as measured",
    }
    names = [b.proto.label for b in at.get("download_button")]
    assert any("per-chunk" in n for n in names) and any("measured levels" in n for n in names)


def test_widget_changes_rerun_cleanly():
    at = open_page("cachegen")
    at.slider(key="cachegen_persist").set_value(0.5).run()
    assert_clean(at)
    at.segmented_control(key="cachegen_bw").set_value("i.i.d.").run()
    assert at.slider(key="cachegen_persist").disabled
    at.slider(key="cachegen_slo").set_value(0.5).run()
    assert_clean(at)
    summary = table_with(at, "violation_rate")
    assert summary.set_index("policy").loc["8-bit quant", "violation_rate"] == 1.0  # 8-bit never fits 0.5 s


def test_violation_view():
    at = open_page("cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_k": "100"})
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
    summary = table_with(at, "violation_rate")
    assert set(summary.policy) >= {"paper rule", "artifact rule", "oracle (bound)"}


def test_codec_view_round_trips():
    at = open_page("cachegen", SMALL_CODEC)
    assert_clean(at)
    table = table_with(at, "roundtrip")
    assert table.roundtrip.iloc[0] == "exact"
    assert (table.roundtrip != "MISMATCH").all()
    paper_rows = at.table[-1].value  # frame.paper_vs_sim: indexed by quantity
    assert paper_rows.index.str.contains("global").any()
    shown = at.dataframe[0].proto  # the size and quality columns; the CSV has the rest
    assert list(shown.column_order) == [
        "variant",
        "level",
        "bits_per_value",
        "rel_error",
        "weighted_error",
        "ideal_bits_per_value",
        "header_bits_per_value",
    ]
    assert "The CSV also has MSE and the round-trip check (exact: decoding gives back every value)." in [
        c.value for c in at.caption
    ]
    assert json.loads(shown.columns)["bits_per_value"]["label"] == "Bits/value"


def test_levels_are_measured_and_every_paper_row_has_a_computed_status():
    at = open_page("cachegen", {"cachegen_sizes": "Record-world KV", **TABLES})
    assert_clean(at)
    levels = table_with(at, "same answer as fp16")
    assert levels.config.tolist() == ["level 1", "level 2", "level 3", "8-bit quant"]
    assert levels.bits_per_value.is_monotonic_increasing
    rows = at.table[-1].value
    assert "622 MB (Table 1)" in rows["paper"].iloc[0]
    assert "record-world model's KV" in rows["this simulation"].iloc[1]
    assert rows["status"].isin(["agrees", "differs"]).all() and rows["basis"].str.len().gt(0).all()
    text = rows.loc["Mean TTFT, text recompute ÷ CacheGen adaptive"]
    assert text["status"].startswith("differs") and text["this simulation"].split("×")[0] in at.markdown[-1].value


def test_an_expensive_codec_link_asks_before_running():
    at = open_page(
        "cachegen",
        {"cachegen_view": "Codec", "cachegen_layers": "32", "cachegen_tokens": "4096", "cachegen_channels": "256"},
    )
    assert_clean(at)
    assert any("This view is expensive" in i.value and "CPU s" in i.value for i in at.info)
    assert at.button(key="cachegen_codec_confirm").label == "Run it"
    assert not any("roundtrip" in d.value.columns for d in at.dataframe)  # nothing encoded yet


def test_an_expensive_sweep_asks_and_an_absurd_one_is_refused():
    # 3,000 traces of 80 chunks: the oracle's programme alone is about 12 CPU s
    at = open_page(
        "cachegen",
        {
            "cachegen_view": "Violation vs SLO",
            "cachegen_k": "3000",
            "cachegen_context": "40000",
            "cachegen_chunk": "500",
        },
    )
    assert_clean(at)
    assert any("This view is expensive" in i.value for i in at.info) and not at.get("plotly_chart")
    # every persistence point streams 3,000 fresh traces of 1,000 chunks: far past the limit
    at = open_page(
        "cachegen",
        {
            "cachegen_view": "Violation vs SLO",
            "cachegen_against": "Persistence",
            "cachegen_k": "3000",
            "cachegen_context": "1000000",
            "cachegen_chunk": "1000",
        },
    )
    assert_clean(at)
    assert any("over the limit" in e.value and "random traces" in e.value for e in at.error)


@pytest.mark.parametrize(
    "query, message", [({"cachegen_chunk": "20000"}, "larger than the context"), ({"cachegen_chunk": "1"}, "too many")]
)
def test_bad_input_is_a_message(query, message):
    at = open_page("cachegen", query)
    assert_clean(at)
    assert any(message in e.value for e in at.error)


def test_upload_source_asks_for_a_file():
    at = open_page("cachegen", {"cachegen_bw": "Upload"})
    assert_clean(at)
    assert any("time_s, gbps" in i.value for i in at.info)


def test_an_uploaded_trace_is_named_as_text_never_as_a_link_or_an_image():
    name = "a(![x](x.png))[click](x).csv"  # a browser sends no folder, and no name with a slash
    at = open_page("cachegen", {"cachegen_bw": "Upload", "cachegen_k": "100"})
    at.file_uploader(key="cachegen_csv").upload(f"C:\\Users\\me\\{name}", b"time_s,gbps\n0,5\n1,2\n", "text/csv").run()
    assert_clean(at)
    caption = next(c.value for c in at.caption if c.value.startswith("Over 1 trace(s)"))
    assert caption.endswith(r"(a\(\!\[x\]\(x\.png\)\)\[click\]\(x\)\.csv):")
    assert shown(caption).endswith(f"({name}):")  # read as the file is named, its folders left out
    said = [m.value for m in (*at.markdown, *at.caption)] + at.table[-1].value.astype(str).values.ravel().tolist()
    assert sum(name in shown(s) for s in said) >= 2 and not any("](x" in s for s in said)  # notes, paper rows


def test_record_world_source_shows_the_models_answers(monkeypatch):
    """With weights on disk the codec can take the model's KV; a random-init model stands in here."""
    import kvviz.cacheblend.model as model_module
    from kvviz.cachegen import model_kv

    stand_in = model_module.Model(model_module.Config(), model_module.init_params(model_module.Config(), seed=0))
    monkeypatch.setattr(model_kv, "available", lambda: True)
    monkeypatch.setattr(model_module, "load_model", lambda path=None: stand_in)
    at = open_page(
        "cachegen", {"cachegen_view": "Codec", "cachegen_kvsource": "Record-world model", "cachegen_docs": "20"}
    )
    assert_clean(at)
    table = table_with(at, "accuracy")
    assert table.accuracy.between(0, 1).all()
    assert any("questions right" in c.value for c in at.caption)
    assert at.table[-1].value.index.str.contains("Record-world").any()
    assert len(at.get("plotly_chart")) == 2  # the quality curve and the Pareto chart
    assert (table.kl >= 0).all()
    shown = next(d.proto for d in at.dataframe if "accuracy" in d.value.columns)
    assert list(shown.column_order)[3:] == ["accuracy", "kl", "rel_error", "weighted_error"]  # not ideal, header


def test_violation_against_mean_bandwidth():
    at = open_page(
        "cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_against": "Mean bandwidth", "cachegen_k": "300"}
    )
    assert_clean(at)
    assert at.segmented_control(key="cachegen_against").value == "Mean bandwidth"
    assert len(at.get("plotly_chart")) == 1


def test_violation_against_persistence():
    at = open_page(
        "cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_against": "Persistence", "cachegen_k": "100"}
    )
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
