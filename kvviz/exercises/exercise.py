"""What an exercise is: its question, the page and view that answer it, and how an answer is checked.

A numeric exercise names its inputs once, in ``compute``: a function that calls kvviz's own core (KV
bytes per token, the break-even bandwidth, chained block hashes, Little's law, Mooncake's Conductor,
Strata's scheduler, CacheBlend's controller and model) and returns every quantity the worked answer
quotes, by name. Each ``Part`` asks for one of them in a stated unit and says its tolerance; the checker
compares a student's number with that computed value, so the expected answer is never typed in by
hand. A discussion exercise has no parts: it carries the lecture's points instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kvviz.common.errors import InputError
from kvviz.common.numbers import readable


@dataclass(frozen=True)
class Part:
    """One number the student gives: ``key`` names it in the exercise's computed values."""

    key: str
    ask: str
    unit: str
    rel_tol: float = 0.05  # accepted relative error; 0 asks for the exact value (a count)

    @property
    def tolerance(self) -> str:
        """The tolerance in words, as the answer box says it."""
        return "exactly" if self.rel_tol == 0 else f"within {readable(100 * self.rel_tol)}%"


@dataclass(frozen=True)
class Exercise:
    """An exercise of a lecture, the page that answers it and the view's URL parameters there.

    ``worked`` is the worked answer with ``{name}`` for each computed value (written with
    ``kvviz.common.numbers.readable``); ``points`` are a discussion exercise's lecture points.
    """

    lecture: int
    number: int
    title: str
    question: str
    page: str
    params: Mapping[str, str]
    hint: str
    worked: str
    parts: tuple[Part, ...] = ()
    compute: Callable[[], dict[str, float]] | None = field(default=None, compare=False)
    points: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """The exercise's name in a link (``exercise=9.1``) and on the page."""
        return f"{self.lecture}.{self.number}"

    @property
    def discussion(self) -> bool:
        return not self.parts

    def values(self) -> dict[str, float]:
        """Every quantity the worked answer quotes, computed by kvviz from the exercise's inputs."""
        return _computed(self.compute) if self.compute else {}

    def worked_text(self) -> str:
        """The worked answer with this run's computed values written in."""
        return self.worked.format(**{k: readable(v) for k, v in self.values().items()})

    def part(self, key: str) -> Part:
        for p in self.parts:
            if p.key == key:
                return p
        raise KeyError(key)


@functools.cache
def _computed(compute: Callable[[], dict[str, float]]) -> dict[str, float]:
    """An exercise's values, computed once per process: its inputs are fixed."""
    return compute()


@dataclass(frozen=True)
class Verdict:
    """A checked answer: whether it is within the part's tolerance of kvviz's value, and what to say."""

    correct: bool
    expected: float
    message: str


def check(exercise: Exercise, key: str, answer: float) -> Verdict:
    """Check ``answer`` to part ``key`` against kvviz's own computation, within the part's tolerance."""
    part = exercise.part(key)
    expected = exercise.values()[key]
    if not math.isfinite(answer):
        raise InputError(f"an answer must be a finite number, got {answer}")
    ok = (
        answer == expected if part.rel_tol == 0 else math.isclose(answer, expected, rel_tol=part.rel_tol, abs_tol=1e-12)
    )
    if ok:
        return Verdict(True, expected, f"Right: kvviz computes {readable(expected)} {part.unit}.".replace(" .", "."))
    direction = "high" if answer > expected else "low"
    return Verdict(False, expected, f"Not yet: {readable(answer)} {part.unit} is too {direction}.".replace("  ", " "))


def by_id(exercises: tuple[Exercise, ...], name: str) -> Exercise:
    """The exercise a link names (``exercise=9.1``); a name that is none of them is refused, saying which exist."""
    for e in exercises:
        if e.id == name:
            return e
    known = ", ".join(e.id for e in exercises)
    raise InputError(f"the link names exercise '{name[:20]}', which does not exist; the exercises are {known}")
