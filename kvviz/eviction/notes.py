"""Who leads a hit curve, where, and the trace facts that say why.

The Eviction page marks the best online policy along the curve and explains its lead with
numbers measured on the replayed trace, not with folklore: how many blocks are used once (the
one-shot accesses that pollute an LRU or FIFO cache and that scan-resistant policies — S3-FIFO's
small queue, ARC's seen-once list, SIEVE's visited bit — evict first; Yang et al., SOSP'23 §2),
how concentrated reuse is on a few hot blocks (what frequency, LFU and Mooncake v3 §4.2's
LengthAware, keys on), and how far apart reuses are (LRU stack distances: an LRU cache of C
blocks hits exactly the re-accesses at distance below C; Mattson et al. 1970).

A note claims only what the numbers show: a lead is stated with its size, a tie below
``TIE_MARGIN`` is called a tie, and a trace fact is offered as "consistent with" a lead, never as
its proof. Two policies with exactly the same hits at every capacity look like a bug to a student;
``twin_notes`` says so and, for LFU and SIEVE, why (both first evict the oldest block not hit since
it came in). Pure numpy/pandas: the page draws, this module counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from kvviz.eviction.curves import TIE
from kvviz.eviction.grid import POLICIES

if TYPE_CHECKING:
    from kvviz.eviction.replay import Replay
    from kvviz.eviction.shards import Flag

TIE_MARGIN = 0.001  # hit-ratio differences below this are a tie (a tenth of a percent of accesses)
RECENCY = ("lru",)
FREQUENCY = ("lfu", "length_aware")
SCAN_RESISTANT = ("s3fifo", "arc", "sieve")


@dataclass(frozen=True)
class LeadRun:
    """Consecutive capacities where one online policy leads (or all tie within ``TIE_MARGIN``)."""

    policy: str  # a policy name, or TIE
    low: float  # first capacity of the run (blocks)
    high: float  # last capacity of the run (blocks)
    margin: float  # largest lead over the runner-up inside the run (0 for a tie)
    margin_at: float  # the capacity of that largest lead


def leaders(curve: pd.DataFrame, policies: Sequence[str]) -> pd.DataFrame:
    """Per finite capacity: the best online policy (``TIE`` when the top two are within
    ``TIE_MARGIN``), its hit ratio and its lead over the runner-up. Columns ``capacity``,
    ``policy``, ``hit_ratio``, ``lead``. One policy alone always leads."""
    online = curve[curve["policy"].isin(policies) & np.isfinite(curve["capacity"])]
    wide = online.pivot(index="capacity", columns="policy", values="hit_ratio").sort_index()
    wide = wide[[p for p in policies if p in wide.columns]]
    ratios = wide.to_numpy(float)
    if ratios.shape[1] == 0:
        return pd.DataFrame(columns=["capacity", "policy", "hit_ratio", "lead"])
    order = np.argsort(-ratios, axis=1, kind="stable")  # first listed wins an exact tie
    rows = np.arange(len(ratios))
    top = ratios[rows, order[:, 0]]
    lead = top - ratios[rows, order[:, 1]] if ratios.shape[1] > 1 else np.zeros(len(ratios))
    names = np.asarray(wide.columns, dtype=object)[order[:, 0]]
    tied = (lead < TIE_MARGIN) & (ratios.shape[1] > 1)
    return pd.DataFrame(
        {"capacity": wide.index.to_numpy(float), "policy": np.where(tied, TIE, names), "hit_ratio": top, "lead": lead}
    )


def lead_runs(curve: pd.DataFrame, policies: Sequence[str]) -> tuple[LeadRun, ...]:
    """The curve's capacities grouped into runs of one leader, in capacity order."""
    best = leaders(curve, policies)
    runs: list[LeadRun] = []
    for row in best.itertuples(index=False):
        last = runs[-1] if runs else None
        if last is not None and last.policy == row.policy:
            bigger = row.lead > last.margin
            runs[-1] = LeadRun(
                last.policy,
                last.low,
                row.capacity,
                max(last.margin, row.lead),
                row.capacity if bigger else last.margin_at,
            )
        else:
            runs.append(LeadRun(row.policy, row.capacity, row.capacity, row.lead, row.capacity))
    return tuple(runs)


