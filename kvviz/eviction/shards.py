"""Sampled hit curves: SHARDS-adj (Waldspurger, Park, Garthwaite and Ahmad, FAST 2015) for every policy.

**Spatially hashed sampling** (§3): an access is kept when its block's hash falls under a
threshold ``T``; with a 64-bit hash the sampling rate is ``R = T / 2^64``. Every access to a
kept block is kept, so the sample is a trace of its own over about ``R`` of the distinct
blocks, with their reuse intact. Replaying it through a cache of ``C × R`` blocks imitates a
cache of ``C`` blocks on the whole trace (§3.1). This holds for every policy here — the paper
samples LRU's reuse distances, and its sequel (Waldspurger et al., ATC 2017, "miniature
simulations") replays any policy on the sample the same way; Belady's next uses are computed on
the sample, which is what a cache seeing only the sample could know.

**SHARDS-adj** (§4.2; libCacheSim's ``mrcProfiler`` does the same for LRU and for its miniature
simulations): the sample holds ``Ns`` accesses where ``N × R`` were expected, and the difference
is mostly one hot block kept or left out by its hash. The paper adds ``N × R − Ns`` to the
histogram's first bucket, that is, counts the difference as hits at every capacity, so the miss
ratio is the sample's misses over ``N × R``: ``hit ratio = 1 − misses / (N × R)``. A hot block
misses almost never, so its accesses move ``Ns`` and not the misses, and the estimate no longer
depends on whether it was sampled. Plain SHARDS (sampled hits over ``Ns``) does: on a trace whose
hottest block is in every request (5.5% of the accesses) and hashes out of a 1% sample, it
misses every curve by 0.13–0.21, and SHARDS-adj by at most 0.03 (docs/benchmarks.md).

**LRU exact** at any size: one stack-distance pass (Mattson et al. 1970;
``kvviz.traces.reuse.lru_hit_counts``) gives LRU's whole curve, which corrects every other
policy's estimate as a control variate (``_corrected_by_lru``; not in the paper): the error a
sample makes on LRU at a capacity, which hot blocks it happened to catch, is shared by every
policy there.

**The error bound** is this module's, not the papers': the sample is one of ``REPLICAS``
disjoint samples of the same rate (hash bands ``[kR, (k+1)R)``, all taken in one pass over the
trace at ``REPLICAS × R``), each replayed and corrected the same way. Their spread estimates the
estimate's noise at this rate; the first two together are the ``2R`` sample, and how far their
mean moves from it estimates the bias of shrinking the cache, which falls with the rate. The
bound at each capacity is ``SPREAD_Z`` standard deviations of the replicas plus twice that move
(``_bounds``): measured on the trace above, it was at or above the actual error at every policy,
capacity and replica at 1% and 10% (docs/benchmarks.md). A capacity whose bound exceeds
``RELIABLE_ERROR`` is flagged, with the rate that would bring it under (``Flag``).

**Fixed size** (§4.3): with ``s_max``, the threshold is lowered until at most ``s_max`` distinct
blocks remain — the paper keeps the sampled blocks in a priority queue on their hash and, when
the queue overflows, drops the largest hash and lowers ``T`` to it. ``_fixed_size_rate`` does
that over the trace in chunks, holding at most ``s_max + 1`` hashes and one chunk, so the final
threshold is found in bounded memory; the sample is then taken at that rate, which is the limit
the paper's rescaled histogram reaches. The replay's per-block state is at most ``s_max`` blocks
(``REPLICAS × s_max`` with its replicas).

Public API: ``sampled_curve`` (→ ``SampledCurve``), ``flags`` (→ ``Flag``), ``sample_trace``,
``nested_sample`` and ``band_sample`` (→ ``Sample``), ``exact_lru_hits``, ``block_hashes`` and ``in_band``
(which keys hash into a band: the prefix cache's request sample uses it too).
The ``sample=`` setting that picks the rate (``chosen_rate``) and the thresholds are parsed in
``kvviz.eviction.grid``, which needs no simulation. A capacity is *represented* when its sampled
capacity ``round(C × R)`` is at least ``kvviz.eviction.grid.min_sampled_capacity`` blocks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from kvviz.common.errors import require
from kvviz.common.jit import frozen, kernel
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
REPLICAS = 4  # disjoint samples at the rate: the curve's and three more for the error bound
SPREAD_Z = 3.0  # standard deviations of the replicas in the bound
BIAS_FACTOR = 2.0  # a bias that falls as 1/R moves by half of itself from R to 2R
FIXED_SIZE_CHUNK = 1 << 16  # accesses hashed at a time while the fixed-size threshold is lowered


@kernel
def _splitmix64(x: np.uint64) -> np.uint64:
    """The splitmix64 finaliser (Steele, Lea and Flood 2014): a good 64-bit integer mix."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _in_band(blocks: np.ndarray, low: np.uint64, high: np.uint64, wraps: bool) -> np.ndarray:
    """Which accesses' block hashes are in ``[low, high)``, or with ``wraps`` outside ``[high, low)``."""
    keep = np.empty(len(blocks), np.bool_)
    for i in range(len(blocks)):
        h = _splitmix64(np.uint64(blocks[i]))
        keep[i] = (h >= low or h < high) if wraps else (low <= h < high)
    return keep


