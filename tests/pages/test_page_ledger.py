"""AppTest: the ledger page's four views and the Strata I/O page: controls, bad input, shareable URLs."""

import json
from dataclasses import asdict, replace

import pandas as pd
import pytest

from kvviz.common import hardware as hw
from tests.conftest import assert_clean, open_page
from ui.ledger.inputs import by_id, by_title, titled, titles

pytestmark = pytest.mark.shared_caches


def _frame_with(at, column: str):
    """The first table on the page that has ``column`` (the presets editors come first)."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def _titles(at) -> list[str]:
    """Each figure's title, its lines (wrapped to fit the figure) joined by spaces."""
    return [json.loads(el.proto.spec)["layout"]["title"]["text"].replace("<br>", " ") for el in at.get("plotly_chart")]


def test_default_view_is_size():
    at = open_page("ledger")
    assert_clean(at)
    assert at.title[0].value == "Where to keep KV"
    assert any("KV grows with every token" in t for t in _titles(at))
    assert "128.0 KiB" in [m.value for m in at.metric]
    assert any("What the paper reports" in s.value for s in at.subheader)


@pytest.mark.parametrize(
    "view,sub_key,sub,title",
    [
        ("Load or recompute", None, None, "Load if your link is above the curve"),
        ("Load or recompute", "ledger_lr", "One context, every link", "loading the KV over each link vs recomputing"),
        ("Load or recompute", "ledger_lr", "20-turn chat", "Time to first token, turn by turn"),
        ("Economics", None, None, "How often a stored context must be reused"),
        ("Tiers", None, None, "Tiered KV cache"),
    ],
)
def test_url_opens_each_view(view, sub_key, sub, title):
    query = {"ledger_view": view} | ({sub_key: sub} if sub_key else {})
    at = open_page("ledger", query)
    assert_clean(at)
    assert any(title in t for t in _titles(at)), _titles(at)
    assert len(at.dataframe) >= 4  # 3 preset editors and the view's table
    assert len(at.table) == 1 and "paper" in at.table[0].value.columns  # paper vs this simulation


@pytest.mark.parametrize(
    "query",
    [{"ledger_model": "Llama 3.1 70B", "ledger_gpu": "A100"}, {"ledger_model": "llama-3.1-70b", "ledger_gpu": "a100"}],
    ids=["names", "old link with ids"],
)
def test_model_and_gpu_from_url_and_widget_change(query):
    at = open_page("ledger", query)
    assert_clean(at)
    assert at.selectbox(key="ledger_model").value == "Llama 3.1 70B"
    assert at.selectbox(key="ledger_gpu").value == "A100"
    assert at.query_params["ledger_model"] == "Llama 3.1 70B"  # what the reader sees, in a copied link
    assert "320.0 KiB" in [m.value for m in at.metric]
    at.selectbox(key="ledger_model").set_value("DeepSeek-R1").run()
    assert_clean(at)
    assert "68.6 KiB" in [m.value for m in at.metric]
    at.number_input(key="ledger_context").set_value(32_768).run()
    assert "per 32,768 tokens" in [m.label for m in at.metric]


def test_invalid_url_values_are_ignored():
    at = open_page("ledger", {"ledger_view": "Nonsense", "ledger_model": "gpt-9", "ledger_mfu": "abc"})
    assert_clean(at)
    assert at.selectbox(key="ledger_model").value == "Llama 3 8B"
    assert any("KV grows" in t for t in _titles(at))


@pytest.mark.parametrize("page,key", [("ledger", "ledger_mfu"), ("strata", "strata_mfu")])
@pytest.mark.parametrize("mfu", ["0", "1.5", "-0.2"])
def test_an_out_of_range_mfu_in_the_url_is_ignored(page, key, mfu):
    from kvviz.common.hardware import DEFAULT_MFU

    at = open_page(page, {key: mfu})
    assert_clean(at)
    assert not at.error
    assert at.number_input(key=key).value == DEFAULT_MFU


