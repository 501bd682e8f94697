"""Sampled hit curves: SHARDS (Waldspurger, Park, Garthwaite and Ahmad, FAST 2015).

**Spatially hashed sampling** (§3): an access is kept when its block's hash falls under a
threshold ``T``; with a 64-bit hash the sampling rate is ``R = T / 2^64``. Every access to a
kept block is kept, so the sample is a trace of its own over about ``R`` of the distinct
blocks, with their reuse intact. Replaying it through a cache of ``C × R`` blocks imitates a
cache of ``C`` blocks on the whole trace (§3.1: the sampled blocks see the same reuse, scaled),
and the hit ratio of the sample estimates the whole trace's. This holds for every policy here
— the paper samples LRU's reuse distances, and its sequel (Waldspurger et al., ATC 2017,
"miniature simulations") replays any policy on the sample the same way; Belady's next uses are
computed on the sample, which is what a cache seeing only the sample could know.

The hit ratio is sampled hits over *sampled* accesses (not ``N × R``), which removes the
sample-size noise the paper corrects with SHARDS-adj (§4.2).

**Fixed size** (§4.3): with ``s_max``, the threshold is lowered until at most ``s_max`` distinct
blocks remain — the paper keeps the sampled blocks in a priority queue on their hash and, when
the queue overflows, drops the largest hash and lowers ``T`` to it. The blocks left at the end
are the ``s_max`` smallest hashes under the starting threshold; the paper rescales its
histogram each time ``T`` drops so that it ends as if the whole trace had been sampled at the
final rate. Here the final threshold is found first and the sample is then replayed at the
final rate, which is that limit exactly (two passes over the ids; the replay's memory is
bounded by ``s_max`` blocks).

**LRU exact** at any size: one stack-distance pass (Mattson et al. 1970; ``kvviz.traces.reuse.lru_hit_counts``,
a histogram in 4-byte arrays) gives LRU's whole curve, which corrects every other policy's
estimate as a control variate (``_corrected_by_lru``; not in the paper).

**The measured error estimate** is this module's, not the papers': the sample at twice the rate
(``CHECK_RATE``; it holds the rate-R sample, which is taken from its accesses without a second
pass over the trace) is replayed too, and a policy's estimate is its largest disagreement with
it over the finite capacities the rate-R curve represents (``_disagreement``); over
``RELIABLE_ERROR`` the policy is flagged as unreliable at this rate. It is how far the estimate
still moves when the rate doubles, not the distance to the exact curve: it catches errors from
shrinking the cache and **underestimates** errors that fall slowly with the rate (about a third
of LFU's and LengthAware's on traces whose popular blocks change; docs/eviction.md has the
measured table, and why a nested sample at *half* the rate, which would cost less, is not used).

Public API: ``sampled_curve`` (→ ``SampledCurve``), ``sample_trace`` and ``nested_sample``
(→ ``Sample``), ``exact_lru_hits`` and ``block_hashes``. The ``sample=`` setting that picks the rate
(``chosen_rate``) and the thresholds below are parsed in ``kvviz.eviction.grid``, which needs no
simulation; this module replays the sample through ``kvviz.eviction.replay``.

A capacity is *represented* when its sampled capacity ``round(C × R)`` is at least
``kvviz.eviction.grid.MIN_SAMPLED_CAPACITY`` blocks: below that a few sampled blocks decide the result and the
error grows (S3-FIFO's 10% small queue, for one, stops admitting anything below 20 blocks).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kvviz.common.errors import require
from kvviz.common.jit import kernel
from kvviz.eviction.grid import MAX_ACCESSES, RELIABLE_ERROR, min_sampled_capacity, parse_capacities, parse_policies
from kvviz.eviction.replay import Replay, hit_mask
from kvviz.traces import Trace
from kvviz.traces.reuse import dense_ids, lru_hit_counts

if TYPE_CHECKING:
    import pandas as pd

HASH_SPACE = 2.0**64
UNCORRECTED = frozenset({"sieve"})
"""Policies whose sampling error does not follow LRU's, so the LRU control variate is not applied:
on the accuracy trace it moved SIEVE's represented point from 0.000 to 0.016 off."""
CHECK_RATE = 2  # the error estimate's sample, as a multiple of the rate


@kernel
def _splitmix64(x: np.uint64) -> np.uint64:
    """The splitmix64 finaliser (Steele, Lea and Flood 2014): a good 64-bit integer mix."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _below(blocks: np.ndarray, threshold: np.uint64) -> np.ndarray:
    """Which accesses' block hashes are under ``threshold``."""
    keep = np.empty(len(blocks), np.bool_)
    for i in range(len(blocks)):
        keep[i] = _splitmix64(np.uint64(blocks[i])) < threshold
    return keep