@kernel
def _block_hashes(blocks: np.ndarray) -> np.ndarray:
    out = np.empty(len(blocks), np.uint64)
    for i in range(len(blocks)):
        out[i] = _splitmix64(np.uint64(blocks[i]))
    return out


def block_hashes(blocks: np.ndarray) -> np.ndarray:
    """The 64-bit hash of every block id (the spatial sampling key). The kernels take the ids read-only
    in their own dtype (``kvviz.common.jit.frozen``; int64 from a file, int32 from a library entry)."""
    return _block_hashes(frozen(blocks))


def _threshold(rate: float) -> np.uint64:
    return np.uint64(min(int(rate * HASH_SPACE), 2**64 - 1))


def in_band(blocks: np.ndarray, start: float, rate: float) -> np.ndarray:
    """Which accesses hash into the band of width ``rate`` from ``start`` (fractions of the hash
    space, taken round it): the band from 0 is the plain SHARDS sample at ``rate``."""
    if rate >= 1:
        return np.ones(len(blocks), np.bool_)
    blocks = frozen(blocks)
    end = start + rate
    if end <= 1:
        return _in_band(blocks, _threshold(start), _threshold(end), False)
    return _in_band(blocks, _threshold(start), _threshold(end - 1), True)


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

    def hit_ratio(self, hits: int) -> float:
        """SHARDS-adj: one minus the sample's misses over the ``N × R`` accesses it should hold."""
        misses = self.replay.accesses - hits
        return min(1.0, max(0.0, 1.0 - misses / (self.accesses * self.rate)))


def _fixed_size_rate(blocks: np.ndarray, rate: float, s_max: int) -> float:
    """The rate at which at most ``s_max`` distinct blocks stay: the paper's final threshold,
    found a chunk at a time while holding at most ``s_max + 1`` hashes (the ones kept so far)."""
    threshold, kept = _threshold(rate), np.empty(0, np.uint64)
    for start in range(0, len(blocks), FIXED_SIZE_CHUNK):
        hashes = block_hashes(blocks[start : start + FIXED_SIZE_CHUNK])
        kept = np.union1d(kept, hashes[hashes < threshold])[: s_max + 1]
        if len(kept) > s_max:
            threshold = kept[s_max]  # the largest goes, and the threshold drops to it
            kept = kept[:s_max]
    return rate if threshold == _threshold(rate) else float(threshold) / HASH_SPACE


def sample_trace(trace: Trace, rate: float, s_max: int | None = None) -> Sample:
    """The accesses of ``trace`` whose block hashes fall under ``rate`` (lowered to keep at most
    ``s_max`` distinct blocks when given), as a ``Replay`` with the original block depths."""
    _require_sampleable(trace, rate, s_max)
    blocks = trace.blocks
    rate, limit = _limited(blocks, rate, s_max)
    return _sample_at(trace, np.flatnonzero(in_band(blocks, 0.0, rate)), rate, limit)


