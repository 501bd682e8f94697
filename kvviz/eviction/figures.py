"""Figures of the Eviction page: hit ratio against capacity, and hit ratio over time at one capacity."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvviz.common.style import INK, color
from kvviz.eviction.curves import MOONCAKE_TABLE1, TIE
from kvviz.eviction.grid import BOUND, INFINITE, POLICIES, RELIABLE_ERROR
from kvviz.eviction.notes import LeadRun

CEILING_COLOR = "#6c8893"
DASH = {BOUND: "dash"}


PALETTE_INDEX = {"lru": 0, "s3fifo": 1, "lfu": 2, "length_aware": 3, "sieve": 4, "arc": 5, "fifo": 7}


def policy_color(policy: str) -> str:
    """One colour per policy, the same on every chart (Belady is ink-black: it is the bound)."""
    return INK if policy == BOUND else color(PALETTE_INDEX[policy])


def _label(policy: str) -> str:
    return POLICIES[policy].label


def sample_note(rate: float, lru_error: float | None, unreliable: Sequence[str] = ()) -> str:
    """What a sampled curve is, in one line: the rate, the error measured on LRU, and the policies
    whose measured error estimate says the rate is too low (``SampledCurve.unreliable``)."""
    measured = (
        f"; sampled LRU was off by at most {lru_error:.3f}, which corrects the others" if lru_error is not None else ""
    )
    flagged = (
        f"; not reliable at this rate (error estimate over {RELIABLE_ERROR:g}, raise the rate): "
        f"{', '.join(_label(p) for p in unreliable)}"
        if unreliable
        else ""
    )
    return f"SHARDS sample of {rate:.2%} of the blocks, LRU exact{measured}{flagged}"


def fig_hit_curve(
    curve: pd.DataFrame,
    *,
    prefix: bool = False,
    paper: bool = False,
    block_tokens: int | None = None,
    sample: str | None = None,
    runs: Sequence[LeadRun] = (),
) -> go.Figure:
    """Hit ratio against capacity (log x), one line per policy, Belady dashed as the bound and the
    infinite cache as the ceiling; with ``paper`` Mooncake v3 Table 1's points as open markers.
    ``sample`` (``sample_note``) marks a sampled curve in the title; capacities the sample cannot
    represent (a ``represented`` column) are drawn as open markers. ``runs``
    (``kvviz.eviction.notes.lead_runs``) ring the leader's points and name it above each run."""
    finite = curve[np.isfinite(curve["capacity"])]
    fig = go.Figure()
    order = [p for p in POLICIES if p in set(curve["policy"]) and p != BOUND] + (
        [BOUND] if BOUND in set(curve["policy"]) else []
    )
    for policy in order:
        rows = finite[finite["policy"] == policy].sort_values("capacity")
        bound = policy == BOUND
        shown = rows["represented"] if "represented" in rows else np.ones(len(rows), dtype=bool)
        fig.add_scatter(
            x=rows["capacity"],
            y=rows["hit_ratio"],
            mode="lines" if bound else "lines+markers",
            name=_label(policy),
            line=dict(color=policy_color(policy), dash=DASH.get(policy)),
            marker=dict(symbol=np.where(shown, "circle", "circle-open")),
            customdata=np.c_[rows["hits"], rows["accesses"]],
            hovertemplate=f"{_label(policy)}<br>%{{x:,}} blocks: %{{y:.3f}}"
            "<br>%{customdata[0]:,} of %{customdata[1]:,} accesses<extra></extra>",
        )
    ceiling = curve[curve["capacity"] == INFINITE]["hit_ratio"]
    if len(ceiling):
        fig.add_hline(
            y=float(ceiling.iloc[0]),
            line_dash="dot",
            line_color=CEILING_COLOR,
            annotation_text=f"infinite cache {float(ceiling.iloc[0]):.3f}",
            annotation_position="top left",
            annotation_font_color=CEILING_COLOR,
        )
    if paper:
        _add_paper_points(fig, finite["capacity"].min(), finite["capacity"].max())
    _mark_leaders(fig, finite, runs)
    unit = f" of {block_tokens} tokens" if block_tokens else ""
    ticks = _ladder(finite["capacity"].min(), finite["capacity"].max()) if len(finite) else []
    fig.update_xaxes(
        type="log",
        title_text=f"cache capacity (blocks{unit}, log scale)",
        tickvals=ticks or None,
        ticktext=[short_blocks(t) for t in ticks] or None,
    )
    top = float(max(curve["hit_ratio"].max() if len(curve) else 0, 0.05))
    if paper and len(finite):
        top = max(
            [
                top,
                *(
                    v
                    for row in MOONCAKE_TABLE1.values()
                    for c, v in row.items()
                    if finite["capacity"].min() <= c <= finite["capacity"].max()
                ),
            ]
        )
    fig.update_yaxes(
        title_text="prefix hit ratio" if prefix else "block hit ratio",
        range=[0, min(1.0, top * 1.12)],
        tickformat=".2f",
    )
    title = "Hit ratio against cache capacity" + (f"<br><sup>{sample}</sup>" if sample else "")
    fig.update_layout(
        title=title,
        height=520 if runs else 480,
        hovermode="closest",
        legend=dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02),
    )
    return fig