def _threshold(rate: float) -> np.uint64:
    return np.uint64(min(int(rate * HASH_SPACE), 2**64 - 1))


@dataclass(frozen=True)
class Sample:
    """A spatially hashed sample of a trace, prepared for replay at rate ``rate``."""

    replay: Replay
    rate: float
    accesses: int  # accesses of the whole trace
    distinct_limit: int | None  # s_max, when the fixed-size rule lowered the rate
    positions: np.ndarray  # the sampled accesses' indices in the whole trace

    def sampled_capacity(self, capacity: float) -> float:
        """The capacity, in sampled blocks, that stands for ``capacity`` on the whole trace."""
        return capacity if math.isinf(capacity) else float(max(1, round(capacity * self.rate)))

    def represents(self, capacity: float, policy: str = "lru") -> bool:
        return math.isinf(capacity) or capacity * self.rate >= min_sampled_capacity(policy)


def _fixed_size_rate(blocks: np.ndarray, keep: np.ndarray, rate: float, s_max: int) -> float:
    """The rate at which at most ``s_max`` distinct blocks stay: the paper's final threshold."""
    hashes = np.unique(block_hashes(blocks[keep]))
    if len(hashes) <= s_max:
        return rate
    return float(hashes[s_max]) / HASH_SPACE  # keeps exactly the s_max smallest hashes


@kernel
def block_hashes(blocks: np.ndarray) -> np.ndarray:
    """The 64-bit hash of every block id (the spatial sampling key)."""
    out = np.empty(len(blocks), np.uint64)
    for i in range(len(blocks)):
        out[i] = _splitmix64(np.uint64(blocks[i]))
    return out


def sample_trace(trace: Trace, rate: float, s_max: int | None = None) -> Sample:
    """The accesses of ``trace`` whose block hashes fall under ``rate`` (lowered to keep at most
    ``s_max`` distinct blocks when given), as a ``Replay`` with the original block depths."""
    _require_sampleable(trace, rate, s_max)
    blocks = np.ascontiguousarray(trace.blocks)
    keep = _below(blocks, _threshold(rate))
    limit = None
    if s_max is not None:
        lowered = _fixed_size_rate(blocks, keep, rate, s_max)
        if lowered < rate:
            rate, limit = lowered, s_max
            keep = _below(blocks, _threshold(rate))
    return _sample_at(trace, np.flatnonzero(keep), rate, limit)


def _require_sampleable(trace: Trace, rate: float, s_max: int | None) -> None:
    require(0 < rate <= 1, f"sampling rate must be in (0, 1], got {rate}", field="sample")
    require(s_max is None or s_max >= 1, f"s_max must be at least 1, got {s_max}", field="s_max")
    require(trace.has_block_ids, "this trace has no block ids (hash_ids): cache replay needs them", field="hash_ids")


def nested_sample(trace: Trace, sample: Sample, rate: float) -> Sample:
    """The ``rate`` sample of ``trace`` (``rate`` at most ``sample.rate``) taken from ``sample``'s
    accesses alone: the same accesses ``sample_trace`` at ``rate`` keeps, since a block is kept
    when its hash is under the threshold, without another pass over the whole trace."""
    require(
        0 < rate <= sample.rate, f"a nested sample's rate must be in (0, {sample.rate:g}], got {rate}", field="sample"
    )
    blocks = np.ascontiguousarray(trace.blocks[sample.positions])
    return _sample_at(trace, sample.positions[_below(blocks, _threshold(rate))], rate, None)


def _sample_at(trace: Trace, positions: np.ndarray, rate: float, limit: int | None) -> Sample:
    """The sample made of the accesses at ``positions`` (ascending) of ``trace``."""
    require(len(positions) > 0, f"a {rate:g} sample of this trace holds no access: raise the rate", field="sample")
    blocks = trace.blocks
    offsets = np.asarray(trace.offsets, dtype=np.int64)
    request = np.searchsorted(offsets, positions, side="right") - 1  # each sampled access's request
    new_offsets = np.zeros(len(offsets), np.int64)
    np.cumsum(np.bincount(request, minlength=len(offsets) - 1), out=new_offsets[1:])
    _, ids = np.unique(blocks[positions], return_inverse=True)
    ids = ids.astype(np.int64).reshape(-1)
    replay = Replay(
        ids,
        int(ids.max()) + 1,
        new_offsets,
        trace.requests["timestamp"].to_numpy(np.int64),
        trace.block_size,
        depths=positions - offsets[request],
    )
    return Sample(replay, rate, len(blocks), limit, positions)


