"""The Eviction page's cached work and its "What to notice" list.

Each cached function is keyed on the trace's fingerprint (``key``) and plain inputs; the trace
itself travels unhashed (``_trace``), so a warm rerun hashes a few strings and numbers.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kvviz.common import budget
from kvviz.eviction.curves import TABLE1_CAPACITIES, Findings
from kvviz.eviction.grid import BOUND, MIN_SAMPLED_BY_POLICY, MIN_SAMPLED_CAPACITY, POLICIES, RELIABLE_ERROR
from kvviz.eviction.notes import TraceFacts, sampling_advice, trace_facts, why_notes
from kvviz.eviction.replay import replay_of, simulate, sweep
from kvviz.eviction.shards import REPLICAS, SampledCurve, sampled_curve
from ui.kit.work import stepped

STEPS_PER_S = 1.2e8
"""(block access x capacity) steps one core replays per CPU second through LRU, FIFO, LFU, SIEVE,
ARC or S3-FIFO (measured 113M-529M on a 50,000-request synthetic trace at 21 capacities, LRU fastest)."""
SLOWER = {"length_aware": 6.0, BOUND: 1.3}  # measured 20M and 94M steps per CPU second there
TABLE1_POLICIES = ("lru", "lfu", "length_aware")  # the policies the paper table replays


def sweep_cost(accesses: int, policies: list[str], capacities: int, rate: float | None) -> budget.Cost:
    """The page's replays before they run: every policy at every capacity, and the paper table's
    three policies at its capacities. A SHARDS sample replays each policy on ``REPLICAS`` samples
    and one of twice the rate, beside one exact LRU pass."""
    weight = sum(SLOWER.get(p, 1.0) for p in policies)
    if rate is None:
        steps = accesses * capacities * weight
    else:
        steps = accesses * capacities * (weight * rate * (REPLICAS + 2) + 1)
    steps += accesses * len(TABLE1_CAPACITIES) * sum(SLOWER.get(p, 1.0) for p in TABLE1_POLICIES)
    return budget.cost(
        "replaying every policy at every capacity",
        steps,
        "block-access steps",
        STEPS_PER_S,
        "the points on the curve, the policies, or the trace's requests",
    )


@st.cache_resource(max_entries=4, ttl="1h", show_spinner="Preparing the block sequence…")
def prepared(key: str, _trace):
    """Dense ids, next uses and depths of one trace, shared by every policy and capacity."""
    return replay_of(_trace)


@st.cache_data(max_entries=64, ttl="1h", show_spinner=False)
def policy_sweep(key: str, policy: str, capacities: tuple, _trace) -> pd.DataFrame:
    """One policy at every capacity (cached on the trace's fingerprint and plain inputs)."""
    return sweep(prepared(key, _trace), [policy], capacities)


@st.cache_data(max_entries=32, ttl="1h", show_spinner=False)
def over_time(key: str, policy: str, capacity: float, prefix: bool, _trace) -> pd.DataFrame:
    return simulate(prepared(key, _trace), policy, capacity).over_time(prefix=prefix)


@st.cache_data(max_entries=16, ttl="1h", show_spinner="Replaying a SHARDS sample of the trace…")
def sampled(key: str, policies: tuple, capacities: tuple, rate: float, _trace):
    """Every policy on a ``rate`` sample, LRU exact (cached on the fingerprint and plain inputs)."""
    return sampled_curve(_trace, policies, capacities, rate)


def sample_caption(estimate: SampledCurve, note: str) -> str:
    """The sampled curve's caption: its note, the policies whose bound is over the limit with the
    sample that would hold them, and what the open markers mean."""
    advice = sampling_advice(estimate.flags, RELIABLE_ERROR)
    return (
        f"{note}. {advice + ' ' if advice else ''}Open markers: capacities under {MIN_SAMPLED_CAPACITY} sampled "
        f"blocks ({MIN_SAMPLED_BY_POLICY['sieve']:,} for SIEVE), where the estimate is unreliable. "
        "The documentation lists each policy's measured error."
    )


@st.cache_data(max_entries=16, ttl="1h", show_spinner=False)
def facts_of(key: str, _trace) -> TraceFacts:
    """One-shot blocks, hot blocks and reuse distances of the replayed trace."""
    return trace_facts(prepared(key, _trace))


def run_sweep(key: str, names: list[str], capacities: tuple, trace) -> pd.DataFrame:
    """Every policy of ``names`` at every capacity, one cached policy at a time under a progress bar."""
    parts = stepped(
        lambda name: f"Replaying the trace through {POLICIES[name].label}…",
        names,
        lambda name: policy_sweep(key, name, capacities, trace),
    )
    return pd.concat(parts, ignore_index=True)


def notice(curve: pd.DataFrame, policies: list[str], found: Findings, prefix: bool, key: str, trace) -> list[str]:
    """The page's "What to notice" points for this curve."""
    points = (
        why_notes(curve, policies, facts_of(key, trace))
        if policies
        else ["Pick policies in the sidebar to compare them with the bounds."]
    )
    points.append(
        "Which policy wins depends on the workload: the lecture notes' synthetic load had LFU best at very "
        "small capacity and LRU at medium, while Mooncake's real trace had LRU best throughout."
    )
    cap, gap = found.widest_gap
    if gap > 0:
        points.append(
            f"The widest gap to Belady is at {int(cap):,} blocks: {gap:.3f} of all accesses, which only "
            "knowledge of the future would win back."
        )
    meet = (
        f" From {int(found.converged_at):,} blocks every policy is within 0.005 of it: eviction no longer matters."
        if found.converged_at
        else ""
    )
    points.append(
        f"Nothing passes the infinite-cache line ({found.ceiling:.3f}): a block's first access always misses.{meet}"
    )
    if prefix:
        points.append(
            "Prefix mode drops hits that follow a miss in the same request. LRU loses none on chained "
            "ids: a block's parent is used right before it every time, so LRU always evicts the child "
            "first."
        )
    return points
