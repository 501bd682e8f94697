"""The lectures' exercises beside the live view: the panel every page draws when its link names one, and the list.

A link such as ``/ledger?exercise=9.1&ledger_view=...`` opens the page that answers exercise 9.1 with its
controls set for it; ``ui.kit.frame.header`` calls ``panel`` on every page, so no page has exercise code of
its own. The panel shows the question, a box per numeric part (checked against kvviz's own computation,
its tolerance said), a hint, and the worked answer or the lecture's points hidden until revealed — in
presenter mode at projector size like the rest of the page. The content is ``kvviz.exercises``.
"""

from __future__ import annotations

import streamlit as st

from kvviz import exercises as ex
from kvviz.common.catalog import page_info
from kvviz.common.errors import InputError
from ui.kit.text import plain

PARAM = "exercise"
"""The URL parameter naming the exercise shown beside a page's view."""
PER_ROW = 3
"""Answer boxes side by side, so the panel leaves the view in the first screen."""


def address(exercise: ex.Exercise) -> dict[str, str]:
    """The URL parameters of an exercise's own address: its name and the view's controls."""
    return {PARAM: exercise.id, **exercise.params}


def link(exercise: ex.Exercise, label: str | None = None) -> None:
    """A link that opens the exercise's page with the exercise beside the view it sets."""
    title = f"Exercise {exercise.id} · {exercise.title} — on {page_info(exercise.page).title}"
    st.page_link(
        f"pages/{exercise.page}.py", label=label or title, icon=":material/school:", query_params=address(exercise)
    )


def panel(stem: str) -> None:
    """The exercise the URL names, beside page ``stem``'s view; nothing when it names none.

    A name that is no exercise is refused with the list of names; an exercise answered on another page
    says which, with a link there.
    """
    name = st.query_params.get(PARAM)
    if name is None:
        return
    try:
        exercise = ex.exercise(name)
    except InputError as exc:
        message = str(exc)
        st.error(plain(f"{message[0].upper()}{message[1:]}.", 500), icon=":material/error:")
        st.page_link("pages/exercises.py", label="All exercises", icon=":material/school:")
        return
    if exercise.page != stem:
        st.warning(f"Exercise {exercise.id} is answered on the {page_info(exercise.page).title} page.")
        link(exercise)
        return
    with st.container(border=True, key="kvviz_exercise_panel"):
        st.markdown(f"**Exercise {exercise.id} · {exercise.title}.** {exercise.question}")
        for row in range(0, len(exercise.parts), PER_ROW):
            for column, part in zip(
                st.columns(PER_ROW, vertical_alignment="bottom"), exercise.parts[row : row + PER_ROW], strict=False
            ):
                with column:
                    answer_box(exercise, part)
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            with st.popover("Hint", icon=":material/lightbulb:"):
                st.markdown(exercise.hint)
            label = "Show the lecture's points" if exercise.discussion else "Show the worked answer"
            shown = st.toggle(label, key=f"kvviz_exercise_{exercise.id}_reveal")
        if shown:
            reveal(exercise)


def answer_box(exercise: ex.Exercise, part: ex.Part) -> None:
    """One numeric part: a box for the answer, then one line saying whether it is right."""
    unit = f" ({part.unit})" if part.unit else ""
    text = st.text_input(
        f"{part.ask}{unit}",
        key=f"kvviz_exercise_{exercise.id}_{part.key}",
        placeholder="a number",
        help=f"Checked against kvviz's own computation from the exercise's inputs, {part.tolerance}.",
    )
    if not text.strip():
        return
    value = parse_number(text)
    if value is None:
        st.markdown(f":red[:material/error: '{plain(text, 40)}' is not a number: type digits, such as 4.5 or 1,260.]")
        return
    verdict = ex.check(exercise, part.key, value)
    if verdict.correct:
        st.markdown(f":green[:material/check_circle: {verdict.message}]")
    else:
        st.markdown(f":orange[:material/cancel: {verdict.message} Answers {part.tolerance} of kvviz's value count.]")


def parse_number(text: str) -> float | None:
    """A number typed by a student: ``1,260``, ``4.5``, ``0.5 `` or ``3e9``; None if it is not one (or not finite)."""
    try:
        value = float(text.strip().replace(",", "").replace("_", "").replace(" ", ""))
    except ValueError:
        return None
    return value if abs(value) != float("inf") and value == value else None


def reveal(exercise: ex.Exercise) -> None:
    """The worked answer and the lecture's points, once the toggle shows them."""
    if not exercise.discussion:
        st.markdown(exercise.worked_text())
    if exercise.points:
        st.markdown("\n".join(f"- {p}" for p in exercise.points))


def listing() -> None:
    """Every exercise of both lectures, by lecture: its link, and its question."""
    for lecture, title in ex.LECTURES.items():
        st.subheader(title)
        for exercise in (e for e in ex.EXERCISES if e.lecture == lecture):
            with st.container(border=True):
                link(exercise)
                kind = (
                    "Discussion: the lecture's points beside the view."
                    if exercise.discussion
                    else f"{len(exercise.parts)} number{'s' if len(exercise.parts) > 1 else ''} to find."
                )
                st.markdown(f"{exercise.question}\n\n*{kind}*")
