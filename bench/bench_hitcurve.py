"""Benchmark: a whole hit curve, kvviz against libCacheSim, each as a whole process, side by side.

    .venv/bin/python bench/bench_hitcurve.py                      # synthetic, ~12,000 requests, ~290k accesses
    .venv/bin/python bench/bench_hitcurve.py --trace conversation_trace.jsonl
    .venv/bin/python bench/bench_hitcurve.py --no-libcachesim     # kvviz only

The grid is the one measured on Mooncake's conversation trace: seven policies (libCacheSim's:
LRU, FIFO, LFU, SIEVE, ARC, S3-FIFO, Belady) at 20 log-spaced capacities from 1,000 to 199,526
blocks, plus the infinite cache. kvviz runs as ``python -m kvviz hitcurve FILE --sample exact``
— interpreter start, imports, parsing the JSONL, loading the compiled kernels and every
simulation included. libCacheSim 0.3.5 runs in its own process too, reading the same accesses
from its native binary format (oracleGeneral, written beforehand, untimed) with its hash table
sized for the trace (``hashpower`` = the next power of two above the distinct blocks) and one
simulation per configuration. The ratio is libCacheSim's time over kvviz's (target ≥ 5); every
hit count is compared. CPU seconds are printed beside wall seconds because the machine is
shared, and the sides run in turn ``--rounds`` times, each round with the load average at its
start: the ratio is taken of each side's best (least disturbed) time. Beside them runs the
start-up floor: a process that only imports what ``hitcurve`` cannot do without (numpy,
pyarrow's JSON reader, the policies) and links the kernels' native code
(``kvviz.eviction.policies.native``), which is what any kvviz run pays before its first access (pandas is
not among them: the exact curve never builds a DataFrame, and numba's CPU target is never set up);
libCacheSim's time over it is the best ratio any kernel work could reach. The floor is then
taken apart, one process per step, with what calling one kernel through numba's dispatcher
instead would add, and an in-process breakdown of kvviz's time follows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvviz.eviction.replay import INFINITE, log_capacities, replay_of, sweep  # noqa: E402
from kvviz.eviction.policies.native import link, native_calls  # noqa: E402
from kvviz.traces import load_trace  # noqa: E402
from kvviz.traces.workload import WorkloadConfig, generate  # noqa: E402

POLICIES = ("lru", "fifo", "lfu", "sieve", "arc", "s3fifo", "belady")
# About the size of Mooncake's conversation trace: ~12,000 requests, ~290,000 block accesses.
MOONCAKE_SIZED = WorkloadConfig(requests=12_000, seed=0, doc_tokens=15_000, chat_first_tokens=7_500,
                                oneshot_tokens=12_000, chat_turn_tokens=600)
LIBCACHESIM = """
import json, sys
import libcachesim as lcs
path, hashpower, caps = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
classes = {"lru": lcs.LRU, "fifo": lcs.FIFO, "lfu": lcs.LFU, "sieve": lcs.Sieve, "arc": lcs.ARC,
           "s3fifo": lcs.S3FIFO, "belady": lcs.Belady}
hits = {}
for name in sys.argv[4].split(","):
    for cap in caps:
        reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
        miss_ratio, _ = classes[name](cap, hashpower=hashpower).process_trace(reader)
        hits[f"{name},{cap}"] = (1 - miss_ratio) * reader.get_num_of_req()
