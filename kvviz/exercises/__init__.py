"""The lectures' exercises, live: each question with the page and view that answer it, and a checker.

Lecture 9 (context management: Mooncake, CacheGen, Strata) ends with eight exercises and lecture 27
(KV cache as a new AI memory: CacheGen, CacheBlend, LMCache) with ten. Each is an ``Exercise``
(``kvviz.exercises.exercise``): the question in English, the page whose view answers it and the URL
parameters that set that view, a hint, and either numeric parts checked against kvviz's own computation
from the exercise's inputs, or the lecture's points for a discussion.
"""

from kvviz.exercises.exercise import Exercise, Part, Verdict, by_id, check
from kvviz.exercises.lecture9 import EXERCISES as LECTURE_9
from kvviz.exercises.lecture27 import EXERCISES as LECTURE_27

EXERCISES: tuple[Exercise, ...] = LECTURE_9 + LECTURE_27
LECTURES: dict[int, str] = {
    9: "Lecture 9 · Context management: Mooncake, CacheGen and Strata",
    27: "Lecture 27 · KV cache as a new AI memory: CacheGen, CacheBlend and LMCache",
}


def exercise(name: str) -> Exercise:
    """The exercise a link names (``exercise=9.1``); an unknown name is refused with the list of names."""
    return by_id(EXERCISES, name)


__all__ = ["EXERCISES", "LECTURES", "Exercise", "Part", "Verdict", "check", "exercise"]
