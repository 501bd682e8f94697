"""Exercises: both lectures' exercises, each linked to the page and view that answer it."""

from kvviz.exercises import EXERCISES
from ui.exercises import panel as exercises
from ui.kit import frame

frame.header(
    "exercises",
    f"The {len(EXERCISES)} exercises that end lectures 9 and 27. Each link opens the page that answers it, its "
    "controls set, with the exercise beside the view: type a number to have it checked against kvviz's own "
    "computation, ask for a hint, or reveal the worked answer.",
)
exercises.listing()
