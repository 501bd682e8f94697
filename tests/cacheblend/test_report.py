"""The CacheBlend page's "What to notice" and paper note say what this run's numbers say."""

from __future__ import annotations

from kvviz.cacheblend import report

NUMBERS = {
    "full_prefill_all": 1.0,
    "full_reuse_cut": 0.03,
    "full_reuse_uncut": 1.0,
    "cacheblend_cut": 0.9325,
    "random_cut": 0.23,
    "short_cacheblend_cut": 0.7638,
    "top_share": 0.69,
    "top_share_min": 0.34,
    "top_share_max": 0.78,
    "start_share_first": 0.78,
    "start_share_last": 0.24,
    "spearman_min": 0.39,
    "spearman_max": 0.89,
    "catch_first": 0.9875,
}


def test_notices_quote_the_numbers_and_compare_with_the_notes():
    reuse, pick, spread, short, _ = report.notices(NUMBERS)
    assert "answers 3.0% of them (below chance, 8.3%;" in reuse and "and 100.0% of the uncut ones" in reuse
    assert "holds 98.8% of the cut values: at r = 20% CacheBlend answers 93.2% of the cut records" in pick
    assert "random recompute of as many tokens 23.0%" in pick
    assert spread.startswith(
        "Layer by layer, the top 15% of tokens carry 34.0%–78.0% of the deviation, less concentrated than"
    )
    assert "start a chunk carry 78.0% of layer 1's deviation and 24.0% of the last layer's: deeper down, most" in spread
    assert "at chunk length 3, 20% answers 76.4% of the cut records" in short
    close = report.notices(NUMBERS | {"full_reuse_cut": 0.09, "top_share_min": 0.97, "top_share_max": 0.97})
    assert (
        "(about chance, 8.3%;" in close[0]
        and "carry 97.0% of the deviation, as concentrated as the notes' 98.0%" in close[2]
    )
    assert "deeper down" not in report.notices(NUMBERS | {"start_share_last": 0.7})[2]


def test_paper_note_names_only_the_differences_this_run_has():
    note = report.paper_note(200, NUMBERS)
    assert "below* chance under full reuse" in note and "the top 15% of tokens carry 69.0% of a layer's" in note
    assert "so 20% recovers less than the notes' 99.4%" in note and "as low as 0.39" in note
    good = report.paper_note(200, NUMBERS | {"full_reuse_cut": 0.09, "top_share": 0.97, "spearman_min": 0.9})
    assert "Where they differ" not in good
    spread = report.paper_note(200, NUMBERS | {"cacheblend_cut": 1.0})
    assert "carry 69.0% of a layer's, on average)" in spread and "recovers less" not in spread
