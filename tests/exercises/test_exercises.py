"""Each exercise's checker accepts the lecture's worked answer and refuses a wrong one.

The expected numbers are the lecture notes' own worked answers (lecture 9 §9 and lecture 27 §10), or,
where the notes give none, the rule worked in plain Python here; kvviz computes them through its core
(``kvviz.exercises``), so a change in the core that moved an answer fails here.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kvviz import exercises as ex
from kvviz.common.catalog import page_info
from kvviz.common.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

LECTURE_ANSWERS: dict[str, dict[str, float]] = {
    "9.1": {"breakeven": 4.5, "ssd_ms": 196_608 * 8_000 / 5.6e9 * 1e3, "mla_breakeven": 1.6},
    "9.2": {"a_blocks": 8, "b_reuse": 8, "e_reuse": 2},
    "9.3": {"fp16_mb": 1_260, "fp16_s": 3.36, "q8_s": 1.68, "cg_s": 0.48, "cg_10_s": 0.14},
    "9.4": {"one": 16, "one_share": 25, "two": 32, "kernel": 128},
    "9.5": {"a_local": 2.1, "a_fetch": 0.728, "to_b": 3.2},
    "9.6": {"times_without": 3, "saved": 4},
    "9.8": {"kv_gib": 131e9 / 2**30, "load_s": 2.6},  # the notes' 131 GB
    "27.1": {"kib": 320, "ctx_gib": 10.7e9 / 2**30},  # the notes' 10.7 GB
    "27.2": {"gbit_s": 14.4},
    "27.4": {"bits": 1.40, "fixed_bits": 3},
    "27.6": {"cut_six": 0, "reuse_accuracy": 100},
    "27.8": {"ratio": 50, "ttft_ms": 320},
}
NUMERIC = [e for e in ex.EXERCISES if not e.discussion]


def test_both_lectures_every_exercise_once():
    assert [e.id for e in ex.EXERCISES] == [f"9.{i}" for i in range(1, 9)] + [f"27.{i}" for i in range(1, 11)]


def test_every_numeric_exercise_has_the_lectures_answers():
    assert sorted(LECTURE_ANSWERS) == sorted(e.id for e in NUMERIC)
    for e in NUMERIC:
        assert sorted(LECTURE_ANSWERS[e.id]) == sorted(p.key for p in e.parts), e.id


@pytest.mark.parametrize("exercise", NUMERIC, ids=lambda e: e.id)
def test_the_checker_accepts_the_worked_answer_and_refuses_a_wrong_one(exercise):
    for key, answer in LECTURE_ANSWERS[exercise.id].items():
        assert ex.check(exercise, key, answer).correct, (key, answer, exercise.values()[key])
        wrong = answer + 1 if exercise.part(key).rel_tol == 0 else answer * 1.5
        verdict = ex.check(exercise, key, wrong)
        assert not verdict.correct and "too high" in verdict.message, key


@pytest.mark.parametrize("exercise", ex.EXERCISES, ids=lambda e: e.id)
def test_every_exercise_opens_a_page_with_that_pages_controls(exercise):
    assert (ROOT / "pages" / f"{exercise.page}.py").exists()
    page_info(exercise.page)
    prefix = {"prefix_cache": "prefix_"}.get(exercise.page, f"{exercise.page}_")
    assert all(key.startswith(prefix) for key in exercise.params), exercise.params
    assert exercise.hint and exercise.question


@pytest.mark.parametrize("exercise", ex.EXERCISES, ids=lambda e: e.id)
def test_the_worked_answer_quotes_computed_numbers_in_plain_notation(exercise):
    text = exercise.worked_text()
    assert "{" not in text and "e+" not in text and "e-0" not in text
    assert exercise.points or not exercise.discussion


def test_a_discussion_exercise_has_the_lectures_points_and_no_answer_box():
    for e in ex.EXERCISES:
        if e.discussion:
            assert len(e.points) >= 2 and not e.values(), e.id


def test_an_unknown_exercise_is_refused_naming_the_ones_that_exist():
    with pytest.raises(InputError, match=r"exercise '9\.9', which does not exist; the exercises are 9\.1, 9\.2"):
        ex.exercise("9.9")
    with pytest.raises(InputError, match=r"'x{20}',"):
        ex.exercise("x" * 500)


def test_an_answer_that_is_not_finite_is_refused():
    with pytest.raises(InputError, match="finite"):
        ex.check(ex.exercise("9.1"), "breakeven", math.inf)


def test_an_exact_part_wants_the_exact_count():
    e = ex.exercise("9.2")
    assert e.part("a_blocks").tolerance == "exactly"
    assert not ex.check(e, "a_blocks", 8.2).correct
    assert ex.exercise("9.1").part("breakeven").tolerance == "within 5%"
