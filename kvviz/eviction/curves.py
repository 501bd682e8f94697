"""A sweep's counts read as a hit curve: its table and CSV, who wins where, and Mooncake's Table 1 beside it.

Nothing here replays a trace (``kvviz.eviction.replay`` does), and pandas (and, through the paper
rows, plotly) is imported only by the functions that build a DataFrame or grade Table 1:
``counts_csv`` is the ``hitcurve`` command's exact path, which needs neither.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kvviz.eviction.grid import BOUND, INFINITE, ONLINE, POLICIES, format_capacity

if TYPE_CHECKING:
    import pandas as pd

CURVE_COLUMNS = ("policy", "capacity", "hits", "accesses", "hit_ratio")
TIE = "tie"  # every online policy leads alike


@dataclass(frozen=True)
class Count:
    """One (policy, capacity) of a sweep: its hits in both counting modes."""

    policy: str
    capacity: float | int
    accesses: int
    hits: int
    prefix_hits: int


def curve_of(swept: pd.DataFrame, prefix: bool = False) -> pd.DataFrame:
    """A sweep as a hit curve: ``policy, capacity, hits, accesses, hit_ratio`` in one counting mode."""
    import pandas as pd

    hits = swept["prefix_hits" if prefix else "hits"]
    return pd.DataFrame(
        {
            "policy": swept["policy"],
            "capacity": swept["capacity"],
            "hits": hits,
            "accesses": swept["accesses"],
            "hit_ratio": hits / swept["accesses"],
        }
    )


SAMPLED_COLUMNS = ("represented", "rate", "error_estimate")
"""The columns a sampled curve's CSV adds (``kvviz.eviction.shards.SampledCurve.table``): whether the sample can stand
for the capacity (``kvviz.eviction.shards``: at least 100 sampled blocks, 2,000 for SIEVE), the rate, and
the policy's measured error estimate. A capacity not represented is still printed, marked false."""


def curve_csv(curve: pd.DataFrame, gib_per_block: float | None = None) -> str:
    """The curve as CSV with header ``policy,capacity,hits,accesses,hit_ratio``; then ``capacity_gib``
    (the KV of that many blocks) when ``gib_per_block`` is given, and ``SAMPLED_COLUMNS`` when the
    curve was sampled (it has a ``rate`` column)."""
    sampled = "rate" in curve
    header = (
        *CURVE_COLUMNS,
        *(("capacity_gib",) if gib_per_block is not None else ()),
        *(SAMPLED_COLUMNS if sampled else ()),
    )
    lines = [",".join(header)]
    for row in curve.itertuples(index=False):
        cells = [_row(row.policy, row.capacity, row.hits, row.accesses, row.hit_ratio)]
        if gib_per_block is not None:
            cells.append("inf" if row.capacity == INFINITE else f"{row.capacity * gib_per_block:.4f}")
        if sampled:
            cells.append(f"{str(bool(row.represented)).lower()},{row.rate:.6g},{row.error_estimate:.6f}")
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def counts_csv(rows: Iterable[Count], prefix: bool = False) -> str:
    """``counts`` as the CSV ``curve_csv`` gives for the same curve, in one counting mode."""
    lines = [",".join(CURVE_COLUMNS)]
    for r in rows:
        hits = r.prefix_hits if prefix else r.hits
        lines.append(_row(r.policy, r.capacity, hits, r.accesses, hits / r.accesses))
    return "\n".join(lines) + "\n"


def _row(policy: str, capacity: float, hits: int, accesses: int, ratio: float) -> str:
    return f"{policy},{format_capacity(capacity)},{hits},{accesses},{ratio:.6f}"


def nice_window(span_s: float, windows: int = 40) -> float:
    """A round window length (1, 2 or 5 × 10^k seconds) giving about ``windows`` windows."""
    if span_s <= 0:
        return 1.0
    raw = span_s / windows
    exp = 10 ** math.floor(math.log10(raw))
    return float(next(m * exp for m in (1, 2, 5, 10) if m * exp >= raw))


def winners(curve: pd.DataFrame, policies: Sequence[str] = ONLINE) -> pd.DataFrame:
    """For each capacity, the online policy with the most hits (first listed wins a tie)."""
    online = curve[curve["policy"].isin(policies)]
    rank = {name: i for i, name in enumerate(policies)}
    online = online.assign(_rank=online["policy"].map(rank)).sort_values(
        ["capacity", "hit_ratio", "_rank"], ascending=[True, False, True]
    )
    return online.groupby("capacity", sort=True).head(1).drop(columns="_rank").reset_index(drop=True)


