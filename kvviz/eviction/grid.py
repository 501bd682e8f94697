"""What a hit-curve sweep runs over, by name: its policies, its capacities and its sampling setting.

Every input of a sweep is parsed and validated here, before anything is replayed, and nothing here
runs a simulation: the page's controls, the command line's arguments and the figures read these
names without importing numba (``kvviz.eviction.replay`` runs the policies, ``kvviz.eviction.shards``
samples).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from kvviz.common.errors import InputError, quote, require

INFINITE = math.inf
MAX_CAPACITIES = 200
MAX_ACCESSES = 2**31 - 1  # the policies keep block ids, times and keys in int32 arrays


@dataclass(frozen=True)
class Policy:
    """A policy's CLI name, display label and one-line rule."""

    name: str
    label: str
    rule: str
    admits_below: int = 1  # capacities below this cache nothing at all


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("lru", "LRU", "evict the least recently used block"),
        Policy("fifo", "FIFO", "evict the block that entered first"),
        Policy("lfu", "LFU", "evict the least hit block while cached; ties: oldest at that count"),
        Policy("length_aware", "LengthAware", "LFU, ties broken by evicting the block deepest in its request"),
        Policy("sieve", "SIEVE", "FIFO queue with a visited bit and a hand that spares visited blocks"),
        Policy("arc", "ARC", "two LRU lists (seen once / twice) with ghost lists tuning their split"),
        Policy(
            "s3fifo",
            "S3-FIFO",
            "a small FIFO (10%) keeps only blocks hit twice there; main FIFO with reinsertion; ghost ids (90%)",
            admits_below=20,
        ),
        Policy("belady", "Belady (OPT)", "evict the block whose next use is farthest (needs the future)"),
    )
}
ONLINE = tuple(name for name in POLICIES if name != "belady")
BOUND = "belady"
_ALIASES = {
    **{name.replace("_", ""): name for name in POLICIES},
    "opt": "belady",
    "min": "belady",
    "lengthawarecache": "length_aware",
}


def parse_policies(names: str | Iterable[str]) -> tuple[str, ...]:
    """Policy names from ``"lru,lfu"`` or a list, validated, duplicates dropped, order kept."""
    items = names.split(",") if isinstance(names, str) else list(names)
    out: list[str] = []
    for raw in items:
        key = re.sub(r"[\s_-]", "", str(raw).lower())
        if not key:
            continue
        name = _ALIASES.get(key)
        if name is None:
            raise InputError(
                f"unknown policy '{quote(str(raw).strip())}'; choose from {', '.join(POLICIES)}", field="policies"
            )
        if name not in out:
            out.append(name)
    require(bool(out), "no policy given; choose from " + ", ".join(POLICIES), field="policies")
    return tuple(out)


_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000}
_CAPACITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([km]?)\s*$", re.IGNORECASE)


