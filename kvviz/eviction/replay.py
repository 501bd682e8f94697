"""Block-cache replay: hit ratio against capacity for eight eviction policies.

A trace's block accesses (request after request, each request's hash ids in order) go through a
cache of C blocks. Every access looks its block up; a miss inserts it, evicting by the policy
when the cache is full. **Hit ratio = block hits / block accesses.** In **prefix mode** an access
counts only while every earlier block of its request hit (what a prefix cache can reuse), over
the same denominator.

The policies and their exact rules live in ``kvviz.eviction.policies``; they agree hit for hit with
libCacheSim 0.3.5 (LRU, FIFO, LFU, SIEVE, ARC, S3-FIFO, Belady), which the tests use as the
oracle. Mooncake v3 §4.2 (Table 1) compares LRU, LFU and its LengthAwareCache on its trace.

Speed comes from the structure of the problem: the trace is prepared once (dense block ids,
next-use times, block depths), LRU's whole curve comes from one pass of stack distances
(Mattson et al. 1970), and the other simulations are compiled loops run one per core.
``counts`` and ``counts_csv`` give an exact curve without pandas (the ``hitcurve`` command's
path, whose time is mostly start-up); the DataFrame functions import it when called.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from kvviz.common import paper
from kvviz.common.errors import InputError, quote, require
from kvviz.eviction.policies.arc import arc_hits
from kvviz.eviction.policies.belady import belady_hits
from kvviz.eviction.policies.counting import hits_per_request, prefix_hits
from kvviz.eviction.policies.fifo import fifo_hits
from kvviz.eviction.policies.lfu import length_aware_hits, lfu_hits
from kvviz.eviction.policies.lru import lru_hits_from_distances
from kvviz.eviction.policies.s3fifo import s3fifo_hits
from kvviz.eviction.policies.sieve import sieve_hits
from kvviz.traces.reuse import stack_distances_of_ids
from kvviz.traces import Trace

if TYPE_CHECKING:
    import pandas as pd

INFINITE = math.inf
CURVE_COLUMNS = ("policy", "capacity", "hits", "accesses", "hit_ratio")
MAX_CAPACITIES = 200
MAX_ACCESSES = 2**31 - 1     # the policies keep block ids, times and keys in int32 arrays


@dataclass(frozen=True)
class Replay:
    """A trace's block-access sequence, prepared once for every policy and capacity.

    ``ids`` are the block ids renumbered densely 0 .. n_ids-1 (so policies index arrays instead
    of hashing), ``depth[i]`` is access i's block index within its request (read off the
    offsets, unless ``depths`` gives them: a sample keeps its accesses' original depths), and
    ``next_use[i]`` the index of the next access to the same block (``len(ids)`` if none).
    """

    ids: np.ndarray
    n_ids: int
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    block_size: int
    depths: np.ndarray | None = None

    @property
    def accesses(self) -> int:
        return len(self.ids)

    @cached_property
    def depth(self) -> np.ndarray:
        if self.depths is not None:
            return self.depths
        counts = np.diff(self.offsets)
        return np.arange(self.accesses, dtype=np.int64) - np.repeat(self.offsets[:-1], counts)

    @cached_property
    def next_use(self) -> np.ndarray:
        nxt = np.full(self.accesses, self.accesses, dtype=np.int64)
        order = np.argsort(self.ids, kind="stable")
        same = self.ids[order[1:]] == self.ids[order[:-1]]
        nxt[order[:-1][same]] = order[1:][same]
        return nxt

    @cached_property
    def most_accesses(self) -> int:
        """How often the most popular block is accessed (bounds every frequency count)."""
        return int(np.bincount(self.ids).max())

    @cached_property
    def seen_before(self) -> np.ndarray:
        """The accesses an infinite cache hits: every access but a block's first."""
        first = np.zeros(self.accesses, dtype=bool)
        first[np.unique(self.ids, return_index=True)[1]] = True
        return ~first

    @cached_property
    def stack_distances(self) -> np.ndarray:
        return stack_distances_of_ids(self.ids, self.n_ids)