def _with_check(trace: Trace, rate: float, s_max: int | None) -> tuple[Sample, Sample]:
    """The ``rate`` sample and the one at ``CHECK_RATE`` times its rate that the error estimate
    replays beside it. Without ``s_max`` one pass over the trace takes the larger and the
    ``rate`` sample is nested in it; with ``s_max`` the rate is known only after the fixed-size
    rule, and the check sample (about twice ``s_max`` blocks) takes a second pass."""
    if s_max is None:
        check = sample_trace(trace, min(1.0, CHECK_RATE * rate))
        return nested_sample(trace, check, rate), check
    sample = sample_trace(trace, rate, s_max)
    return sample, sample_trace(trace, min(1.0, CHECK_RATE * sample.rate))


@dataclass(frozen=True)
class SampledCurve:
    """A hit curve estimated from a sample.

    ``curve`` has the columns of ``kvviz.eviction.replay.hit_curve`` (hits scaled to the whole trace)
    plus ``sampled_capacity``, ``represented`` and ``error_estimate`` (its policy's, repeated on
    each row). ``lru_error`` is the largest absolute difference between the sampled and the
    exact LRU hit ratio over the represented finite capacities (``None`` when the exact curve
    was not computed). ``error_estimates`` is each policy's measured error estimate
    (``_disagreement``); ``unreliable`` names the policies whose estimate exceeds
    ``RELIABLE_ERROR``.
    """

    curve: pd.DataFrame
    rate: float
    sampled_accesses: int
    accesses: int
    distinct_limit: int | None
    lru_error: float | None
    error_estimates: dict[str, float]

    @property
    def unreliable(self) -> tuple[str, ...]:
        return tuple(p for p, e in self.error_estimates.items() if e > RELIABLE_ERROR)

    @property
    def table(self) -> pd.DataFrame:
        """The curve as ``kvviz.eviction.curves.curve_csv`` prints a sampled one: the exact curve's
        columns, then ``represented``, ``rate`` and ``error_estimate``."""
        return self.curve.drop(columns="sampled_capacity").assign(rate=self.rate)


def sampled_curve(
    trace: Trace,
    policies: Iterable[str],
    capacities: Iterable[float | int],
    rate: float,
    *,
    s_max: int | None = None,
    exact_lru: bool = True,
    workers: int | None = None,
) -> SampledCurve:
    """Every policy's hit curve estimated on a ``rate`` sample of ``trace`` (SHARDS).

    With ``exact_lru`` the exact LRU curve is computed too (one stack-distance pass over the
    whole trace): LRU's rows are then exact, ``lru_error`` measures the sampled LRU curve against
    it (LRU is replayed on the sample for that even when not asked for), and every other policy
    is corrected by LRU's error at the same capacity (``_corrected_by_lru``). Without it the
    estimates are plain SHARDS. Either way the sample at ``CHECK_RATE`` times the rate (which
    holds this one) is replayed too, and each policy's error is estimated from how far the two
    disagree (``_disagreement``). The exact pass (the longest job) starts first, beside the
    sampling, and every simulation follows on the same ``workers`` threads (default: one per
    core): numba's kernels release the GIL, so they fill the cores.
    """
    names = parse_policies(policies)
    caps = list(parse_capacities(capacities))
    _require_sampleable(trace, rate, s_max)  # before the exact pass starts
    replayed = names if not exact_lru or "lru" in names else (*names, "lru")
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        exact_job = pool.submit(exact_lru_hits, trace, caps) if exact_lru else None  # while sampling
        sample, check_sample = _with_check(trace, rate, s_max)
        checked = [c for c in caps if math.isfinite(c) and sample.represents(c)]
        runs = [(sample, caps), (check_sample, checked)]
        hits = _simulated(pool, [(s.replay, p, s.sampled_capacity(c)) for s, cs in runs for p in replayed for c in cs])
        curve = _curve(sample, replayed, caps, hits)
        check = _curve(check_sample, replayed, checked, hits) if checked else None
        exact = None if exact_job is None else exact_job.result() / sample.accesses
    error = None
    if exact is not None:
        curve, error = _corrected_by_lru(curve, exact, len(replayed))
        if check is not None:
            check = _corrected_by_lru(check, exact[[caps.index(c) for c in checked]], len(replayed))[0]
    estimates = {p: _disagreement(curve, check, p) for p in names}
    curve = curve[curve["policy"].isin(names)].reset_index(drop=True)
    curve.insert(2, "hits", np.round(curve["hit_ratio"] * sample.accesses).astype(np.int64))
    curve.insert(3, "accesses", sample.accesses)
    curve["error_estimate"] = curve["policy"].map(estimates)
    return SampledCurve(
        curve, sample.rate, sample.replay.accesses, sample.accesses, sample.distinct_limit, error, estimates
    )


def _simulated(pool: ThreadPoolExecutor, jobs: list[tuple[Replay, str, float]]) -> dict[tuple[int, str, float], int]:
    """Each (replay, policy, sampled capacity)'s hits, keyed by ``(id(replay), policy, capacity)``,
    simulated on ``pool`` (only the hit count: a block curve needs no per-request counting)."""
    unique = {(id(r), p, c): (r, p, c) for r, p, c in jobs}
    futures = {key: pool.submit(_hits, *job) for key, job in unique.items()}
    return {key: future.result() for key, future in futures.items()}


