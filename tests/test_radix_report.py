"""kvviz.radix_report: the radix page's marks, notes and paper rows follow the replay."""

from __future__ import annotations

from dataclasses import replace

from kvviz.radix_report import FIGURE_EVICTS, figure_steps, notice, paper_rows, step_marks, step_metrics
from kvviz.radix_scenarios import PRESETS, ReplayConfig, replay

SGLANG9 = ReplayConfig(**{**ReplayConfig().__dict__, **PRESETS["sglang9"].suggested})


def run(config: ReplayConfig = SGLANG9, snapshots=True):
    return replay(PRESETS["sglang9"].script(), config, snapshots=snapshots)


def test_the_figure_row_is_computed_from_the_simulation():
    rep, other = run(), run(replace(SGLANG9, deferral=False))
    assert figure_steps(rep) == [6, 7, 8, 9]
    row = next(r for r in paper_rows(rep, other, True) if "Fig. 3" in r["quantity"])
    assert row["paper"] == "(5), (8), (9)" and row["this simulation"].startswith("(6), (7), (8), (9)")
    assert row["status"] == "differs"
    assert not any("Fig. 3" in r["quantity"] for r in paper_rows(rep, other, False))


def test_no_capacity_reproduces_the_figure_with_these_prompts():
    """The page's note says so: after (5) the figure grows two few-shot branches without evicting."""
    script = PRESETS["sglang9"].script()
    found = [cap for cap in range(40, 201)
             if tuple(figure_steps(replay(script, replace(SGLANG9, device_capacity=cap), snapshots=False)))
             == FIGURE_EVICTS]
    assert found == []


def test_marks_and_metrics_of_an_evicting_step():
    rep, other = run(), run(replace(SGLANG9, deferral=False))
    marks = step_marks(rep, 7)
    assert list(marks.ghosts["tokens"]) == ["Assistant : Roses are red", "User : Write a poem .",
                                            "Assistant : I can help .", "What can you do ?", "A : 6 ."]
    assert marks.marks == {"split": set(), "loaded": set()}
    assert step_marks(rep, 3).marks["split"] == {5}
    cards = {label: value for label, value, _ in step_metrics(rep, other, 7)}
    assert cards == {"On GPU now": 46, "Cache hits this step": 8, "Evicted this step": 26, "Redundant so far": 0}
    assert any("evicts at steps 5, 6, 7, 8" in p for p in notice(rep, other))
