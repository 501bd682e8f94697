"""Work budgets: a bound on a simulation's work, estimated from its inputs and checked before it runs.

A link or a CLI call can ask any simulation for any amount of work (a cluster of 60 minutes at 4×
load over five seeds, a 32-layer codec study of 4K tokens). Every simulation that can be asked for
more than an interactive amount estimates its ``Cost`` from its inputs alone, before it allocates
or loops: pages ask for a click above ``CONFIRM_S`` and everyone is refused above ``LIMIT_S``, with
a message naming the knob to turn.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

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


GIB = 2**30


def free_memory() -> int | None:
    """Bytes this process may still allocate: the system's available memory, less where a control
    group's limit or an address-space limit (``ulimit -v``) is nearer; None when none can be read."""
    found = []
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        found.append(int(info["MemAvailable"].split()[0]) * 1024)
    except (OSError, KeyError, ValueError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[0])
            found.append(soft - pages * resource.getpagesize())
        except (OSError, ValueError):
            pass
    return max(0, min(found)) if found else None


def check_memory(need: int, what: str, advice: str) -> None:
    """Refuse work that needs more memory than is free, before it allocates, in one line naming
    what needs it and what to do (``advice``)."""
    free = free_memory()
    if free is not None and need > free:
        raise InputError(
            f"{what} needs about {need / GIB:,.1f} GiB of memory and {free / GIB:,.1f} GiB is free here; {advice}"
        )