print(json.dumps(hits))
"""
POLICY_MODULES = "import numpy as np, pyarrow.json, kvviz.eviction.replay"
LINKED = POLICY_MODULES + "; from kvviz.eviction.policies.native import link; link()"
DISPATCHED = POLICY_MODULES + "; kvviz.eviction.replay.fifo_hits(np.zeros(2, dtype=np.int64), 1, 1)"
# The floor step by step; each process repeats the ones before it. The last row is the other way
# to the kernels: one call through numba's dispatcher sets up numba's CPU target (its numba.np.arraymath
# imports scipy.linalg to look for BLAS) before it loads the kernel from numba's cache.
STARTUP = (("the interpreter", "pass"), ("+ numpy", "import numpy as np"),
           ("+ pyarrow's JSON reader", "import numpy as np, pyarrow.json"),
           ("+ the policies (numba unimported)", POLICY_MODULES), ("+ linking their native code", LINKED))
FLOOR = LINKED


def timed_process(cmd: list[str]) -> tuple[str, float, float]:
    """Run ``cmd``; its stdout, wall seconds and CPU seconds (user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_oracle_general(ids: np.ndarray, path: str) -> None:
    """libCacheSim's oracleGeneral binary format: time, id, size, next access (or INT64_MAX)."""
    n = len(ids)
    nxt = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    same = ids[order[1:]] == ids[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"], rec["id"], rec["size"], rec["next"] = np.arange(n), ids.astype(np.uint64) + 1, 1, nxt
    rec.tofile(path)


def startup() -> None:
    """The start-up floor one step at a time (CPU seconds of a process doing that much)."""
    print("\nstart-up, one process per step (CPU s, the step's own share in brackets):")
    before = 0.0
    for label, code in STARTUP:
        cpu = timed_process([sys.executable, "-c", code])[2]
        print(f"  {label:34s} {cpu:5.2f} ({cpu - before:+.2f})")
        policies, before = before, cpu
    cpu = timed_process([sys.executable, "-c", DISPATCHED])[2]
    print(f"  {'+ one numba dispatcher call instead':34s} {cpu:5.2f} ({cpu - policies:+.2f} over the policies)")


def kvviz_hits(csv: str) -> dict[tuple[str, float], int]:
    rows = (line.split(",") for line in csv.strip().splitlines()[1:])
    return {(p, float(c)): int(h) for p, c, h, *_ in rows}


def breakdown(path: str, capacities: tuple) -> None:
    """Where kvviz's time goes, in this (warm) process."""
    from bench.timing import timed

    print("\nkvviz in-process breakdown:")
    timed("  link the kernels' native code", link)
    trace = timed("  parse the JSONL", lambda: load_trace(path))
    replay = timed("  prepare (dense ids)", lambda: replay_of(trace))
    with native_calls():
        for name in POLICIES:
            timed(f"  {name}, every capacity, one thread", lambda: sweep(replay, [name], capacities, workers=1))
        timed("  the whole grid, one thread per core", lambda: sweep(replay_of(trace), POLICIES, capacities))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a Mooncake JSONL trace (default: a synthetic trace of its size)")
    parser.add_argument("--points", type=int, default=20, help="finite capacities (default: %(default)s)")
    parser.add_argument("--no-libcachesim", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="kvviz and libCacheSim in turn (default: %(default)s)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace or os.path.join(tmp, "trace.jsonl")
        if not args.trace:
            Path(path).write_text(generate(MOONCAKE_SIZED).to_jsonl())
        replay = replay_of(load_trace(path))
        capacities = log_capacities(1000, 199_526, args.points)
        print(f"trace: {path}, {replay.accesses:,} block accesses, {replay.n_ids:,} distinct; "
              f"{len(POLICIES)} policies x {len(capacities)} capacities {capacities[0]:,}..{capacities[-1]:,} "
              f"and inf; cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
        cmd = [sys.executable, "-m", "kvviz", "hitcurve", path, "--sample", "exact", "--policies", ",".join(POLICIES),
               "--capacities", ",".join(map(str, (*capacities, "inf")))]
        timed_process(cmd)                                 # the first run may compile the kernels
        libcachesim = None if args.no_libcachesim else libcachesim_command(replay.ids, capacities, tmp)
        sides = {"kvviz, whole process": cmd, "start-up floor": [sys.executable, "-c", FLOOR]}
        if libcachesim is not None:
            sides["libCacheSim, whole process"] = libcachesim
        best, outputs = rounds(sides, args.rounds)
        if libcachesim is not None:
            compare(best, kvviz_hits(outputs["kvviz, whole process"]), outputs["libCacheSim, whole process"])
        startup()
        breakdown(path, (*capacities, INFINITE))
    print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


def libcachesim_command(ids: np.ndarray, capacities: tuple, tmp: str) -> list[str] | None:
    """The libCacheSim process over the same accesses (written to its binary format, untimed)."""
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        print("libcachesim is not installed: no comparison")
        return None
    og = os.path.join(tmp, "trace.oracleGeneral")
    write_oracle_general(ids, og)
    hashpower = max(16, math.ceil(math.log2(int(ids.max()) + 1)))
    print(f"libCacheSim's hash table: hashpower {hashpower}")
    return [sys.executable, "-c", LIBCACHESIM, og, str(hashpower), json.dumps([int(c) for c in capacities]),
            ",".join(POLICIES)]


def rounds(sides: dict[str, list[str]], n: int) -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    """Each side's process ``n`` times in turn, every time printed; each side's best wall and best
    CPU seconds, and its output."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    outputs = {}
    for k in range(1, n + 1):
        print(f"\nround {k} (load average {os.getloadavg()[0]:.1f}):")
        for name, cmd in sides.items():
            outputs[name], wall, cpu = timed_process(cmd)
            times[name].append((wall, cpu))
            print(f"  {name:28s} {wall:6.2f} s wall {cpu:6.2f} s CPU")
    best = {name: (min(w for w, _ in t), min(c for _, c in t)) for name, t in times.items()}
    print(f"\nbest of {n} (the floor: numpy, pyarrow.json, the policies, their linked native code):")
    for name, (wall, cpu) in best.items():
        print(f"  {name:28s} {wall:6.2f} s wall {cpu:6.2f} s CPU")
    return best, outputs


def compare(best: dict[str, tuple[float, float]], ours: dict, out: str) -> None:
    (kv_wall, kv_cpu), (floor_wall, floor_cpu) = best["kvviz, whole process"], best["start-up floor"]
    wall, cpu = best["libCacheSim, whole process"]
    print(f"ratio libCacheSim / kvviz:  x{wall / kv_wall:.1f} wall, x{cpu / kv_cpu:.1f} CPU (target >= 5)")
    print(f"libCacheSim / start-up floor: x{wall / floor_wall:.1f} wall, x{cpu / floor_cpu:.1f} CPU "
          "(the most any kernel work could reach)")
    theirs = {(k.split(",")[0], float(k.split(",")[1])): round(v) for k, v in json.loads(out).items()}
    wrong = [(k, v, ours[k]) for k, v in theirs.items() if ours[k] != v]
    print(f"hit counts equal to libCacheSim's: {len(theirs) - len(wrong)} of {len(theirs)}"
          + (f"; differ: {wrong[:5]}" if wrong else ""))


if __name__ == "__main__":
    raise SystemExit(main())