@dataclass(frozen=True)
class Policy:
    """A policy's CLI name, display label, one-line rule, and its per-access hit function."""

    name: str
    label: str
    rule: str
    hits: Callable[[Replay, int], np.ndarray]
    admits_below: int = 1          # capacities below this cache nothing at all

    def never_evicts(self, replay: Replay, capacity: float) -> bool:
        """True when the cache holds every distinct block: the infinite-cache result."""
        return capacity >= replay.n_ids and capacity >= self.admits_below


POLICIES: dict[str, Policy] = {p.name: p for p in (
    Policy("lru", "LRU", "evict the least recently used block",
           lambda r, c: lru_hits_from_distances(r.stack_distances, c)),
    Policy("fifo", "FIFO", "evict the block that entered first",
           lambda r, c: fifo_hits(r.ids, r.n_ids, c)),
    Policy("lfu", "LFU", "evict the least hit block while cached; ties: oldest at that count",
           lambda r, c: lfu_hits(r.ids, r.n_ids, c, r.most_accesses)),
    Policy("length_aware", "LengthAware", "LFU, ties broken by evicting the block deepest in its request",
           lambda r, c: length_aware_hits(r.ids, r.n_ids, c, r.depth)),
    Policy("sieve", "SIEVE", "FIFO queue with a visited bit and a hand that spares visited blocks",
           lambda r, c: sieve_hits(r.ids, r.n_ids, c)),
    Policy("arc", "ARC", "two LRU lists (seen once / twice) with ghost lists tuning their split",
           lambda r, c: arc_hits(r.ids, r.n_ids, c)),
    Policy("s3fifo", "S3-FIFO", "a small FIFO (10%) keeps only blocks hit twice there; main FIFO with reinsertion; ghost ids (90%)",
           lambda r, c: s3fifo_hits(r.ids, r.n_ids, c), admits_below=20),
    Policy("belady", "Belady (OPT)", "evict the block whose next use is farthest (needs the future)",
           lambda r, c: belady_hits(r.ids, r.n_ids, c, r.next_use)),
)}
ONLINE = tuple(name for name in POLICIES if name != "belady")
BOUND = "belady"
_ALIASES = {**{name.replace("_", ""): name for name in POLICIES},
            "opt": "belady", "min": "belady", "lengthawarecache": "length_aware"}


def replay_of(trace: Trace) -> Replay:
    """Prepare a trace for replay; a trace without block ids or accesses is an InputError."""
    require(trace.has_block_ids, "this trace has no block ids (hash_ids): cache replay needs them",
            field="hash_ids")
    require(len(trace.blocks) > 0, "this trace has no block accesses: it is empty")
    require(len(trace.blocks) < MAX_ACCESSES, f"{len(trace.blocks):,} block accesses; the simulators take "
            f"fewer than {MAX_ACCESSES:,}")
    _, ids = np.unique(trace.blocks, return_inverse=True)
    ids = ids.astype(np.int64).reshape(-1)
    return Replay(ids, int(ids.max()) + 1, np.asarray(trace.offsets, dtype=np.int64),
                  trace.column("timestamp").astype(np.int64, copy=False), trace.block_size)