def _limited(blocks: np.ndarray, rate: float, s_max: int | None) -> tuple[float, int | None]:
    """The rate the fixed-size rule leaves, and ``s_max`` when it lowered it (else ``None``)."""
    if s_max is None:
        return rate, None
    lowered = _fixed_size_rate(blocks, rate, s_max)
    return (lowered, s_max) if lowered < rate else (rate, None)


def _require_sampleable(trace: Trace, rate: float, s_max: int | None) -> None:
    require(0 < rate <= 1, f"sampling rate must be in (0, 1], got {rate}", field="sample")
    require(s_max is None or s_max >= 1, f"s_max must be at least 1, got {s_max}", field="s_max")
    require(trace.has_block_ids, "this trace has no block ids (hash_ids): cache replay needs them", field="hash_ids")


def band_sample(trace: Trace, pool: Sample, start: float, rate: float) -> Sample:
    """The sample of ``trace`` whose hashes fall in the band of width ``rate`` from ``start``,
    taken from ``pool``'s accesses alone (the band must lie inside the pool's hashes)."""
    return _sample_at(
        trace, pool.positions[in_band(trace.blocks[pool.positions], start, rate)], rate, pool.distinct_limit
    )


def nested_sample(trace: Trace, sample: Sample, rate: float) -> Sample:
    """The ``rate`` sample of ``trace`` (``rate`` at most ``sample.rate``) taken from ``sample``'s
    accesses alone: the same accesses ``sample_trace`` at ``rate`` keeps, since a block is kept
    when its hash is under the threshold, without another pass over the whole trace."""
    require(
        0 < rate <= sample.rate, f"a nested sample's rate must be in (0, {sample.rate:g}], got {rate}", field="sample"
    )
    return band_sample(trace, sample, 0.0, rate)


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


def replicas(trace: Trace, rate: float, s_max: int | None = None) -> tuple[list[Sample], Sample]:
    """The ``REPLICAS`` disjoint samples at ``rate`` (hash bands ``[kR, (k+1)R)`` round the hash
    space; the first is ``sample_trace``'s) and the ``2R`` sample, the first two together.

    One pass over the trace takes the pool they are drawn from; with ``s_max`` the fixed-size rule
    first lowers the rate (a pass of its own). Above ``1 / REPLICAS`` the bands overlap, and at
    rate 1 they are all the whole trace.
    """
    _require_sampleable(trace, rate, s_max)
    rate, limit = _limited(np.ascontiguousarray(trace.blocks), rate, s_max)
    pool = replace(sample_trace(trace, min(1.0, REPLICAS * rate)), distinct_limit=limit)
    bands = [band_sample(trace, pool, (k * rate) % 1.0, rate) for k in range(REPLICAS)]
    return bands, band_sample(trace, pool, 0.0, min(1.0, 2 * rate))


@dataclass(frozen=True)
class Flag:
    """A policy whose error bound exceeds ``RELIABLE_ERROR`` at some represented capacity."""

    policy: str
    capacities: tuple[float, ...]  # the represented finite capacities over the limit
    bound: float  # the largest bound among them
    suggested_rate: float  # the rate that brings them under it (1: replay exactly)


