"""Rows of a "what the paper reports vs this simulation" table, each with a status computed here.

"Measured, not built in": a row says whether the simulation *agrees* with the paper or *differs*
only from numbers compared when the page runs (a relative tolerance, a range, or a stated
condition); a number that is fed to the simulation is an *input*, one fitted to the paper is
*calibrated*; a number from something else than what the paper measured is shown *beside* it, not
compared. Every row also says in words how its status was decided (``basis``: "off by 4% from
the paper's 3.15, within the 15% allowed"; "equals the paper's 256"; "5.1 is outside the paper's
range 2.67–4.73, even with 10% leeway"; "needs …: not met"), in the numbers its columns show, and
``problems`` re-checks each basis against its status, so a basis is always true of its row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from enum import Enum

from kvviz.common.numbers import readable


class Status(str, Enum):
    AGREES = "agrees"
    DIFFERS = "differs"
    INPUT = "input"
    CALIBRATED = "calibrated"
    BESIDE = "not compared"


COLUMNS = ("quantity", "paper", "this simulation", "status", "basis")
_AGREES_WHEN = (  # (how a basis is written, the word in it that says the row agrees)
    (re.compile(r"^off by (\S+) from the paper's .+, (within|more than) the (\S+) allowed(?: \(.+\))?$"), "within"),
    (re.compile(r"^needs .+: ()(met|not met)$"), "met"),
    (re.compile(r"^\S+ is ()(inside|outside) the paper's range .+$"), "inside"),
    (re.compile(r"^()(equals) the paper's .+$"), "equals"),
)
NUMBER = re.compile(r"[+\-−]?\d[\d,]*(?:\.\d+)?%?")


def deviation(paper: float, sim: float) -> float:
    """|sim − paper| ÷ |paper| (inf when the paper's number is 0 and the simulation's is not, or
    either is not a number)."""
    if math.isnan(paper) or math.isnan(sim):
        return math.inf
    if paper == sim:
        return 0.0
    return abs(sim - paper) / abs(paper) if paper else math.inf


def status(paper: float, sim: float, rel_tol: float) -> Status:
    """AGREES if ``sim`` is within ``rel_tol`` (a share, 0.05 = 5%) of ``paper``, else DIFFERS."""
    return Status.AGREES if _percent(deviation(paper, sim)) <= round(100 * rel_tol, 6) else Status.DIFFERS


def _percent(share: float) -> float:
    """A deviation in percent, rounded up to 0.01% (the shown value decides, so a re-check agrees)."""
    return share if math.isinf(share) else math.ceil(round(share * 1e4, 6)) / 100


def _row(quantity: str, paper: str, sim: str, st: Status, basis: str) -> dict[str, str]:
    return dict(zip(COLUMNS, (quantity, paper, sim, st.value, basis), strict=True))


def shown(value: float, cell: str) -> tuple[str, float] | None:
    """How a table cell writes ``value``: the number in ``cell`` that is ``value`` at the cell's own
    rounding (18% for 0.18187, "1,024" for 1024.0), and what that number is; None if none is."""
    for m in NUMBER.finditer(cell):
        text = m.group()
        digits = text.replace(",", "").replace("−", "-").rstrip("%")
        decimals = len(digits.partition(".")[2]) + (2 if text.endswith("%") else 0)
        number = float(digits) / (100 if text.endswith("%") else 1)
        if not math.isnan(value) and round(value, decimals) == round(number, decimals):
            return text, number
    return None


def _as_shown(p: float, s: float, paper: str, sim: str) -> tuple[str, float, float]:
    """The paper's number as its column writes it, and the pair to compare: the numbers the columns
    show when both are found there (so the words agree with what a reader sees), else the exact ones."""
    ref, got = shown(p, paper), shown(s, sim)
    if ref and ref[0].endswith("%"):
        text = f"{ref[0]} (a relative gap)"
    else:
        text = ref[0] if ref else readable(p)
    return (text, ref[1], got[1]) if ref and got else (text, p, s)


def _equals(refs: list[str]) -> str:
    """The basis of an exact match: the paper's numbers, named when there are a few."""
    if len(refs) <= 3:
        return "equals the paper's " + " and ".join(dict.fromkeys(refs))
    return f"equals all {len(refs)} of the paper's numbers"


def close(
    quantity: str, paper: str, sim: str, pairs: Iterable[tuple[float, float]] | tuple[float, float], rel_tol: float
) -> dict[str, str]:
    """A row comparing numbers: agrees if every (paper, simulation) pair is within ``rel_tol``.

    Its basis speaks of the numbers in the paper and simulation columns as they are written there
    (18%, not 0.18187), and an exact match says so."""
    pairs = [pairs] if isinstance(pairs, tuple) and not isinstance(pairs[0], tuple) else list(pairs)
    seen = [_as_shown(float(p), float(s), paper, sim) for p, s in pairs]
    worst, ref = max((_percent(deviation(p, s)), text) for text, p, s in seen)
    allowed = round(100 * rel_tol, 6)
    st = Status.AGREES if worst <= allowed else Status.DIFFERS
    if worst == 0:
        return _row(quantity, paper, sim, st, _equals([text for text, _, _ in seen]))
    of = f"the paper's {ref}" + ("" if len(pairs) == 1 else f" (the farthest of {len(pairs)})")
    verdict = "within" if st is Status.AGREES else "more than"
    return _row(
        quantity,
        paper,
        sim,
        st,
        f"off by {'∞' if math.isinf(worst) else readable(worst, 6)}% from {of}, {verdict} the "
        f"{readable(allowed, 6)}% allowed",
    )