def coarsen(trace: Trace, factor: int) -> Trace:
    """The same trace seen by a cache whose blocks are ``factor`` trace blocks long.

    Hash ids are chained (block k's id names the whole prefix up to k), so a coarse block is
    named by the id of its last fine block; a request's partial last group is a block too.
    """
    require(isinstance(factor, int) and factor >= 1, f"block-size factor must be a positive integer, got {factor!r}",
            field="block_size")
    if factor == 1 or not trace.has_block_ids:
        return trace
    counts = np.diff(trace.offsets)
    depth = np.arange(len(trace.blocks)) - np.repeat(trace.offsets[:-1], counts)
    last = np.repeat(counts - 1, counts)
    keep = ((depth + 1) % factor == 0) | (depth == last)
    new_counts = -(-counts // factor)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(new_counts, out=offsets[1:])
    requests = trace.requests.copy()
    requests["n_blocks"] = new_counts
    return Trace(requests, trace.blocks[keep], offsets, trace.block_size * factor, True,
                 trace.name, trace.warnings)


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
            raise InputError(f"unknown policy '{quote(str(raw).strip())}'; choose from {', '.join(POLICIES)}",
                             field="policies")
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
            raise InputError(f"capacity '{quote(raw)}' is not a number of blocks (e.g. 1000, 10k, inf)",
                             field="capacities")
        value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
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
    require(len(caps) <= MAX_CAPACITIES, f"at most {MAX_CAPACITIES} capacities, got {len(caps)}",
            field="capacities")
    return tuple(caps)


def log_capacities(low: int, high: int, points: int) -> tuple[int, ...]:
    """About ``points`` whole capacities spaced evenly on a log scale from ``low`` to ``high``."""
    require(isinstance(low, (int, np.integer)) and low >= 1, f"smallest capacity must be at least 1, got {low}",
            field="capacity")
    require(high >= low, f"largest capacity {high} is below the smallest {low}", field="capacity")
    require(2 <= points <= MAX_CAPACITIES, f"points must be in 2..{MAX_CAPACITIES}, got {points}", field="points")
    grid = np.unique(np.round(np.geomspace(low, high, points)).astype(np.int64))
    return tuple(int(c) for c in grid)


def hit_mask(replay: Replay, policy: str, capacity: float | int) -> np.ndarray:
    """Which accesses hit, for one policy and capacity (``INFINITE`` = never evict)."""
    spec = POLICIES[parse_policies([policy])[0]]
    capacity = parse_capacity(capacity)
    if spec.never_evicts(replay, capacity):
        return replay.seen_before
    return spec.hits(replay, int(capacity))


@dataclass(frozen=True)
class Count:
    """One (policy, capacity) of a sweep: its hits in both counting modes."""

    policy: str
    capacity: float | int
    accesses: int
    hits: int
    prefix_hits: int


def _count(replay: Replay, policy: str, capacity: float | int) -> Count:
    hit = hit_mask(replay, policy, capacity)
    return Count(policy, capacity, replay.accesses, int(np.count_nonzero(hit)),
                 int(prefix_hits(hit, replay.offsets)))


def counts(source: Trace | Replay, policies: Iterable[str], capacities: Iterable[float | int], *,
           progress: Callable[[float], None] | None = None, workers: int | None = None) -> list[Count]:
    """Hits in both counting modes for every (policy, capacity), policies in the given order and
    capacities ascending. Simulations run on ``workers`` threads (default: one per core) and
    ``progress(fraction_done)`` is called from the calling thread as they finish.
    """
    replay = source if isinstance(source, Replay) else replay_of(source)
    names = parse_policies(policies)
    caps = parse_capacities(capacities)
    if "lru" in names:
        replay.stack_distances  # noqa: B018 -- one pass for the whole LRU curve, before the pool
    jobs = [(p, c) for p in names for c in caps]
    results: dict[tuple[str, float | int], Count] = {}
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_count, replay, p, c) for p, c in jobs]
        for done, future in enumerate(as_completed(futures), start=1):
            result = future.result()
            results[(result.policy, result.capacity)] = result
            if progress is not None:
                progress(done / len(jobs))
    return [results[job] for job in jobs]


def sweep(source: Trace | Replay, policies: Iterable[str], capacities: Iterable[float | int], *,
          progress: Callable[[float], None] | None = None, workers: int | None = None) -> pd.DataFrame:
    """``counts`` as a table: columns ``policy, capacity, accesses, hits, prefix_hits``."""
    import pandas as pd

    rows = counts(source, policies, capacities, progress=progress, workers=workers)
    return pd.DataFrame({
        "policy": [r.policy for r in rows],
        "capacity": np.array([r.capacity for r in rows], dtype=float),
        "accesses": np.array([r.accesses for r in rows], dtype=np.int64),
        "hits": np.array([r.hits for r in rows], dtype=np.int64),
        "prefix_hits": np.array([r.prefix_hits for r in rows], dtype=np.int64),
    })