@dataclass(frozen=True)
class SampledCurve:
    """A hit curve estimated from a sample.

    ``curve`` has the columns of ``kvviz.eviction.replay.hit_curve`` (hits scaled to the whole trace)
    plus ``sampled_capacity``, ``represented`` and ``error_estimate`` (the error bound at that
    row). ``lru_error`` is the largest absolute difference between the sampled and the exact LRU
    hit ratio over the represented finite capacities (``None`` when the exact curve was not
    computed). ``error_estimates`` is each policy's largest bound over its represented finite
    capacities; ``unreliable`` names the policies whose largest bound exceeds ``RELIABLE_ERROR``.
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
    def flags(self) -> tuple[Flag, ...]:
        return flags(self.table)

    @property
    def table(self) -> pd.DataFrame:
        """The curve as ``kvviz.eviction.curves.curve_csv`` prints a sampled one: the exact curve's
        columns, then ``represented``, ``rate`` and ``error_estimate``."""
        return self.curve.drop(columns="sampled_capacity").assign(rate=self.rate)


def flags(table: pd.DataFrame) -> tuple[Flag, ...]:
    """Each policy of a sampled curve's table whose bound exceeds ``RELIABLE_ERROR`` at a
    represented finite capacity, with those capacities and the rate that would hold them.

    The bound's noise term falls as ``1/√R`` and its bias term as ``1/R``, so at ``R × (b / L)²``
    a bound ``b`` falls to at most the limit ``L``; the rate is rounded up to two digits.
    """
    rate = float(table["rate"].iloc[0])
    rows = table[table["represented"] & np.isfinite(table["capacity"]) & (table["error_estimate"] > RELIABLE_ERROR)]
    out = []
    for policy, over in rows.groupby("policy", sort=False):
        bound = float(over["error_estimate"].max())
        out.append(Flag(str(policy), tuple(over["capacity"]), bound, _rounded_up(rate * (bound / RELIABLE_ERROR) ** 2)))
    return tuple(out)


def _rounded_up(rate: float) -> float:
    """``rate`` rounded up to two significant digits (1 and above: 1)."""
    if rate >= 1:
        return 1.0
    step = Fraction(10) ** (math.floor(math.log10(rate)) - 1)
    return float(min(1, math.ceil(Fraction(f"{rate:.12g}") / step) * step))  # 0.09000000000000001 is 0.09


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
    """Every policy's hit curve estimated on a ``rate`` sample of ``trace`` (SHARDS-adj).

    With ``exact_lru`` the exact LRU curve is computed too (one stack-distance pass over the
    whole trace): LRU's rows are then exact, ``lru_error`` measures the sampled LRU curve against
    it (LRU is replayed on the sample for that even when not asked for), and every other policy
    is corrected by LRU's error at the same capacity (``_corrected_by_lru``). Without it the
    estimates are plain SHARDS-adj. Either way the ``REPLICAS`` samples and the ``2R`` sample are
    replayed too, and each row gets its error bound (``_bounds``). The exact pass (the longest
    job) starts first, beside the sampling, and every simulation follows on the same ``workers``
    threads (default: one per core): numba's kernels release the GIL, so they fill the cores.
    """
    names = parse_policies(policies)
    caps = list(parse_capacities(capacities))
    _require_sampleable(trace, rate, s_max)  # before the exact pass starts
    replayed = names if not exact_lru or "lru" in names else (*names, "lru")
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        exact_job = pool.submit(exact_lru_hits, trace, caps) if exact_lru else None  # while sampling
        bands, double = replicas(trace, rate, s_max)
        ratios = _estimates(pool, [*bands, double], replayed, caps)
        exact = None if exact_job is None else exact_job.result() / len(trace.blocks)
    sample = bands[0]
    represented = np.array([[sample.represents(c, p) for c in caps] for p in replayed])
    lru_error = None
    if exact is not None:
        ratios, shifts = _corrected_by_lru(ratios, exact, replayed, caps)
        checked = np.isfinite(caps) & represented[replayed.index("lru")]
        lru_error = float(np.max(np.abs(shifts[0])[checked], initial=0.0))
        represented[replayed.index("lru")] = True  # exact at every capacity
    keep = [replayed.index(p) for p in names]
    curve = _curve(sample, names, caps, ratios[0][keep], represented[keep], _bounds(ratios)[keep], exact is not None)
    finite = curve[curve["represented"] & np.isfinite(curve["capacity"])]
    estimates = {p: max(finite.loc[finite["policy"] == p, "error_estimate"].tolist(), default=0.0) for p in names}
    return SampledCurve(
        curve, sample.rate, sample.replay.accesses, sample.accesses, sample.distinct_limit, lru_error, estimates
    )


def _estimates(
    pool: ThreadPoolExecutor, samples: list[Sample], policies: tuple[str, ...], caps: list[float]
) -> np.ndarray:
    """SHARDS-adj estimates ``(samples, policies, capacities)``, every simulation on ``pool``."""
    jobs = [(s.replay, p, s.sampled_capacity(c)) for s in samples for p in policies for c in caps]
    hits = _simulated(pool, jobs)
    return np.array(
        [
            [[s.hit_ratio(hits[(id(s.replay), p, s.sampled_capacity(c))]) for c in caps] for p in policies]
            for s in samples
        ]
    )


def _curve(
    sample: Sample,
    names: tuple[str, ...],
    caps: list[float],
    ratios: np.ndarray,
    represented: np.ndarray,
    bounds: np.ndarray,
    lru_exact: bool,
) -> pd.DataFrame:
    """The curve's rows, policy by policy: ``policy, capacity, hits, accesses, hit_ratio,
    sampled_capacity, represented, error_estimate`` (an exact LRU's sampled capacity is its own)."""
    import pandas as pd  # here: the default hitcurve imports this module only to pick its rate

    scaled = [[c if lru_exact and p == "lru" else sample.sampled_capacity(c) for c in caps] for p in names]
    curve = pd.DataFrame(
        {
            "policy": np.repeat(names, len(caps)),
            "capacity": np.tile(np.asarray(caps, dtype=float), len(names)),
            "hit_ratio": ratios.ravel(),
            "sampled_capacity": np.ravel(scaled),
            "represented": represented.ravel(),
            "error_estimate": bounds.ravel(),
        }
    )
    curve.insert(2, "hits", np.round(curve["hit_ratio"] * sample.accesses).astype(np.int64))
    curve.insert(3, "accesses", sample.accesses)
    return curve


def _simulated(pool: ThreadPoolExecutor, jobs: list[tuple[Replay, str, float]]) -> dict[tuple[int, str, float], int]:
    """Each (replay, policy, sampled capacity)'s hits, keyed by ``(id(replay), policy, capacity)``,
    simulated on ``pool`` (only the hit count: a block curve needs no per-request counting)."""
    unique = {(id(r), p, c): (r, p, c) for r, p, c in jobs}
    futures = {key: pool.submit(_hits, *job) for key, job in unique.items()}
    return {key: future.result() for key, future in futures.items()}


def _hits(replay: Replay, policy: str, capacity: float) -> int:
    return int(np.count_nonzero(hit_mask(replay, policy, capacity)))


def _bounds(ratios: np.ndarray) -> np.ndarray:
    """The error bound of the first sample's estimates, per (policy, capacity), from the
    ``(REPLICAS + 1, policies, capacities)`` estimates of the replicas and the ``2R`` sample:
    ``SPREAD_Z`` standard deviations of the replicas (the noise at this rate) plus
    ``BIAS_FACTOR`` times how far the first two replicas' mean is from the ``2R`` sample, which
    holds the same blocks (so their noise mostly cancels) in a cache twice as large (so the bias
    of shrinking the cache shows)."""
    bands, double = ratios[:-1], ratios[-1]
    spread = bands.std(axis=0, ddof=1)
    bias = np.abs(bands[:2].mean(axis=0) - double)
    return SPREAD_Z * spread + BIAS_FACTOR * bias


def _corrected_by_lru(
    ratios: np.ndarray, exact: np.ndarray, policies: tuple[str, ...], caps: list[float]
) -> tuple[np.ndarray, np.ndarray]:
    """LRU as a control variate on ``(samples, policies, capacities)`` estimates: every policy's
    estimate at a capacity moves by the error the same sample made on LRU there (exact minus
    sampled), and LRU's rows become exact. Policies in ``UNCORRECTED`` keep their own estimate,
    except at infinite capacity, where every policy hits exactly as LRU does. Returns the
    corrected estimates and each sample's shifts ``(samples, capacities)``."""
    shifts = exact[None, :] - ratios[:, policies.index("lru"), :]
    applies = np.array([[p not in UNCORRECTED or math.isinf(c) for c in caps] for p in policies])
    return np.clip(ratios + shifts[:, None, :] * applies[None], 0.0, 1.0), shifts


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
