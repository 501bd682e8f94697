"""Work budgets: a bound on a simulation's work, estimated from its inputs and checked before it runs.

A link or a CLI call can ask any simulation for any amount of work (a cluster of 60 minutes at 4×
load over five seeds, a 32-layer codec study of 4K tokens). Every simulation that can be asked for
more than an interactive amount estimates its ``Cost`` from its inputs alone, before it allocates
or loops: pages ask for a click above ``CONFIRM_S`` and everyone is refused above ``LIMIT_S``, with
a message naming the knob to turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.common.errors import InputError

CONFIRM_S = 5.0
"""Estimated CPU seconds above which a page shows the estimate and waits for a click."""
LIMIT_S = 300.0
"""Estimated CPU seconds above which a simulation refuses to start (pages and CLI alike)."""


@dataclass(frozen=True)
class Cost:
    """The estimated work of one simulation run.

    ``units`` counts the work in the mechanism's own terms (``unit`` names them: events, encoded
    values, block accesses); ``seconds`` is that count at a measured rate on this 2-core machine;
    ``knob`` names the input that reduces it, for the message.
    """

    what: str
    units: float
    unit: str
    seconds: float
    knob: str

    def describe(self) -> str:
        return f"{self.what}: about {self.units:,.0f} {self.unit}, ~{self.seconds:,.0f} CPU s"


def cost(what: str, units: float, unit: str, per_second: float, knob: str) -> Cost:
    """A Cost from a unit count and a measured rate (units per CPU second)."""
    return Cost(what, float(units), unit, float(units) / per_second, knob)


def needs_confirmation(c: Cost) -> bool:
    """Whether a page should ask before running this (long, but within the limit)."""
    return CONFIRM_S < c.seconds <= LIMIT_S


def check(c: Cost, limit_s: float = LIMIT_S) -> None:
    """Refuse work over the limit, before it starts, naming the knob that reduces it."""
    if c.seconds > limit_s:
        raise InputError(f"{c.describe()}, over the limit of {limit_s:,.0f} s; reduce {c.knob}")