def curve_of(swept: pd.DataFrame, prefix: bool = False) -> pd.DataFrame:
    """A sweep as a hit curve: ``policy, capacity, hits, accesses, hit_ratio`` in one counting mode."""
    import pandas as pd

    hits = swept["prefix_hits" if prefix else "hits"]
    return pd.DataFrame({
        "policy": swept["policy"], "capacity": swept["capacity"], "hits": hits,
        "accesses": swept["accesses"], "hit_ratio": hits / swept["accesses"],
    })


def hit_curve(trace: Trace, policies: Iterable[str], capacities: Iterable[float | int],
              prefix: bool = False, sample: str | float = "exact") -> pd.DataFrame:
    """Hit ratio against capacity: columns ``policy, capacity, hits, accesses, hit_ratio``.

    ``capacity`` is a float column so that ``inf`` (never evict) fits beside whole numbers.
    ``sample`` is ``"exact"``, ``"auto"`` (a SHARDS sample above ``kvviz.eviction.shards.AUTO_ABOVE``
    accesses) or a rate: a sampled curve (``kvviz.eviction.shards``) has LRU exact, the other policies
    estimated, and the columns ``rate`` and ``represented`` besides. Prefix counting needs every
    block of a request, so it is always exact.
    """
    rate = sampling_rate(sample, len(trace.blocks), prefix)
    if rate is None:
        return curve_of(sweep(trace, policies, capacities), prefix)
    from kvviz.eviction.shards import sampled_curve

    result = sampled_curve(trace, policies, capacities, rate)
    return result.curve.drop(columns="sampled_capacity").assign(rate=result.rate)


def sampling_rate(sample: str | float, accesses: int, prefix: bool = False) -> float | None:
    """The SHARDS rate ``hit_curve`` replays at for a ``sample`` setting, ``None`` for exact
    (``kvviz.eviction.shards.chosen_rate``; "exact" and prefix counting decide without importing it)."""
    if prefix or str(sample).strip().lower() == "exact":
        return None
    from kvviz.eviction.shards import chosen_rate

    return chosen_rate(sample, accesses)


def format_capacity(capacity: float) -> str:
    """``1000`` for a whole capacity, ``inf`` for the infinite cache."""
    return "inf" if capacity == INFINITE else str(int(capacity))


SAMPLED_COLUMNS = ("represented", "rate", "error_estimate")
"""The columns a sampled curve's CSV adds (``hit_curve`` with a rate): whether the sample can stand
for the capacity (``kvviz.eviction.shards``: at least 100 sampled blocks, 2,000 for SIEVE), the rate, and
the policy's measured error estimate. A capacity not represented is still printed, marked false."""


def curve_csv(curve: pd.DataFrame, gib_per_block: float | None = None) -> str:
    """The curve as CSV with header ``policy,capacity,hits,accesses,hit_ratio``; then ``capacity_gib``
    (the KV of that many blocks) when ``gib_per_block`` is given, and ``SAMPLED_COLUMNS`` when the
    curve was sampled (it has a ``rate`` column)."""
    sampled = "rate" in curve
    header = (*CURVE_COLUMNS, *(("capacity_gib",) if gib_per_block is not None else ()), *(SAMPLED_COLUMNS if sampled else ()))
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
    """``counts`` as the CSV of ``curve_csv(hit_curve(...))``, in one counting mode."""
    lines = [",".join(CURVE_COLUMNS)]
    for r in rows:
        hits = r.prefix_hits if prefix else r.hits
        lines.append(_row(r.policy, r.capacity, hits, r.accesses, hits / r.accesses))
    return "\n".join(lines) + "\n"


def _row(policy: str, capacity: float, hits: int, accesses: int, ratio: float) -> str:
    return f"{policy},{format_capacity(capacity)},{hits},{accesses},{ratio:.6f}"