def _hits(replay: Replay, policy: str, capacity: float) -> int:
    return int(np.count_nonzero(hit_mask(replay, policy, capacity)))


def _curve(
    sample: Sample, policies: tuple[str, ...], caps: list[float], hits: dict[tuple[int, str, float], int]
) -> pd.DataFrame:
    """Each policy's plain SHARDS estimate at each capacity: ``policy, capacity, hit_ratio,
    sampled_capacity, represented``."""
    import pandas as pd  # here: the default hitcurve imports this module only to pick its rate

    scaled = [sample.sampled_capacity(c) for c in caps]
    key = id(sample.replay)
    return pd.DataFrame(
        {
            "policy": np.repeat(policies, len(caps)),
            "capacity": np.tile(np.asarray(caps, dtype=float), len(policies)),
            "hit_ratio": [hits[(key, p, c)] / sample.replay.accesses for p in policies for c in scaled],
            "sampled_capacity": np.tile(scaled, len(policies)),
            "represented": [sample.represents(c, p) for p in policies for c in caps],
        }
    )


def _disagreement(curve: pd.DataFrame, check: pd.DataFrame | None, policy: str) -> float:
    """The error estimate of ``policy``'s curve: the largest |estimate at R − estimate at 2R|
    over the finite capacities the rate-R curve represents (``check`` holds only those; ``None``
    when there is none, and nothing to estimate).

    The 2R sample holds the R sample, so the two share the blocks that decide most of the
    estimate and differ in the sampled cache's size: an error that comes from shrinking the
    cache (LFU's on a trace whose popular blocks change, docs/eviction.md) shows as a
    disagreement. It measures how fast the estimate still moves with the rate, not the
    distance to the exact curve: where the error shrinks slowly with the rate it is an
    underestimate (LFU at 1%: 0.05 against an error of 0.2), so a flag means "raise the rate"
    and no flag is not a proof.
    """
    if check is None:
        return 0.0
    rows = curve[(curve["policy"] == policy) & curve["represented"] & curve["capacity"].isin(check["capacity"])]
    other = check.set_index(["policy", "capacity"])["hit_ratio"]
    gaps = [abs(r - other[(policy, c)]) for c, r in zip(rows["capacity"], rows["hit_ratio"])]
    return float(max(gaps, default=0.0))


def _corrected_by_lru(curve: pd.DataFrame, exact: np.ndarray, n_policies: int) -> tuple[pd.DataFrame, float]:
    """LRU as a control variate: every policy's estimate at a capacity moves by the error the
    same sample made on LRU there (exact minus sampled), and LRU's rows become exact. Policies in
    ``UNCORRECTED`` keep their plain SHARDS estimate, except at infinite capacity, where every
    policy hits exactly as LRU does.

    The sample's main error — which hot blocks it happened to catch — is shared by every policy
    at a capacity, so removing LRU's cancels most of it. Returns the curve and LRU's largest
    uncorrected error over the represented finite capacities.
    """
    lru = (curve["policy"] == "lru").to_numpy()
    sampled = curve.loc[lru, "hit_ratio"].to_numpy()
    shift = exact - sampled
    finite = np.isfinite(curve.loc[lru, "capacity"].to_numpy()) & curve.loc[lru, "represented"].to_numpy()
    corrected = ~curve["policy"].isin(UNCORRECTED).to_numpy() | np.isinf(curve["capacity"].to_numpy())
    shifts = np.tile(shift, n_policies) * corrected
    curve = curve.assign(hit_ratio=np.clip(curve["hit_ratio"].to_numpy() + shifts, 0.0, 1.0))
    curve.loc[lru, "sampled_capacity"] = curve.loc[lru, "capacity"]
    curve.loc[lru, "represented"] = True
    return curve, float(np.max(np.abs(shift)[finite], initial=0.0))


def exact_lru_hits(trace: Trace, capacities: Iterable[float]) -> np.ndarray:
    """LRU's exact hits at each capacity, from one stack-distance pass over the whole trace
    (``kvviz.traces.reuse.lru_hit_counts``: a histogram, on the trace's own ids when they are dense)."""
    require(trace.has_block_ids, "this trace has no block ids (hash_ids): cache replay needs them", field="hash_ids")
    require(
        len(trace.blocks) < MAX_ACCESSES,
        f"{len(trace.blocks):,} block accesses; the simulators take fewer than {MAX_ACCESSES:,}",
    )
    ids, n_ids = dense_ids(trace.blocks)
    return lru_hit_counts(ids, n_ids, np.asarray(list(capacities), dtype=float))
