"""AppTest: the Exercises page lists every exercise, and each exercise's address opens its page with the
exercise beside the view, its controls set, answers checked, the worked answer hidden until revealed."""

from __future__ import annotations

import pytest

from kvviz import exercises as ex
from tests.conftest import assert_clean, open_page, shown
from tests.pages.test_page_text import internal_names
from ui.exercises.panel import address

pytestmark = pytest.mark.shared_caches


def panel_title(at) -> list[str]:
    return [m.value.split(".**")[0] for m in at.markdown if m.value.startswith("**Exercise ")]


def test_the_exercises_page_links_every_exercise_of_both_lectures():
    at = open_page("exercises")
    assert_clean(at)
    links = at.get("page_link")
    assert len(links) >= 18
    shown = " ".join(link.proto.label for link in links)
    for e in ex.EXERCISES:
        assert f"Exercise {e.id} · {e.title}" in shown


@pytest.mark.parametrize("exercise", ex.EXERCISES, ids=lambda e: e.id)
def test_each_exercise_address_opens_its_page_with_the_exercise_beside_the_view(exercise):
    at = open_page(exercise.page, address(exercise))
    assert_clean(at)
    assert panel_title(at) == [f"**Exercise {exercise.id} · {exercise.title}"]
    assert len(at.text_input) == len(exercise.parts)
    assert at.toggle(key=f"kvviz_exercise_{exercise.id}_reveal").value is False
    assert not internal_names(at)  # the exercise speaks the reader's words too


@pytest.mark.parametrize("name", ["9.4", "27.7"])
def test_the_answer_or_the_lectures_points_stay_hidden_until_revealed(name):
    exercise = ex.exercise(name)
    at = open_page(exercise.page, address(exercise))
    toggle = at.toggle(key=f"kvviz_exercise_{exercise.id}_reveal")
    assert toggle.value is False
    hidden = exercise.worked_text() if not exercise.discussion else exercise.points[0]
    assert not [m for m in at.markdown if hidden in m.value]
    toggle.set_value(True).run()
    assert_clean(at)
    assert not internal_names(at)
    assert [m for m in at.markdown if hidden in m.value]


def test_the_view_is_set_by_the_address_and_a_typed_answer_is_checked():
    e = ex.exercise("9.1")
    at = open_page("ledger", address(e))
    assert at.selectbox(key="ledger_model").value == "Qwen2.5 14B"
    assert at.number_input(key="ledger_context").value == 8_000
    at.text_input(key="kvviz_exercise_9.1_breakeven").input("4.5").run()
    assert said(at, "Right: kvviz computes 4.48 GB/s.")
    at.text_input(key="kvviz_exercise_9.1_breakeven").input("9").run()
    assert said(at, "Not yet: 9 GB/s is too high. Answers within 5% of kvviz's value count.")
    at.text_input(key="kvviz_exercise_9.1_breakeven").input("fast").run()
    assert_clean(at)
    assert said(at, "'fast' is not a number")


def said(at, text: str) -> bool:
    return any(text in shown(m.value) for m in at.markdown)


def test_an_unknown_exercise_is_refused_in_one_message():
    at = open_page("ledger", {"exercise": "9.99"})
    assert_clean(at)
    assert shown(at.error[0].value).startswith("The link names exercise '9.99', which does not exist")
    assert not panel_title(at)


def test_an_exercise_opened_on_another_page_says_where_it_is_answered():
    at = open_page("strata", {"exercise": "9.1"})
    assert_clean(at)
    assert at.warning[0].value == "Exercise 9.1 is answered on the Where to keep KV page."
    assert not panel_title(at)