@dataclass(frozen=True)
class Simulation:
    """One policy at one capacity, request by request."""

    policy: str
    capacity: float | int
    requests: pd.DataFrame      # timestamp (ms), accesses, hits, prefix_hits per request

    @property
    def accesses(self) -> int:
        return int(self.requests["accesses"].sum())

    def hit_ratio(self, prefix: bool = False) -> float:
        hits = self.requests["prefix_hits" if prefix else "hits"].sum()
        return float(hits / self.accesses) if self.accesses else 0.0

    def over_time(self, window_s: float | None = None, prefix: bool = False) -> pd.DataFrame:
        """Hit ratio per time window: columns ``time_s`` (window start), ``accesses``, ``hit_ratio``.

        The default window splits the trace's time span into about 40 windows of a round length.
        """
        ts = self.requests["timestamp"].to_numpy() / 1000.0
        span = float(ts.max() - ts.min()) if len(ts) else 0.0
        window = window_s or nice_window(span)
        require(window > 0, f"window must be positive, got {window}", field="window_s")
        start = (ts - ts.min()) // window * window + ts.min()
        grouped = (self.requests.assign(time_s=start)
                   .groupby("time_s", sort=True)[["accesses", "hits", "prefix_hits"]].sum())
        hits = grouped["prefix_hits" if prefix else "hits"]
        import pandas as pd

        return pd.DataFrame({"time_s": grouped.index.to_numpy(), "accesses": grouped["accesses"].to_numpy(),
                             "hit_ratio": (hits / grouped["accesses"].where(grouped["accesses"] > 0)).to_numpy()})


def nice_window(span_s: float, windows: int = 40) -> float:
    """A round window length (1, 2 or 5 × 10^k seconds) giving about ``windows`` windows."""
    if span_s <= 0:
        return 1.0
    raw = span_s / windows
    exp = 10 ** math.floor(math.log10(raw))
    return float(next(m * exp for m in (1, 2, 5, 10) if m * exp >= raw))


def simulate(source: Trace | Replay, policy: str, capacity: float | int) -> Simulation:
    """Replay one policy at one capacity and keep the hits of every request."""
    import pandas as pd

    replay = source if isinstance(source, Replay) else replay_of(source)
    full, prefix = hits_per_request(hit_mask(replay, policy, capacity), replay.offsets)
    frame = pd.DataFrame({"timestamp": replay.timestamps_ms, "accesses": np.diff(replay.offsets),
                          "hits": full, "prefix_hits": prefix})
    return Simulation(parse_policies([policy])[0], parse_capacity(capacity), frame)


def winners(curve: pd.DataFrame, policies: Sequence[str] = ONLINE) -> pd.DataFrame:
    """For each capacity, the online policy with the most hits (first listed wins a tie)."""
    online = curve[curve["policy"].isin(policies)]
    rank = {name: i for i, name in enumerate(policies)}
    online = online.assign(_rank=online["policy"].map(rank)).sort_values(["capacity", "hit_ratio", "_rank"],
                                                                          ascending=[True, False, True])
    return online.groupby("capacity", sort=True).head(1).drop(columns="_rank").reset_index(drop=True)


# Mooncake v3 (arXiv 2407.00079) §4.2, Table 1: block hit ratio of one global cache pool replaying
# Mooncake's one-hour trace of 23,608 requests (512-token blocks), by policy and capacity.
MOONCAKE_TABLE1: dict[str, dict[float, float]] = {
    "lru": {1000: 0.30, 10000: 0.40, 30000: 0.48, 50000: 0.50, 100000: 0.51, INFINITE: 0.51},
    "lfu": {1000: 0.30, 10000: 0.35, 30000: 0.43, 50000: 0.49, 100000: 0.51, INFINITE: 0.51},
    "length_aware": {1000: 0.30, 10000: 0.35, 30000: 0.42, 50000: 0.48, 100000: 0.50, INFINITE: 0.51},
}
TABLE1_CAPACITIES: tuple[float, ...] = tuple(MOONCAKE_TABLE1["lru"])


TABLE1_TOLERANCE = 0.10    # Table 1 prints two decimals; a tenth of the paper's value is "the same shape"


