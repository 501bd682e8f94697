"""Benchmark: the exact hit-curve grid at scale, kvviz against libCacheSim 0.3.5, side by side.

    .venv/bin/python -m bench.bench_hitcurve                        # 1.5M requests, ~24M block accesses
    .venv/bin/python -m bench.bench_hitcurve --requests 200000 --no-libcachesim

The trace is ``bench.bench_scale``'s builder (ten generator pieces of 100,000 requests whose blocks
come back every ten pieces), imported into a temporary trace library; neither is timed. The grid is
LRU and FIFO at five capacities (``--policies`` adds any of libCacheSim's seven: LFU, SIEVE, ARC,
S3-FIFO, Belady).

kvviz's side is one fresh process, ``kvviz hitcurve <library id> --sample exact``: interpreter
start, opening and verifying the library entry (its block ids memory-mapped), preparing the replay,
every simulation (one per core) and the CSV. libCacheSim's side reads the same accesses from its
binary format (oracleGeneral, written beforehand) with its hash table sized for the trace
(``hashpower``: the next power of two above the distinct blocks), one simulation per (policy,
capacity) in one process, and only ``process_trace`` is timed: its simulation alone. So neither
side's parsing counts. The ratio is libCacheSim's simulation wall seconds over kvviz's (target: at
least 15 for LRU and FIFO), with the CPU ratio beside it (kvviz runs one simulation per core, libCacheSim one
thread), and every hit count must be equal: a difference ends the run with an error.

Last, ``kvviz hitcurve`` on the bundled example trace with its defaults, run once to warm the
caches and then timed (target: under 2 s wall). CPU seconds are printed beside wall seconds: the
machine may be shared, and the load average is printed with each measurement.
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

from bench.bench_scale import build_trace_file, import_trace
from kvviz.eviction.replay import replay_of
from kvviz.traces import library

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("lru", "fifo", "lfu", "sieve", "arc", "s3fifo", "belady")
DEFAULT_POLICIES = ("lru", "fifo")
CAPACITIES = (10_000, 100_000, 300_000, 1_000_000, 3_000_000)
REQUESTS = 1_500_000
MIN_ACCESSES = 20_000_000
TARGET_RATIO = 15.0
EXAMPLE = "assets/example_trace.jsonl"
EXAMPLE_TARGET_S = 2.0
LIBCACHESIM = """
import json, sys, time
import libcachesim as lcs
path, hashpower, caps = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
classes = {"lru": lcs.LRU, "fifo": lcs.FIFO, "lfu": lcs.LFU, "sieve": lcs.Sieve, "arc": lcs.ARC,
           "s3fifo": lcs.S3FIFO, "belady": lcs.Belady}
hits, seconds, cpu = {}, 0.0, 0.0
for name in sys.argv[4].split(","):
    for cap in caps:
        reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
        cache = classes[name](cap, hashpower=hashpower)
        start, start_cpu = time.perf_counter(), time.process_time()
        miss_ratio, _ = cache.process_trace(reader)
        seconds += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        hits[f"{name},{cap}"] = round((1 - miss_ratio) * reader.get_num_of_req())