def check(quantity: str, paper: str, sim: str, holds: bool, condition: str) -> dict[str, str]:
    """A row that agrees when a stated condition on this run's numbers holds (``condition`` says
    which, in words: "every variant within −7% to −3%")."""
    st = Status.AGREES if holds else Status.DIFFERS
    return _row(quantity, paper, sim, st, f"needs {condition}: {'met' if holds else 'not met'}")


def in_range(
    quantity: str, paper: str, sim: str, value: float, low: float, high: float, rel_tol: float
) -> dict[str, str]:
    """A row that agrees when ``value`` lies in the paper's range [low, high] widened by ``rel_tol``."""
    holds = bool(low * (1 - rel_tol) <= value <= high * (1 + rel_tol))
    span = f"the paper's range {readable(low, 6)}–{readable(high, 6)}"
    basis = (
        f"{readable(value)} is inside {span}" + ("" if low <= value <= high else f" widened by {rel_tol:.0%}")
        if holds
        else f"{readable(value)} is outside {span}, even with {rel_tol:.0%} leeway"
    )
    return _row(quantity, paper, sim, Status.AGREES if holds else Status.DIFFERS, basis)


def within(
    quantity: str, paper: str, sim: str, pairs: Iterable[tuple[float, float]], tol: float, unit: str
) -> dict[str, str]:
    """A row that agrees when every (paper, simulation) pair differs by at most ``tol`` (absolute,
    in ``unit``)."""
    pairs = list(pairs)
    gap, ref = max((abs(s - p), p) for p, s in pairs)
    holds = gap <= tol + 1e-12
    if gap == 0:
        return _row(quantity, paper, sim, Status.AGREES, _equals([readable(p) for p, _ in pairs]))
    of = f"the paper's {readable(ref)}" + ("" if len(pairs) == 1 else f" (the farthest of {len(pairs)})")
    verdict = "within" if holds else "more than"
    basis = f"off by {readable(gap)} from {of}, {verdict} the {readable(tol, 6)} allowed" + (
        f" ({unit})" if unit else ""
    )
    return _row(quantity, paper, sim, Status.AGREES if holds else Status.DIFFERS, basis)


def given(quantity: str, paper: str, sim: str, why: str) -> dict[str, str]:
    """A row whose simulation value is an input (set from the paper, not produced by the run)."""
    return _row(quantity, paper, sim, Status.INPUT, f"input: {why}")


def beside(quantity: str, paper: str, sim: str, why: str) -> dict[str, str]:
    """A row that shows a number beside the paper's without grading it (the paper measured something else)."""
    return _row(quantity, paper, sim, Status.BESIDE, f"not compared: {why}")


def calibrated(quantity: str, paper: str, sim: str, how: str) -> dict[str, str]:
    """A row whose simulation value was fitted to this paper number (it cannot disagree)."""
    return _row(quantity, paper, sim, Status.CALIBRATED, f"calibration: {how}")


def _consistent(off: str, verdict: str, allowed: str = "") -> bool:
    """Whether "off by ``off``" and "``verdict`` the ``allowed``" agree (true when there are no numbers)."""
    if not off:
        return True
    within = off != "∞%" and float(off.rstrip("%")) <= float(allowed.rstrip("%"))
    return within == (verdict == "within")


def problems(rows: Iterable[dict]) -> list[str]:
    """What is wrong with a table's rows: a missing or unknown status, or a status its basis contradicts."""
    out = []
    for r in rows:
        name, st, basis = r.get("quantity", "?"), r.get("status"), str(r.get("basis") or "")
        if st not in {s.value for s in Status}:
            out.append(f"{name}: no computed status ({st!r})")
        elif st in (Status.AGREES.value, Status.DIFFERS.value):
            found = next(((m.groups(), yes) for form, yes in _AGREES_WHEN if (m := form.match(basis))), None)
            if found is None:
                out.append(f"{name}: status {st!r} without a comparison or a condition it was decided by")
            elif (found[0][1] == found[1]) != (st == Status.AGREES.value) or not _consistent(*found[0]):
                out.append(f"{name}: status {st!r} but {basis}")
        elif st == Status.INPUT.value and not basis.startswith("input: "):
            out.append(f"{name}: input without saying why")
        elif st == Status.CALIBRATED.value and not basis.startswith("calibration: "):
            out.append(f"{name}: calibrated without saying to what")
        elif st == Status.BESIDE.value and not basis.startswith("not compared: "):
            out.append(f"{name}: not compared without saying why")
    return out
