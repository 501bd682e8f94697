"""Benchmark: the whole hit-curve grid (8 policies x 20 log-spaced capacities) on ~300k block accesses.

    .venv/bin/python bench/bench_hitcurve.py                      # synthetic trace, ~290k accesses
    .venv/bin/python bench/bench_hitcurve.py --trace conversation_trace.jsonl
    .venv/bin/python bench/bench_hitcurve.py --no-libcachesim     # kvviz only

Prints kvviz's time per policy (one thread), the whole grid as the page runs it (one thread per
core), peak memory, and — when libcachesim is installed — libCacheSim driven one configuration at a
time on the same accesses (its C trace reader, an oracleGeneral file), the speed ratio, and whether
every hit count agrees. CPU seconds are printed beside wall seconds because the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvviz.eviction import POLICIES, log_capacities, replay_of, sweep, warm_up  # noqa: E402
from kvviz.trace import load_trace  # noqa: E402
from kvviz.workload import WorkloadConfig, generate  # noqa: E402


def _clock():
    return time.perf_counter(), time.process_time()


def _since(start) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def kvviz_times(trace, capacities) -> tuple[dict, object, tuple[float, float]]:
    per_policy = {}
    for name in POLICIES:
        replay = replay_of(trace)                 # fresh: LRU's stack pass is counted in its time
        start = _clock()
        sweep(replay, [name], capacities, workers=1)
        per_policy[name] = _since(start)
    start = _clock()
    frame = sweep(replay_of(trace), list(POLICIES), capacities)
    return per_policy, frame, _since(start)


def write_oracle_general(blocks: np.ndarray, path: str) -> None:
    """libCacheSim's oracleGeneral binary format: time, id, size, next access (or INT64_MAX)."""
    n = len(blocks)
    nxt = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    order = np.argsort(blocks, kind="stable")
    same = blocks[order[1:]] == blocks[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"], rec["id"], rec["size"], rec["next"] = np.arange(n), blocks.astype(np.uint64) + 1, 1, nxt
    rec.tofile(path)


def libcachesim_times(blocks, capacities, hashpower) -> tuple[dict, dict]:
    import libcachesim as lcs

    classes = {"lru": lcs.LRU, "fifo": lcs.FIFO, "lfu": lcs.LFU, "sieve": lcs.Sieve, "arc": lcs.ARC,
               "s3fifo": lcs.S3FIFO, "belady": lcs.Belady}
    times, hits = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.oracleGeneral")
        write_oracle_general(blocks, path)
        for name, cls in classes.items():
            start = _clock()
            for cap in capacities:
                if name == "s3fifo" and cap < 10:        # libCacheSim aborts below 10 blocks
                    continue
                kwargs = {} if hashpower is None else {"hashpower": hashpower}
                reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
                miss_ratio, _ = cls(int(cap), **kwargs).process_trace(reader)
                hits[(name, cap)] = round((1 - miss_ratio) * len(blocks))
            times[name] = _since(start)
    return times, hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a trace file (default: a synthetic trace)")
    parser.add_argument("--requests", type=int, default=18_000, help="synthetic requests (default: %(default)s)")
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--no-libcachesim", action="store_true")
    parser.add_argument("--hashpower", type=int, default=None,
                        help="libCacheSim hash table size 2^N (default: its own, 24)")
    args = parser.parse_args()

    start = _clock()
    warm_up()
    print(f"kernel compile or cache load: {_since(start)[0]:.2f} s")
    trace = (load_trace(args.trace) if args.trace
             else generate(WorkloadConfig(requests=args.requests, seed=0)))
    replay = replay_of(trace)
    capacities = log_capacities(100, replay.n_ids, args.points)
    print(f"trace: {trace.name}, {replay.accesses:,} block accesses, {replay.n_ids:,} distinct; "
          f"{len(capacities)} capacities {capacities[0]:,}..{capacities[-1]:,}; cores {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")

    per_policy, frame, grid = kvviz_times(trace, capacities)
    print("\nkvviz, one thread per policy (wall s / CPU s):")
    for name, (wall, cpu) in per_policy.items():
        print(f"  {name:13s} {wall:7.3f} / {cpu:6.3f}")
    print(f"  {'sum':13s} {sum(w for w, _ in per_policy.values()):7.3f} / {sum(c for _, c in per_policy.values()):6.3f}")
    print(f"whole grid as the page runs it ({os.cpu_count()} threads): {grid[0]:.3f} s wall, {grid[1]:.3f} s CPU "
          f"(target <= 3 s)")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (target <= 1024)")

    if args.no_libcachesim:
        return 0
    try:
        lcs_times, lcs_hits = libcachesim_times(replay.ids, capacities, args.hashpower)
    except ImportError:
        print("\nlibcachesim is not installed: no comparison")
        return 0
    print(f"\nlibCacheSim 0.3.5, one configuration at a time (hashpower {args.hashpower or 'default'}) "
          "(wall s / CPU s, ratio to kvviz by CPU):")
    for name, (wall, cpu) in lcs_times.items():
        ours = per_policy[name][1]
        print(f"  {name:13s} {wall:7.3f} / {cpu:6.3f}   x{cpu / ours:5.1f}")
    total_lcs = sum(c for _, c in lcs_times.values())
    total_ours = sum(per_policy[name][1] for name in lcs_times)
    print(f"  {'sum':13s} {sum(w for w, _ in lcs_times.values()):7.3f} / {total_lcs:6.3f}   x{total_lcs / total_ours:5.1f}"
          " (same seven policies; target >= 5)")
    got = frame.set_index(["policy", "capacity"])["hits"]
    wrong = [(p, c, h, int(got[(p, float(c))])) for (p, c), h in lcs_hits.items() if int(got[(p, float(c))]) != h]
    print(f"hit counts equal to libCacheSim's: {len(lcs_hits) - len(wrong)} of {len(lcs_hits)}"
          + (f"; differ: {wrong[:5]}" if wrong else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