# Mooncake v3 (arXiv 2407.00079) §4.2, Table 1: block hit ratio of one global cache pool replaying
# Mooncake's one-hour trace of 23,608 requests (512-token blocks), by policy and capacity.
MOONCAKE_TABLE1: dict[str, dict[float, float]] = {
    "lru": {1000: 0.30, 10000: 0.40, 30000: 0.48, 50000: 0.50, 100000: 0.51, INFINITE: 0.51},
    "lfu": {1000: 0.30, 10000: 0.35, 30000: 0.43, 50000: 0.49, 100000: 0.51, INFINITE: 0.51},
    "length_aware": {1000: 0.30, 10000: 0.35, 30000: 0.42, 50000: 0.48, 100000: 0.50, INFINITE: 0.51},
}
TABLE1_CAPACITIES: tuple[float, ...] = tuple(MOONCAKE_TABLE1["lru"])
TABLE1_BLOCK_TOKENS = 512
TABLE1_TOLERANCE = 0.10  # Table 1 prints two decimals; a tenth of the paper's value is "the same shape"


def paper_rows(curve: pd.DataFrame, block_size: int, graded: bool) -> list[dict[str, str]]:
    """Mooncake's Table 1 beside this trace's curve at the same capacities, with a status each.

    ``curve`` must hold lru, lfu and length_aware at ``TABLE1_CAPACITIES``. One row per capacity
    (``kvviz.common.paper`` columns): the paper's and this trace's LRU / LFU / LengthAware hit
    ratios and the best of the three in each. Only Mooncake's own trace (``graded``) in the paper's
    512-token blocks is compared: it *agrees* when all three are within ``TABLE1_TOLERANCE`` of the
    paper's. Another trace, or other blocks (the same count is then another memory size), is shown
    beside the paper's numbers, not graded.
    """
    from kvviz.common import paper

    policies = tuple(MOONCAKE_TABLE1)
    at = curve.set_index(["policy", "capacity"])["hit_ratio"]
    why = _not_comparable(block_size, graded)
    rows = []
    for cap in TABLE1_CAPACITIES:
        reported = [MOONCAKE_TABLE1[p][cap] for p in policies]
        here = [float(at[(p, cap)]) for p in policies]
        cells = (
            f"hit ratio, {'∞' if cap == INFINITE else f'{int(cap):,}'} blocks (LRU / LFU / LengthAware)",
            " / ".join(f"{v:.2f}" for v in reported) + f" (best: {_best(policies, reported)})",
            " / ".join(f"{v:.2f}" for v in here) + f" (best: {_best(policies, here)})",
        )
        rows.append(
            paper.beside(*cells, why) if why else paper.close(*cells, list(zip(reported, here)), TABLE1_TOLERANCE)
        )
    return rows


def _not_comparable(block_size: int, graded: bool) -> str | None:
    """Why Table 1 cannot grade this curve, or None when it can."""
    if block_size != TABLE1_BLOCK_TOKENS:
        return (
            f"Table 1 counts {TABLE1_BLOCK_TOKENS}-token blocks and these hold {block_size:,} tokens, so the same "
            f"count is {block_size / TABLE1_BLOCK_TOKENS:g}× the memory"
        )
    return None if graded else "another trace than the one Table 1 replays"


def _best(policies: Sequence[str], values: Sequence[float]) -> str:
    top = max(values)
    names = [POLICIES[p].label for p, v in zip(policies, values) if round(v, 2) == round(top, 2)]
    return TIE if len(names) == len(policies) else " = ".join(names)


@dataclass(frozen=True)
class Findings:
    """What a hit curve says, in numbers: who wins where, the gap to OPT, where policies stop mattering."""

    leaders: tuple[tuple[float, str, float], ...]  # (capacity, best online policy or TIE, hit ratio) at low/mid/high
    lead_changes: int  # how often the best online policy changes along the curve
    widest_gap: tuple[float, float]  # (capacity, Belady minus the best online hit ratio)
    ceiling: float  # the infinite-cache hit ratio
    converged_at: float | None  # first capacity where every policy is within 0.005 of it


def findings(curve: pd.DataFrame, policies: Sequence[str]) -> Findings:
    """Summarise a curve that holds ``policies``, ``belady`` and the ``INFINITE`` capacity."""
    finite = curve[np.isfinite(curve["capacity"])]
    best = winners(finite, policies)
    picks = sorted({0, len(best) // 2, len(best) - 1}) if len(best) else []
    spread = finite[finite["policy"].isin(policies)].groupby("capacity")["hit_ratio"].agg(np.ptp)
    leaders = tuple(
        (float(c), TIE if len(policies) > 1 and spread[c] == 0 else str(p), float(r))
        for c, p, r in (best.iloc[i][["capacity", "policy", "hit_ratio"]] for i in picks)
    )
    changes = int((best["policy"] != best["policy"].shift()).sum() - 1) if len(best) else 0
    bound = finite[finite["policy"] == BOUND].set_index("capacity")["hit_ratio"]
    gaps = [(float(c), float(bound.get(c, r) - r)) for c, r in zip(best["capacity"], best["hit_ratio"])]
    ceiling = float(curve[curve["capacity"] == INFINITE]["hit_ratio"].iloc[0])
    worst = finite[finite["policy"].isin(policies)].groupby("capacity")["hit_ratio"].min()
    close = worst[worst >= ceiling - 0.005]
    return Findings(
        leaders,
        max(changes, 0),
        max(gaps, key=lambda g: g[1]) if gaps else (math.nan, 0.0),
        ceiling,
        float(close.index[0]) if len(close) else None,
    )