@pytest.mark.parametrize(
    "view,title",
    [
        (None, "Small pages waste the link"),
        ("Loading-bound", "loading-bound"),
        ("Balanced batching", "FCFS vs balanced batching"),
    ],
)
def test_url_opens_each_strata_view(view, title):
    at = open_page("strata", {"strata_view": view} if view else None)
    assert_clean(at)
    assert at.title[0].value == "Strata's I/O"
    assert any(title in t for t in _titles(at)), _titles(at)
    assert len(at.table) == 1 and "paper" in at.table[0].value.columns


def test_strata_names_its_model_and_gpu_and_a_link_with_their_ids_opens_the_same_view():
    view = {"strata_view": "Loading-bound"}
    named = open_page("strata", view | {"strata_model": "Qwen2.5 14B", "strata_gpu": "A100"})
    by_id = open_page("strata", view | {"strata_model": "qwen2.5-14b", "strata_gpu": "a100"})
    assert_clean(by_id)
    assert by_id.selectbox(key="strata_model").options[0] == "Llama 3 8B"
    assert (by_id.selectbox(key="strata_model").value, by_id.selectbox(key="strata_gpu").value) == (
        "Qwen2.5 14B",
        "A100",
    )
    assert (by_id.query_params["strata_model"], by_id.query_params["strata_gpu"]) == ("Qwen2.5 14B", "A100")
    assert [c.proto.spec for c in by_id.get("plotly_chart")] == [c.proto.spec for c in named.get("plotly_chart")]


def test_balanced_batching_controls_change_the_result():
    at = open_page("strata", {"strata_view": "Balanced batching"})
    before = _frame_with(at, "stall s FCFS").copy()
    assert before["stall s FCFS"].sum() > before["stall s balanced"].sum()
    at.number_input(key="strata_doc").set_value(4_096).run()
    assert_clean(at)
    assert any("FCFS vs balanced" in t for t in _titles(at))
    after = _frame_with(at, "stall s FCFS")
    assert after["stall s FCFS"].sum() < before["stall s FCFS"].sum()  # short documents load fast
    at.number_input(key="strata_batch").set_value(4).run()
    assert_clean(at)
    assert len(_frame_with(at, "stall s FCFS")) == 8  # 32 requests, 4 per batch


def test_tiers_fill_mode_switch():
    at = open_page("ledger", {"ledger_view": "Tiers", "ledger_fill": "write-through"})
    assert_clean(at)
    table = _frame_with(at, "setup")
    assert list(table["setup"])[0] == "GPU only (LRU)"
    assert (table["CPU hit %"] == 0).all()  # 47 GiB CPU < 54 GiB GPU: write-through adds nothing
    at.number_input(key="ledger_cpu_gib").set_value(400.0).run()
    assert_clean(at)
    assert (_frame_with(at, "CPU hit %")["CPU hit %"].iloc[1:] > 0).all()


def test_tiers_memory_in_gib_and_a_link_in_gb_opens_the_same_view():
    at = open_page("ledger", {"ledger_view": "Tiers", "ledger_gpu_gb": "58", "ledger_cpu_gb": "50"})
    assert_clean(at)
    assert at.number_input(key="ledger_gpu_gib").label == "GPU KV room (GiB)"
    assert (at.number_input(key="ledger_gpu_gib").value, at.number_input(key="ledger_cpu_gib").value) == (54.02, 46.57)
    assert "ledger_gpu_gb" not in at.query_params
    assert list(_frame_with(at, "setup")["setup"])[1] == "+ CPU 46.6 GiB, 10 GB/s"


def test_the_presets_editor_names_each_preset_and_a_row_the_reader_adds_is_named_as_typed():
    shown = by_title(hw.MODELS, hw.MODEL_TITLES)
    assert shown["name"].tolist()[:2] == ["Llama 3 8B", "Llama 3.1 70B"]
    mine = {**asdict(hw.MODELS["llama-3-8b"]), "name": "my model", "layers": 16}
    edited = pd.concat([shown, pd.DataFrame([mine])], ignore_index=True)
    models = hw.models_from_frame(by_id(edited, hw.MODEL_TITLES))
    assert list(models)[:2] == ["llama-3-8b", "llama-3.1-70b"] and models["my model"].layers == 16
    assert titles(models, hw.MODEL_TITLES)["my model"] == "my model"
    assert titled(models, hw.MODEL_TITLES)["llama-3-8b"] == replace(hw.MODELS["llama-3-8b"], name="Llama 3 8B")