def parse_capacity(raw: str | float | int) -> float | int:
    """One capacity in blocks: a positive integer (``1000``, ``10k``, ``1e4``) or ``inf``."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = raw
    else:
        text = str(raw).strip().lower()
        if text in ("inf", "infinite", "infinity", "∞"):
            return INFINITE
        match = _CAPACITY.match(text)
        if not match:
            raise InputError(
                f"capacity '{quote(raw)}' is not a number of blocks (e.g. 1000, 10k, inf)", field="capacities"
            )
        value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
        if math.isinf(value):  # 1e400 overflows to inf: a typo, not "unbounded" (that is written inf)
            raise InputError(
                f"capacity '{quote(raw)}' is too large a number; write inf for no limit", field="capacities"
            )
    if value == INFINITE:
        return INFINITE
    if not math.isfinite(value) or value != int(value):
        raise InputError(f"capacity '{quote(raw)}' must be a whole number of blocks", field="capacities")
    if value < 1:
        raise InputError(f"capacity '{quote(raw)}' must be at least 1 block", field="capacities")
    return int(value)


def parse_capacities(values: str | Iterable[str | float | int]) -> tuple[float | int, ...]:
    """Capacities from ``"1000,5000,inf"`` or a list: validated, sorted, duplicates dropped."""
    items = values.split(",") if isinstance(values, str) else list(values)
    caps = sorted({parse_capacity(v) for v in items if str(v).strip()})
    require(bool(caps), "no capacity given (e.g. 1000,10k,inf)", field="capacities")
    require(len(caps) <= MAX_CAPACITIES, f"at most {MAX_CAPACITIES} capacities, got {len(caps)}", field="capacities")
    return tuple(caps)


def log_capacities(low: int, high: int, points: int) -> tuple[int, ...]:
    """About ``points`` whole capacities spaced evenly on a log scale from ``low`` to ``high``."""
    require(
        isinstance(low, (int, np.integer)) and low >= 1,
        f"smallest capacity must be at least 1, got {low}",
        field="capacity",
    )
    require(high >= low, f"largest capacity {high} is below the smallest {low}", field="capacity")
    require(2 <= points <= MAX_CAPACITIES, f"points must be in 2..{MAX_CAPACITIES}, got {points}", field="points")
    grid = np.unique(np.round(np.geomspace(low, high, points)).astype(np.int64))
    return tuple(int(c) for c in grid)


def format_capacity(capacity: float) -> str:
    """``1000`` for a whole capacity, ``inf`` for the infinite cache."""
    return "inf" if capacity == INFINITE else str(int(capacity))


# -- the sample= setting (kvviz.eviction.shards replays the sample) --------------------------------

EXACT = "exact"
AUTO = "auto"
MIN_RATE = 1e-4
AUTO_ABOVE = 2_000_000  # sample="auto" samples traces with more accesses
AUTO_SAMPLE_ACCESSES = 1_000_000  # ... at the rate that keeps about this many accesses
MIN_SAMPLED_CAPACITY = 100  # sampled blocks a represented capacity needs (C × R ≥ this)
MIN_SAMPLED_BY_POLICY = {"sieve": 2_000}
"""Policies whose small caches do not shrink faithfully need more sampled blocks. SIEVE's hand
and visited bits: at a 1% rate its sampled curve ran 0.07–0.10 high at 200–1,000 sampled blocks
and within 0.002 from 2,000 on (tests/eviction/test_shards.py's accuracy trace; docs/eviction.md)."""
RELIABLE_ERROR = 0.01  # a policy whose error estimate is above this is flagged


def min_sampled_capacity(policy: str) -> int:
    """The sampled blocks a capacity needs for ``policy``'s sampled curve to represent it."""
    return MIN_SAMPLED_BY_POLICY.get(policy, MIN_SAMPLED_CAPACITY)


def parse_sample(raw: str | float) -> str | float:
    """``auto``, ``exact`` or a rate in (0, 1] (``0.01`` or ``1%``)."""
    text = str(raw).strip().lower()
    if text in (AUTO, EXACT):
        return text
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise InputError(f"sample '{quote(raw)}' is not auto, exact or a rate such as 0.01", field="sample") from None
    if not (MIN_RATE <= rate <= 1):
        raise InputError(f"sampling rate {raw} must be in [{MIN_RATE:g}, 1]", field="sample")
    return rate


def auto_rate(accesses: int) -> float | None:
    """The rate ``sample="auto"`` uses for a trace of ``accesses`` (``None``: replay it exactly)."""
    if accesses <= AUTO_ABOVE:
        return None
    return max(MIN_RATE, AUTO_SAMPLE_ACCESSES / accesses)


def chosen_rate(sample: str | float, accesses: int) -> float | None:
    """The sampling rate a ``sample=`` setting gives (``None``: exact)."""
    sample = parse_sample(sample)
    if sample == EXACT:
        return None
    if sample == AUTO:
        return auto_rate(accesses)
    return None if sample >= 1 else float(sample)
