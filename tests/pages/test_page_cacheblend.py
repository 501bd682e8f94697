"""The CacheBlend page under AppTest: views, controls, shareable URLs and bad input."""

from __future__ import annotations

import pytest

from kvviz.cacheblend.blend import VARIANTS
from kvviz.cacheblend.model import WEIGHTS
from tests.conftest import assert_clean, open_page, shown

trained = pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")


def _chart_count(at) -> int:
    return len(at.get("plotly_chart"))


def _one_terms(at) -> bool:
    """The page defines its jargon in one "Terms" popover (a view's own used to repeat it)."""
    return [p.proto.popover.label for p in at.get("popover")].count("Terms") == 1


@trained
def test_every_view_renders_with_the_paper_table():
    at = open_page("cacheblend")
    assert_clean(at)
    assert at.title[0].value == "CacheBlend" and not at.error
    assert _chart_count(at) == 2  # token strip and deviation heatmap
    paper = at.table[-1].value
    paper = paper.reset_index() if "quantity" not in paper.columns else paper
    assert {"quantity", "paper", "this simulation"} <= set(paper.columns) and len(paper) == 9
    assert paper.loc[paper["quantity"].str.startswith("Full prefill"), "this simulation"].item() == "100.0%"
    assert _one_terms(at)

    at.segmented_control(key="cacheblend_view").set_value("Accuracy vs ratio").run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert {"CacheBlend", "Random selection", "Full reuse"} <= set(table["method"]) and 0.2 in set(table["ratio"])
    assert _one_terms(at)

    at.segmented_control(key="cacheblend_view").set_value("Loading controller").run()
    assert_clean(at)
    assert at.dataframe[0].value["picked r"].min() >= 0.15 and _one_terms(at)

    at.segmented_control(key="cacheblend_view").set_value("The model").run()
    assert_clean(at)
    assert _chart_count(at) == 1 and "Retraining is a command-line step" in at.caption[-1].value


@trained
def test_widget_changes_rerun_the_document_view():
    at = open_page("cacheblend")
    at.slider(key="cacheblend_chunk").set_value(3).run()
    at.selectbox(key="cacheblend_variant").set_value(VARIANTS["v_layer1"].label).run()
    at.number_input(key="cacheblend_seed").set_value(42).run()
    assert_clean(at)
    assert "Document 42" in [h.value for h in at.subheader][0]
    assert "one selection of r·N at layer 1 by V deviation" in at.caption[0].value


@trained
def test_url_query_parameters_open_the_same_view():
    at = open_page(
        "cacheblend",
        {
            "cacheblend_view": "Loading controller",
            "cacheblend_preset": "70B GQA",
            "cacheblend_context": "8192",
            "cacheblend_chunk": "3",
            "cacheblend_ratio": "0.3",
        },
    )
    assert_clean(at)
    assert at.segmented_control(key="cacheblend_view").value == "Loading controller"
    assert at.slider(key="cacheblend_chunk").value == 3 and at.slider(key="cacheblend_ratio").value == 0.3
    assert at.slider(key="cacheblend_context").value == 8192
    assert "70B" in at.get("plotly_chart")[0].proto.spec


@trained
def test_invalid_url_values_fall_back_to_defaults():
    at = open_page(
        "cacheblend",
        {
            "cacheblend_ratio": "7",
            "cacheblend_variant": "bogus",
            "cacheblend_chunk": "-3",
            "cacheblend_view": "nonsense",
        },
    )
    assert_clean(at)
    assert at.slider(key="cacheblend_ratio").value == 0.2 and at.slider(key="cacheblend_chunk").value == 5
    assert at.selectbox(key="cacheblend_variant").value == VARIANTS["paper"].label


def test_a_link_naming_the_token_selection_by_its_code_opens_it_in_words():
    at = open_page("cacheblend", {"cacheblend_variant": "k_layer1"})
    assert_clean(at)
    assert at.selectbox(key="cacheblend_variant").value == VARIANTS["k_layer1"].label
    assert at.query_params["cacheblend_variant"] == VARIANTS["k_layer1"].label


def test_missing_weights_show_how_to_retrain(monkeypatch, tmp_path):
    monkeypatch.setattr("kvviz.cacheblend.model.WEIGHTS", tmp_path / "gone.npz")
    at = open_page("cacheblend")
    assert_clean(at)
    assert at.error and "python -m kvviz.cacheblend.train" in shown(at.error[0].value)