def paper_rows(curve: pd.DataFrame) -> list[dict[str, str]]:
    """Mooncake's Table 1 beside this trace's curve at the same capacities, with a status each.

    ``curve`` must hold lru, lfu and length_aware at ``TABLE1_CAPACITIES``. One row per capacity
    (``kvviz.common.paper`` columns): the paper's and this trace's LRU / LFU / LengthAware hit
    ratios and the best of the three in each; it *agrees* when all three are within
    ``TABLE1_TOLERANCE`` of the paper's.
    """
    policies = tuple(MOONCAKE_TABLE1)
    at = curve.set_index(["policy", "capacity"])["hit_ratio"]
    rows = []
    for cap in TABLE1_CAPACITIES:
        reported = [MOONCAKE_TABLE1[p][cap] for p in policies]
        here = [float(at[(p, cap)]) for p in policies]
        rows.append(paper.close(
            f"hit ratio, {'∞' if cap == INFINITE else f'{int(cap):,}'} blocks (LRU / LFU / LengthAware)",
            " / ".join(f"{v:.2f}" for v in reported) + f" (best: {_best(policies, reported)})",
            " / ".join(f"{v:.2f}" for v in here) + f" (best: {_best(policies, here)})",
            list(zip(reported, here)), TABLE1_TOLERANCE))
    return rows


def _best(policies: Sequence[str], values: Sequence[float]) -> str:
    top = max(values)
    names = [POLICIES[p].label for p, v in zip(policies, values) if round(v, 2) == round(top, 2)]
    return "tie" if len(names) == len(policies) else " = ".join(names)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) every policy kernel on a tiny trace."""
    ids = np.array([0, 1, 0, 2, 1, 0], dtype=np.int64)
    tiny = Replay(ids, 3, np.array([0, 3, 6], dtype=np.int64), np.zeros(2, dtype=np.int64), 1)
    for name in POLICIES:
        _count(tiny, name, 2)
    _count(tiny, "s3fifo", 20)


TIE = "tie"


@dataclass(frozen=True)
class Findings:
    """What a hit curve says, in numbers: who wins where, the gap to OPT, where policies stop mattering."""

    leaders: tuple[tuple[float, str, float], ...]   # (capacity, best online policy or TIE, hit ratio) at low/mid/high
    lead_changes: int                               # how often the best online policy changes along the curve
    widest_gap: tuple[float, float]                 # (capacity, Belady minus the best online hit ratio)
    ceiling: float                                  # the infinite-cache hit ratio
    converged_at: float | None                      # first capacity where every policy is within 0.005 of it


def findings(curve: pd.DataFrame, policies: Sequence[str]) -> Findings:
    """Summarise a curve that holds ``policies``, ``belady`` and the ``INFINITE`` capacity."""
    finite = curve[np.isfinite(curve["capacity"])]
    best = winners(finite, policies)
    picks = sorted({0, len(best) // 2, len(best) - 1}) if len(best) else []
    spread = finite[finite["policy"].isin(policies)].groupby("capacity")["hit_ratio"].agg(np.ptp)
    leaders = tuple((float(c), TIE if len(policies) > 1 and spread[c] == 0 else str(p), float(r))
                    for c, p, r in (best.iloc[i][["capacity", "policy", "hit_ratio"]] for i in picks))
    changes = int((best["policy"] != best["policy"].shift()).sum() - 1) if len(best) else 0
    bound = finite[finite["policy"] == BOUND].set_index("capacity")["hit_ratio"]
    gaps = [(float(c), float(bound.get(c, r) - r)) for c, r in zip(best["capacity"], best["hit_ratio"])]
    ceiling = float(curve[curve["capacity"] == INFINITE]["hit_ratio"].iloc[0])
    worst = finite[finite["policy"].isin(policies)].groupby("capacity")["hit_ratio"].min()
    close = worst[worst >= ceiling - 0.005]
    return Findings(leaders, max(changes, 0), max(gaps, key=lambda g: g[1]) if gaps else (math.nan, 0.0),
                    ceiling, float(close.index[0]) if len(close) else None)