@dataclass(frozen=True)
class TraceFacts:
    """What a block-access sequence says about recency, frequency and one-shot pollution."""

    accesses: int
    distinct: int
    one_shot_blocks: float  # share of distinct blocks accessed exactly once
    first_accesses: float  # share of accesses that are a block's first (misses for every cache)
    hot_share: float  # share of re-accesses that go to the top 1% of blocks
    median_reuse: float | None  # median LRU stack distance of the re-accesses (None: nothing is reused)
    distances: np.ndarray  # LRU stack distances of the re-accesses, sorted

    def reused_within(self, capacity: float) -> float:
        """Share of re-accesses whose stack distance is below ``capacity``: what LRU hits of them."""
        if not len(self.distances):
            return 0.0
        return float(np.searchsorted(self.distances, capacity, side="left") / len(self.distances))


def trace_facts(replay: Replay) -> TraceFacts:
    """Count the facts on a prepared replay (its stack distances are computed once and kept)."""
    counts = np.bincount(replay.ids, minlength=replay.n_ids)
    used = counts[counts > 0]
    reuses = used - 1
    total_reuses = int(reuses.sum())
    top = max(1, math.ceil(len(used) / 100))
    hot = float(np.sort(reuses)[::-1][:top].sum() / total_reuses) if total_reuses else 0.0
    d = replay.stack_distances
    finite = np.sort(d[d >= 0])  # a first access has distance -1
    return TraceFacts(
        accesses=replay.accesses,
        distinct=len(used),
        one_shot_blocks=float((used == 1).mean()) if len(used) else 0.0,
        first_accesses=float(len(used) / replay.accesses) if replay.accesses else 0.0,
        hot_share=hot,
        median_reuse=float(np.median(finite)) if len(finite) else None,
        distances=finite,
    )


def _label(policy: str) -> str:
    return "every policy (a tie)" if policy == TIE else POLICIES[policy].label


def _span(run: LeadRun) -> str:
    return f"{int(run.low):,} blocks" if run.low == run.high else f"{int(run.low):,}–{int(run.high):,} blocks"


def _ratio(curve: pd.DataFrame, policy: str, capacity: float) -> float | None:
    rows = curve[(curve["policy"] == policy) & (curve["capacity"] == capacity)]
    return float(rows["hit_ratio"].iloc[0]) if len(rows) else None


def _why(run: LeadRun, curve: pd.DataFrame, facts: TraceFacts) -> str | None:
    """One "why" sentence for a run, from the trace's facts, only when the leader beats LRU there."""
    cap = run.margin_at
    lru, lead = _ratio(curve, "lru", cap), _ratio(curve, run.policy, cap)
    name = _label(run.policy)
    if run.policy in RECENCY:
        within = facts.reused_within(cap)
        return (
            (
                f"**{name}** leads at {_span(run)}: reuse here is recent — {within:.0%} of the re-accesses come "
                f"back within {int(cap):,} other distinct blocks (median reuse distance "
                f"{facts.median_reuse:,.0f}), and recency keeps exactly those."
            )
            if facts.median_reuse is not None
            else None
        )
    if lru is None or lead is None or lead - lru < TIE_MARGIN:
        return None
    gain = f"{lead - lru:+.3f} over LRU at {int(cap):,} blocks"
    if run.policy in FREQUENCY:
        return (
            f"**{name}** leads at {_span(run)} ({gain}): consistent with concentrated reuse — the top 1% of "
            f"blocks take {facts.hot_share:.0%} of the re-accesses, and counting hits keeps them while LRU lets "
            f"the {1 - facts.reused_within(cap):.0%} of re-accesses farther apart than {int(cap):,} blocks go."
        )
    if run.policy in SCAN_RESISTANT:
        return (
            f"**{name}** leads at {_span(run)} ({gain}): consistent with one-shot pollution — "
            f"{facts.one_shot_blocks:.0%} of the distinct blocks are never used again, and {name} evicts a "
            "block not yet reused before one that was (scan resistance), where LRU puts every new block at "
            "the head of its queue."
        )
    return f"**{name}** leads at {_span(run)} ({gain})."


NEVER_HIT_FIRST = frozenset({"lfu", "sieve"})
"""Policies whose first victim is the oldest cached block not hit since it came in (LFU: the oldest of
frequency 1; SIEVE: the hand's next unvisited block). They choose differently only when a block that
has been hit must go."""