def _mark_leaders(fig: go.Figure, finite: pd.DataFrame, runs: Sequence[LeadRun]) -> None:
    """A ring on the leader's points and "<policy> leads" above the middle of each run (ties unmarked)."""
    first = True
    for run in runs:
        if run.policy == TIE:
            continue
        rows = finite[(finite["policy"] == run.policy) & finite["capacity"].between(run.low, run.high)]
        fig.add_scatter(
            x=rows["capacity"],
            y=rows["hit_ratio"],
            mode="markers",
            name="best online policy",
            legendgroup="leader",
            showlegend=first,
            hoverinfo="skip",
            marker=dict(symbol="circle-open", size=18, line_width=3, color=policy_color(run.policy)),
        )
        first = False
        middle = (math.log10(run.low) + math.log10(run.high)) / 2
        fig.add_annotation(
            x=middle,
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            showarrow=False,
            text=f"<b>{_label(run.policy)}</b> leads",
            font=dict(color=policy_color(run.policy)),
        )


def _ladder(low: float, high: float) -> list[int]:
    """Tick values 1, 2, 5 x 10^k inside [low, high] (decades only when the range is wide)."""
    steps = (1,) if high / max(low, 1) > 10**3.5 else (1, 2, 5)
    top = int(np.ceil(np.log10(max(high, 1)))) + 1
    return [m * 10**k for k in range(top) for m in steps if low <= m * 10**k <= high]


def short_blocks(blocks: int) -> str:
    """1, 20, 5k, 2M: capacity labels that stay short on an axis, a slider and in a URL."""
    for unit, size in (("M", 10**6), ("k", 10**3)):
        if blocks >= size and blocks % size == 0:
            return f"{blocks // size}{unit}"
    return f"{blocks:,}"


def _add_paper_points(fig: go.Figure, smallest: float, largest: float) -> None:
    """Table 1's points that fall inside the curve's capacity range."""
    for policy, row in MOONCAKE_TABLE1.items():
        caps = [c for c in row if smallest <= c <= largest]
        if not caps:
            continue
        fig.add_scatter(
            x=caps,
            y=[row[c] for c in caps],
            mode="markers",
            name=f"Mooncake: {_label(policy)}",
            legendgroup="paper",
            marker=dict(symbol="diamond-open", size=11, line_width=2, color=policy_color(policy)),
            hovertemplate=f"Mooncake v3 Table 1, {_label(policy)}<br>%{{x:,}} blocks: %{{y:.2f}}<extra></extra>",
        )


def rolling(windows: pd.DataFrame, width: int) -> pd.DataFrame:
    """Hit ratio over the last ``width`` windows (hits and accesses summed, so a quiet window
    weighs little): the over-time lines without the window-to-window noise. ``width`` 1 is raw."""
    hits = (windows["hit_ratio"].fillna(0) * windows["accesses"]).rolling(width, min_periods=1).sum()
    accesses = windows["accesses"].rolling(width, min_periods=1).sum()
    return windows.assign(hit_ratio=(hits / accesses.where(accesses > 0)).to_numpy(), accesses=accesses.to_numpy())


def fig_over_time(
    windows: Mapping[str, pd.DataFrame], capacity: float, *, prefix: bool = False, smooth: int = 1
) -> go.Figure:
    """Hit ratio per time window for each policy at one capacity (windows from ``Simulation.over_time``),
    each point the ``rolling`` ratio of the last ``smooth`` windows."""
    fig = go.Figure()
    for policy, frame in windows.items():
        frame = rolling(frame, smooth)
        fig.add_scatter(
            x=frame["time_s"],
            y=frame["hit_ratio"],
            mode="lines",
            name=_label(policy),
            line=dict(color=policy_color(policy), dash=DASH.get(policy)),
            customdata=frame["accesses"],
            hovertemplate=f"{_label(policy)}<br>t=%{{x:,.0f}} s: %{{y:.3f}}"
            "<br>%{customdata:,.0f} accesses in the last windows<extra></extra>",
        )
    fig.update_xaxes(title_text="time since first arrival (s)")
    fig.update_yaxes(title_text="prefix hit ratio" if prefix else "block hit ratio", range=[0, 1], tickformat=".1f")
    span = f", each point the last {smooth} windows" if smooth > 1 else ""
    fig.update_layout(
        title=f"Hit ratio over time at {capacity:,.0f} blocks{span}",
        height=400,
        hovermode="x unified",
        legend=dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02),
    )
    return fig


def curve_table(curve: pd.DataFrame) -> pd.DataFrame:
    """The curve as a wide table: one row per capacity (``∞`` last), one hit-ratio column per policy."""
    wide = curve.pivot(index="capacity", columns="policy", values="hit_ratio")
    wide = wide[[p for p in POLICIES if p in wide.columns]]
    wide.columns = [_label(p) for p in wide.columns]
    wide.index = ["∞" if c == INFINITE else f"{int(c):,}" for c in wide.index]
    wide.index.name = "capacity (blocks)"
    return wide.reset_index()