print(json.dumps({"hits": hits, "seconds": seconds, "cpu": cpu}))
"""


def timed_process(cmd: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """Run ``cmd`` from the repository root; its stdout, wall seconds and CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, env=env).stdout
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_oracle_general(ids: np.ndarray, path: Path) -> None:
    """libCacheSim's oracleGeneral binary format: time, id, size, next access (or INT64_MAX)."""
    n = len(ids)
    nxt = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    same = ids[order[1:]] == ids[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"], rec["id"], rec["size"], rec["next"] = np.arange(n), ids.astype(np.uint64) + 1, 1, nxt
    rec.tofile(path)


def kvviz_hits(csv: str) -> dict[tuple[str, int], int]:
    """``(policy, capacity) -> hits`` from ``hitcurve``'s CSV."""
    rows = (line.split(",") for line in csv.strip().splitlines()[1:])
    return {(p, int(c)): int(h) for p, c, h, *_ in rows}


def hitcurve_command(trace: str, policies: tuple[str, ...]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kvviz",
        "hitcurve",
        trace,
        "--sample",
        "exact",
        "--policies",
        ",".join(policies),
        "--capacities",
        ",".join(map(str, CAPACITIES)),
    ]


def libcachesim_side(
    trace_ids: np.ndarray, folder: Path, policies: tuple[str, ...]
) -> tuple[dict[tuple[str, int], int], float, float]:
    """libCacheSim over the same accesses: its hits, and its simulation's wall and CPU seconds."""
    path = folder / "trace.oracleGeneral"
    write_oracle_general(trace_ids, path)
    hashpower = max(16, math.ceil(math.log2(int(trace_ids.max()) + 1)))
    print(f"libCacheSim's hash table: hashpower {hashpower}; load average {os.getloadavg()[0]:.1f}", flush=True)
    out = timed_process(
        [sys.executable, "-c", LIBCACHESIM, str(path), str(hashpower), json.dumps(CAPACITIES), ",".join(policies)]
    )[0]
    result = json.loads(out)
    path.unlink()
    hits = {(k.split(",")[0], int(k.split(",")[1])): v for k, v in result["hits"].items()}
    return hits, result["seconds"], result["cpu"]


def at_scale(requests: int, with_libcachesim: bool, policies: tuple[str, ...]) -> None:
    """The grid on the library entry of a ``requests``-request trace, both sides, and the comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jsonl, library = folder / "trace.jsonl", folder / "library"
        _, accesses = build_trace_file(requests, jsonl)
        eid = import_trace(jsonl, library)[0]
        jsonl.unlink()
        os.environ["KVVIZ_TRACES"] = str(library)
        print(
            f"trace: {requests:,} requests, {accesses:,} block accesses, library entry {eid}; "
            f"{', '.join(policies)} x capacities {', '.join(f'{c:,}' for c in CAPACITIES)}; "
            f"cores {os.cpu_count()}",
            flush=True,
        )
        if accesses < MIN_ACCESSES:
            print(f"(below the {MIN_ACCESSES:,} accesses the comparison is specified for)")
        print(f"kvviz, whole process; load average {os.getloadavg()[0]:.1f}", flush=True)
        out, wall, cpu = timed_process(hitcurve_command(eid, policies))
        print(f"  kvviz hitcurve <entry> --sample exact   {wall:7.2f} s wall {cpu:7.2f} s CPU", flush=True)
        if with_libcachesim:
            compare(kvviz_hits(out), (wall, cpu), *libcachesim_side(_dense_ids(eid), folder, policies))


def _dense_ids(eid: str) -> np.ndarray:
    """The library entry's block ids renumbered 0 .. distinct-1 (libCacheSim's ids, minus one)."""
    return replay_of(library.open_entry(eid)).ids


def compare(ours: dict, kvviz_s: tuple[float, float], theirs: dict, wall: float, cpu: float) -> None:
    """The two sides' times and ratios; every hit count must be equal."""
    print(f"  libCacheSim, its simulation alone     {wall:7.2f} s wall {cpu:7.2f} s CPU")
    print(
        f"ratio libCacheSim / kvviz: x{wall / kvviz_s[0]:.1f} wall (target >= {TARGET_RATIO:g}), "
        f"x{cpu / kvviz_s[1]:.1f} CPU (kvviz runs one simulation per core)"
    )
    wrong = [(k, v, ours.get(k)) for k, v in sorted(theirs.items()) if ours.get(k) != v]
    print(f"hit counts equal to libCacheSim's: {len(theirs) - len(wrong)} of {len(theirs)}")
    if wrong:
        raise SystemExit(f"hit counts differ (policy, capacity, libCacheSim, kvviz): {wrong[:5]}")


def example_warm() -> None:
    """``kvviz hitcurve`` on the bundled example trace, with its defaults, once warm."""
    cmd = [sys.executable, "-m", "kvviz", "hitcurve", EXAMPLE]
    timed_process(cmd)
    load = os.getloadavg()[0]
    _, wall, cpu = timed_process(cmd)
    print(
        f"kvviz hitcurve {EXAMPLE}, warm: {wall:.2f} s wall {cpu:.2f} s CPU (target < {EXAMPLE_TARGET_S:g} s wall; "
        f"load average {load:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests in the trace (default: %(default)s)")
    parser.add_argument("--no-libcachesim", action="store_true", help="time kvviz's side only")
    parser.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help=f"comma-separated, of {', '.join(POLICIES)} (default: %(default)s)",
    )
    args = parser.parse_args()
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    if not policies or set(policies) - set(POLICIES):
        parser.error(f"--policies: choose from {', '.join(POLICIES)}")
    at_scale(args.requests, not args.no_libcachesim, policies)
    example_warm()
    print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
