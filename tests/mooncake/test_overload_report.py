"""The overload view's paper rows on a hand-made summary table whose every comparison is known."""

from __future__ import annotations

import pandas as pd

from kvviz.common import paper
from kvviz.mooncake.overload.report import paper_rows

# Each policy rejects exactly Table 3's count of 23,000; early rejection cuts the wasted prefill by the
# lecture notes' third (300 → 200 s) and doubles the swing; the oracle loses too few completions (−2.7%)
# for the notes' −3% to −7%.
TABLE = pd.DataFrame(
    {
        "policy": ["baseline", "early", "predict", "oracle"],
        "arrived": [23_000.0] * 4,
        "rejected": [4183.0, 3771.0, 3589.0, 3000.0],
        "completed": [18_817.0, 18_000.0, 18_200.0, 18_300.0],
        "wasted_prefill_s": [300.0, 200.0, 150.0, 100.0],
        "prefill_load_std": [0.1, 0.2, 0.15, 0.12],
        "anti_phase_corr": [-0.1, -0.5, -0.3, -0.2],
    }
)


def test_paper_rows_compare_table3_and_the_lecture_notes_with_computed_statuses():
    rows = paper_rows(TABLE)
    assert isinstance(rows, list) and all(set(map(type, r.values())) == {str} for r in rows)
    assert paper.problems(rows) == []
    assert [(r["quantity"], r["this simulation"], r["status"]) for r in rows] == [
        ("Rejected requests: Baseline", "4,183 of 23,000 (18%)", "agrees"),
        ("Rejected requests: Early rejection", "3,771 of 23,000 (16%)", "agrees"),
        ("Rejected requests: Early rejection + prediction", "3,589 of 23,000 (16%)", "agrees"),
        ("Rejected vs baseline: Early rejection", "-9.8%", "agrees"),
        ("Rejected vs baseline: Early rejection + prediction", "-14.2%", "agrees"),
        ("Wasted prefill, early rejection vs baseline (course notes: CS349D lecture 9)", "-33.3%", "agrees"),
        ("Prefill-load swing (std), early rejection vs baseline (course notes: CS349D lecture 9)", "×2.0", "agrees"),
        ("Prefill vs decode load under early rejection (Fig. 9)", "correlation -0.50 (baseline -0.10)", "agrees"),
        (
            "Completed, early-rejection variants vs baseline (course notes: CS349D lecture 9)",
            "-4.3% / -3.3% / -2.7%",
            "differs",
        ),
    ]


def test_without_a_baseline_only_the_absolute_rejections_are_compared():
    rows = paper_rows(TABLE[TABLE.policy != "baseline"])
    assert [r["quantity"] for r in rows] == [
        "Rejected requests: Early rejection",
        "Rejected requests: Early rejection + prediction",
    ]