def twins(curve: pd.DataFrame, policies: Sequence[str]) -> list[tuple[str, ...]]:
    """Groups of two or more policies (in ``policies`` order) with the same hits at every finite capacity."""
    finite = curve[curve["policy"].isin(policies) & np.isfinite(curve["capacity"])]
    hits = finite.pivot(index="capacity", columns="policy", values="hits")
    groups: dict[tuple, list[str]] = {}
    for p in (p for p in policies if p in hits.columns):
        groups.setdefault(tuple(hits[p].to_numpy()), []).append(p)
    return [tuple(g) for g in groups.values() if len(g) > 1]


def twin_notes(curve: pd.DataFrame, policies: Sequence[str], facts: TraceFacts) -> list[str]:
    """For each group of policies with identical hits on this trace: say so, and why when it is LFU and SIEVE."""
    notes = []
    for group in twins(curve, policies):
        names = " and ".join(f"**{POLICIES[p].label}**" for p in group)
        capacities = curve.loc[np.isfinite(curve["capacity"]), "capacity"].nunique()
        note = f"{names} hit exactly alike on this trace: the same number of hits at all {capacities} capacities."
        if set(group) == NEVER_HIT_FIRST:
            reused = round(facts.distinct * (1 - facts.one_shot_blocks))
            note += (
                " That is expected, not a bug: both evict first the oldest cached block that has not been hit "
                "since it came in, and they choose differently only when every such block is gone and a block "
                f"that has been hit must go. On this trace {facts.one_shot_blocks:.0%} of the "
                f"{facts.distinct:,} distinct blocks are used only once (only {reused:,} are ever reused): "
                "never-hit blocks are plentiful, and the equal hits show the two never parted ways in a way "
                "that changed a hit."
            )
        notes.append(note)
    return notes


def why_notes(curve: pd.DataFrame, policies: Sequence[str], facts: TraceFacts) -> list[str]:
    """The leader along the curve in one sentence, the trace's facts, and a "why" per lead run."""
    runs = lead_runs(curve, policies)
    if not runs:
        return []
    where = "; ".join(
        f"**{_label(r.policy)}** at {_span(r)}"
        + (f" (by up to {r.margin:.3f})" if r.policy != TIE and r.margin > 0 else "")
        for r in runs
    )
    notes = [f"Best online policy along the curve: {where}. Differences under {TIE_MARGIN} count as a tie."]
    notes.append(
        f"This trace: {facts.first_accesses:.0%} of the {facts.accesses:,} accesses are a block's first "
        f"(they miss in every cache), {facts.one_shot_blocks:.0%} of the {facts.distinct:,} distinct "
        f"blocks are used only once, and the top 1% of blocks take {facts.hot_share:.0%} of the "
        "re-accesses"
        + (
            f"; half the re-accesses come back within {facts.median_reuse:,.0f} other "
            "blocks (median LRU stack distance)."
            if facts.median_reuse is not None
            else "."
        )
    )
    seen = set()
    for run in sorted((r for r in runs if r.policy != TIE), key=lambda r: -r.margin):
        if run.policy in seen:
            continue
        seen.add(run.policy)
        sentence = _why(run, curve, facts)
        if sentence:
            notes.append(sentence)
    return notes + twin_notes(curve, policies, facts)


def leader_at(curve: pd.DataFrame, policies: Sequence[str], capacity: float) -> str:
    """The best online policy at one capacity (``TIE`` within ``TIE_MARGIN``)."""
    best = leaders(curve, policies)
    rows = best[best["capacity"] == capacity]
    return str(rows["policy"].iloc[0]) if len(rows) else TIE


def sampling_advice(flags: Sequence[Flag], limit: float) -> str:
    """One sentence per flagged policy of a sampled curve: how far off its sample may be, where,
    and the rate that would hold it within ``limit`` (``kvviz.eviction.shards.Flag``)."""
    sentences = []
    for flag in flags:
        caps = [f"{int(c):,}" for c in flag.capacities]
        where = ", ".join(caps) if len(caps) <= 2 else f"{len(caps)} capacities from {caps[0]} to {caps[-1]}"
        way_out = (
            "only the exact replay holds it"
            if flag.suggested_rate >= 1
            else f"a sample of {flag.suggested_rate * 100:.2g}% would hold it"
        )
        sentences.append(
            f"{POLICIES[flag.policy].label} may be off by up to {flag.bound:.3f} at {where} blocks, over {limit:g}: "
            f"{way_out}."
        )
    return " ".join(sentences)
