"""Arrival times: which unit a number is in, epoch times rebased, and the ten-year span check.

Traces disagree on units (Mooncake: ms; Qwen-Bailian and vidur: seconds; some logs: µs or
epoch times), so kvviz never guesses silently: the unit comes from the format (or the reader's
choice), and when it was assumed, fractional values or an implausible span for that unit put a
note in the trace's warnings saying what was assumed and how to change it. A unit the reader chose,
or date-times (whose unit is in the text), leave no doubt and get no note. The note names the
command line's option; ``on_page`` rewords it for the page, which has a control instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import numpy as np

from kvviz.common.errors import InputError

YEAR_MS = 365.25 * 24 * 3600 * 1000
MAX_SPAN_MS = 10 * YEAR_MS
EPOCH_AFTER_MS = YEAR_MS  # a first arrival later than this is an absolute (epoch) time
MAX_RATE_PER_S = 20_000.0  # requests per second no single trace plausibly exceeds
MAX_TIME_MS = 1e18  # ±32 million years: any sum or difference of two stays finite and fits int64
HINT = "--time-unit"  # the command line's option; the page's control is PAGE_CONTROL, found at PAGE_PLACE
PAGE_CONTROL, PAGE_PLACE = "Time unit", " under “How to read the file”"
_CHOICE = re.compile("choose " + HINT + r" (ms|s|us)(?: or (ms|s|us))?")


class TimeUnit(Enum):
    MS = "ms"
    S = "s"
    US = "us"

    @property
    def to_ms(self) -> float:
        return {TimeUnit.MS: 1.0, TimeUnit.S: 1000.0, TimeUnit.US: 0.001}[self]

    @property
    def words(self) -> str:
        return {TimeUnit.MS: "milliseconds", TimeUnit.S: "seconds", TimeUnit.US: "microseconds"}[self]


def parse_unit(text: str) -> TimeUnit:
    try:
        return TimeUnit(text.strip().lower())
    except ValueError:
        raise InputError(f"time unit must be ms, s or us, got '{text[:20]}'", field="time-unit") from None


@dataclass(frozen=True)
class Arrivals:
    """Arrival times in whole ms from the trace's zero, and what was done to get them."""

    ms: np.ndarray
    notes: tuple[str, ...]
    warnings: tuple[str, ...]


def out_of_range(values: np.ndarray, unit: TimeUnit) -> np.ndarray:
    """Which times in ``unit`` lie beyond ±MAX_TIME_MS (or are NaN): converting them would overflow."""
    return ~(np.abs(values) <= MAX_TIME_MS / unit.to_ms)


def range_problem(value: float, unit: TimeUnit) -> str:
    """What is wrong with one time ``out_of_range`` found, in plain words."""
    return (
        f"{value:.3g} {unit.words} is out of range for a time (at most {MAX_TIME_MS / unit.to_ms:.0e} "
        f"{unit.words}, {MAX_TIME_MS / YEAR_MS / 1e6:,.0f} million years)"
    )


def on_page(text: str) -> str:
    """A note or warning worded for the page, which has a control where the command line has an
    option: "choose --time-unit s" becomes "set Time unit to s under “How to read the file”"."""
    text = _CHOICE.sub(lambda m: f"set {PAGE_CONTROL} to {' or '.join(filter(None, m.groups()))}{PAGE_PLACE}", text)
    return text.replace("with " + HINT, f"with the {PAGE_CONTROL} control{PAGE_PLACE}")


def to_ms(values: np.ndarray, lines: np.ndarray, unit: TimeUnit, *, chosen: bool, field: str) -> Arrivals:
    """Numbers in ``unit`` → int64 ms; epoch times rebased to the first request; span checked.

    ``values`` are finite and not ``out_of_range`` (ingest refuses the others by line). ``lines``
    gives each value's line for messages; ``chosen`` says whether the unit is certain (the user
    named it, or the times are date-times); otherwise the format's default was assumed, the notes
    say so, and the warnings say when the numbers look like another unit.
    """
    ms = values.astype(np.float64) * unit.to_ms
    how = f"times read as {unit.words}" + ("" if chosen else f" (assumed; change with {HINT})")
    notes = [how]
    if len(ms) == 0:
        return Arrivals(np.zeros(0, np.int64), tuple(notes), ())
    warnings = [] if chosen else _doubts(values, ms, unit)
    first = float(ms.min())
    if first > EPOCH_AFTER_MS:
        ms = ms - first
        notes.append(
            f"absolute (epoch) times: rebased so the first request is at 0 (it was {first / 1000:,.3f} s after 1970)"
        )
    check_span(ms, lines, field)
    return Arrivals(np.rint(ms).astype(np.int64), tuple(notes), tuple(warnings))


def _doubts(values: np.ndarray, ms: np.ndarray, unit: TimeUnit) -> list[str]:
    """Why an assumed ``unit`` may be wrong for these numbers: an epoch in another unit, fractions
    of a unit smaller than seconds, or an implausible rate or span."""
    doubts = _epoch_in_other_unit(float(values.min()), unit)
    if unit is not TimeUnit.S and bool(np.any(values != np.floor(values))):
        doubts.append(
            f"the times have fractions and were read as {unit.words} (rounded to whole ms); "
            f"if they are seconds, choose {HINT} s"
        )
    return doubts + _implausible(ms, unit)


def check_span(ms: np.ndarray, lines: np.ndarray, field: str) -> None:
    """Refuse a trace whose arrivals span more than ten years (after rebasing)."""
    if len(ms) == 0:
        return
    low, high = int(np.argmin(ms)), int(np.argmax(ms))
    span = float(ms[high] - ms[low])
    if span > MAX_SPAN_MS:
        raise InputError(
            f"{span / YEAR_MS:,.0f} years after the first request (line {int(lines[low])}); "
            "a trace may span at most ten years",
            line=int(lines[high]),
            field=field,
        )


_EPOCH_MAGNITUDE = {TimeUnit.S: 1e9, TimeUnit.MS: 1e12, TimeUnit.US: 1e15}  # 2001..2099 spans x1..x4.1


def _epoch_in_other_unit(first: float, unit: TimeUnit) -> list[str]:
    for other, low in _EPOCH_MAGNITUDE.items():
        if other is not unit and low <= first <= 4.1 * low:
            return [
                f"the first time, {first:,.0f}, looks like an epoch time in {other.words} but was read as "
                f"{unit.words}; if so, choose {HINT} {other.value}"
            ]
    return []


def _implausible(ms: np.ndarray, unit: TimeUnit) -> list[str]:
    span_s = float(ms.max() - ms.min()) / 1000
    n = len(ms)
    if n >= 100 and n / max(span_s, 1e-9) > MAX_RATE_PER_S:
        return [
            f"{n:,} requests in {span_s:,.3g} s read as {unit.words} is implausibly fast "
            f"(over {MAX_RATE_PER_S:,.0f}/s); if the times are seconds, choose {HINT} s"
        ]
    if span_s > 2 * YEAR_MS / 1000:
        return [
            f"the trace spans {span_s / (YEAR_MS / 1000):,.1f} years read as {unit.words}; "
            f"if the times are in a smaller unit, choose {HINT} ms or us"
        ]
    return []
