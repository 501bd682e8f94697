"""Rows of a "what the paper reports vs this simulation" table, each with a status computed here.

"Measured, not built in": a row says whether the simulation *agrees* with the paper or *differs*
only from numbers compared when the page runs (a relative tolerance, or a stated test such as
"correlation < −0.2"); a number that is fed to the simulation is an *input*, one fitted to the
paper is *calibrated*. Every row also says how its status was decided (``basis``), in a fixed
form that tests/common/test_paper_rows.py re-checks against the status.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from enum import Enum


class Status(str, Enum):
    AGREES = "agrees"
    DIFFERS = "differs"
    INPUT = "input"
    CALIBRATED = "calibrated"


COLUMNS = ("quantity", "paper", "this simulation", "status", "basis")
_DEVIATION = re.compile(r"^\|Δ\| = ([0-9.]+|inf)% of paper \(tolerance ([0-9.]+)%\)$")


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


def close(
    quantity: str, paper: str, sim: str, pairs: Iterable[tuple[float, float]] | tuple[float, float], rel_tol: float
) -> dict[str, str]:
    """A row comparing numbers: agrees if every (paper, simulation) pair is within ``rel_tol``."""
    pairs = [pairs] if isinstance(pairs, tuple) and not isinstance(pairs[0], tuple) else list(pairs)
    worst = _percent(max(deviation(float(p), float(s)) for p, s in pairs))
    st = Status.AGREES if worst <= round(100 * rel_tol, 6) else Status.DIFFERS
    shown = "inf" if math.isinf(worst) else f"{worst:g}"
    return _row(quantity, paper, sim, st, f"|Δ| = {shown}% of paper (tolerance {100 * rel_tol:g}%)")


def check(quantity: str, paper: str, sim: str, holds: bool, test: str) -> dict[str, str]:
    """A row whose agreement is a stated test on this run's numbers (``test`` says which)."""
    return _row(quantity, paper, sim, Status.AGREES if holds else Status.DIFFERS, f"test: {test}")


def in_range(
    quantity: str, paper: str, sim: str, value: float, low: float, high: float, rel_tol: float
) -> dict[str, str]:
    """A row that agrees when ``value`` lies in the paper's range [low, high] widened by ``rel_tol``."""
    lo, hi = low * (1 - rel_tol), high * (1 + rel_tol)
    return check(
        quantity,
        paper,
        sim,
        bool(lo <= value <= hi),
        f"{lo:.3g} ≤ {value:.3g} ≤ {hi:.3g} (the paper's {low:g}–{high:g} ± {rel_tol:.0%})",
    )


def within(
    quantity: str, paper: str, sim: str, pairs: Iterable[tuple[float, float]], tol: float, unit: str
) -> dict[str, str]:
    """A row that agrees when every (paper, simulation) pair differs by at most ``tol`` (absolute,
    in ``unit``)."""
    pairs = list(pairs)
    holds = all(abs(s - p) <= tol + 1e-12 for p, s in pairs)
    shown = " and ".join(f"|{s:.3g} − {p:.3g}| ≤ {tol:g}" for p, s in pairs)
    return check(quantity, paper, sim, holds, f"{shown} {unit}")


def given(quantity: str, paper: str, sim: str, why: str) -> dict[str, str]:
    """A row whose simulation value is an input (set from the paper, not produced by the run)."""
    return _row(quantity, paper, sim, Status.INPUT, f"input: {why}")


def calibrated(quantity: str, paper: str, sim: str, how: str) -> dict[str, str]:
    """A row whose simulation value was fitted to this paper number (it cannot disagree)."""
    return _row(quantity, paper, sim, Status.CALIBRATED, f"calibration: {how}")


def problems(rows: Iterable[dict]) -> list[str]:
    """What is wrong with a table's rows: a missing or unknown status, or a status its basis contradicts."""
    out = []
    for r in rows:
        name, st, basis = r.get("quantity", "?"), r.get("status"), str(r.get("basis") or "")
        if st not in {s.value for s in Status}:
            out.append(f"{name}: no computed status ({st!r})")
            continue
        m = _DEVIATION.match(basis)
        if m:
            within = float(m.group(1)) <= float(m.group(2)) if m.group(1) != "inf" else False
            if within != (st == Status.AGREES.value) or st not in (Status.AGREES.value, Status.DIFFERS.value):
                out.append(f"{name}: status {st!r} but {basis}")
        elif st in (Status.AGREES.value, Status.DIFFERS.value) and not basis.startswith("test: "):
            out.append(f"{name}: status {st!r} without a numeric comparison or a stated test")
        elif st == Status.INPUT.value and not basis.startswith("input: "):
            out.append(f"{name}: input without saying why")
        elif st == Status.CALIBRATED.value and not basis.startswith("calibration: "):
            out.append(f"{name}: calibrated without saying to what")
    return out
