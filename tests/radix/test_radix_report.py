"""kvviz.radix.report: the radix page's marks, notes and paper rows follow the replay."""

from __future__ import annotations

from dataclasses import replace

from kvviz.radix.presets import PRESETS
from kvviz.radix.replay import ReplayConfig, replay
from kvviz.radix.report import FIGURE_EVICTS, figure_steps, notice, paper_rows, step_marks, step_metrics

SGLANG9 = ReplayConfig(**{**ReplayConfig().__dict__, **PRESETS["sglang9"].suggested})


def run(config: ReplayConfig = SGLANG9, snapshots=True):
    return replay(PRESETS["sglang9"].script(), config, snapshots=snapshots)


def test_the_figure_row_is_computed_from_the_simulation():
    rep, other = run(), run(replace(SGLANG9, deferral=False))
    assert figure_steps(rep) == [5, 8, 9]
    row = next(r for r in paper_rows(rep, other, True) if "Fig. 3" in r["quantity"])
    assert row["paper"] == "(5), (8), (9)" and row["this simulation"].startswith("(5), (8), (9)")
    assert row["status"] == "agrees"
    row = next(
        r
        for r in paper_rows(run(replace(SGLANG9, device_capacity=100), False), other, True)
        if "Fig. 3" in r["quantity"]
    )
    assert row["this simulation"].startswith("(5), (6), (7), (8), (9)") and row["status"] == "differs"
    assert not any("Fig. 3" in r["quantity"] for r in paper_rows(rep, other, False))


def test_the_preset_evicts_the_figures_nodes():
    """Fig. 3's caption: (5) node c (the first session's last turn: here its reply; SGLang inserts a
    prompt and its output as two nodes), (8) g and h (the whole second session), (9) i, k and l (the
    few-shot queries other than j, the one sampled). The capacities that give the figure's steps are
    a narrow band, and 120 is the one that also evicts exactly these nodes."""
    rep = run()
    assert [list(step_marks(rep, k - 1).ghosts["tokens"]) for k in FIGURE_EVICTS] == [
        ["Assistant : Sure … pm sharp ."],
        [
            "Assistant : Roses … I have .",
            "User : Write a poem .",
            "Assistant : I … with you .",
            "What can you … team today ?",
        ],
        ["A : 6 .", "3+3 ?", "A : 7 .", "5+2 ?", "A : 10 .", "9+1 ?"],
    ]
    script = PRESETS["sglang9"].script()
    assert [
        cap
        for cap in range(40, 201)
        if tuple(figure_steps(replay(script, replace(SGLANG9, device_capacity=cap), snapshots=False))) == FIGURE_EVICTS
    ] == [120, 121, 122, 123]


def test_marks_and_metrics_of_an_evicting_step():
    rep, other = run(), run(replace(SGLANG9, deferral=False))
    marks = step_marks(rep, 7)
    assert list(marks.ghosts["tokens"]) == [
        "Assistant : Roses … I have .",
        "User : Write a poem .",
        "Assistant : I … with you .",
        "What can you … team today ?",
    ]
    assert marks.marks == {"split": set(), "loaded": set()}
    assert step_marks(rep, 3).marks["split"] == {5}
    cards = {label: value for label, value, _ in step_metrics(rep, other, 7)}
    assert cards == {"On GPU now": 62, "Cache hits this step": 20, "Evicted this step": 58, "Redundant so far": 0}
    assert any("evicts at steps 4, 7, 8" in p for p in notice(rep, other))


def test_the_delay_hit_row_is_graded_only_where_deferral_acts():
    """On the default script no request waits behind more than the threshold of tokens in flight, so
    deferral on and off are the same run (6 → 6 redundant tokens): that is shown, not called a miss."""
    rep, other = run(), run(replace(SGLANG9, deferral=False))
    row = next(r for r in paper_rows(rep, other, True) if "Delay-hit" in r["quantity"])
    assert (row["this simulation"], row["status"]) == ("redundant prefill 6 → 6 tokens (off → on)", "not compared")
    assert "no request here waits behind more than 100 tokens being computed" in row["basis"]
    delay = PRESETS["delay"].script()
    on, off = (replay(delay, ReplayConfig(device_capacity=1024, host_capacity=2048, deferral=d)) for d in (True, False))
    row = next(r for r in paper_rows(on, off, False) if "Delay-hit" in r["quantity"])
    assert (row["this simulation"], row["status"]) == ("redundant prefill 800 → 0 tokens (off → on)", "agrees")
