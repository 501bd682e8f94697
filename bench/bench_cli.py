"""Benchmark: the command line's start-up, and the small hit-curve grid beside libCacheSim in the same run.

    .venv/bin/python -m bench.bench_cli --trace conversation_trace.jsonl   # Mooncake's conversation trace
    .venv/bin/python -m bench.bench_cli                                    # a synthetic trace of its size

1. **Start-up**: ``kvviz hitcurve`` on a one-request trace, whole process, against a bare interpreter
   (``python -c pass``): what importing the command's modules and loading its compiled kernels costs
   (target: at most 0.5 s).
2. **The grid**: ``kvviz hitcurve TRACE --sample exact`` with the eight policies at 20 capacities (100
   blocks to half the distinct blocks, log-spaced, then infinite), whole process (target: at most 1.5 s),
   then libCacheSim 0.3.5 over the same accesses driven one configuration at a time in one process,
   as a user of its Python package would: each (policy, capacity) opens the trace and runs
   ``process_trace``, whole process too (its interpreter, import and trace reading included), with
   its simulation seconds alone beside it. libCacheSim has no LengthAware policy, so it runs the other
   seven; kvviz's grid is also timed with those seven. The ratio is libCacheSim's wall seconds over
   kvviz's (target: at least 5), and every hit count must be equal.

Each process runs once to warm the operating system's file cache, then is timed; wall and CPU seconds
are printed with the load average (the machine may be shared: CPU seconds are what an idle machine
would take, on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.bench_hitcurve import LIBCACHESIM, timed_process, write_oracle_general
from kvviz.eviction.grid import POLICIES, log_capacities
from kvviz.eviction.replay import replay_of
from kvviz.traces import load_trace
from kvviz.traces.workload import WorkloadConfig, generate

SYNTHETIC_REQUESTS = 18_000  # about the conversation trace's 288,500 block accesses
POINTS = 19  # finite capacities; with inf, 20
START_TARGET_S, GRID_TARGET_S, TARGET_RATIO = 0.5, 1.5, 5.0
ONE_REQUEST = '{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [0, 1]}\n'


def best_of_warm(cmd: list[str]) -> tuple[str, float, float]:
    """Run ``cmd`` once to warm the file cache, then once timed: its stdout, wall and CPU seconds."""
    timed_process(cmd)
    return timed_process(cmd)


def report(label: str, wall: float, cpu: float, target: float | None = None) -> None:
    goal = f" (target <= {target:g} s)" if target else ""
    print(f"  {label:<52} {wall:6.2f} s wall {cpu:6.2f} s CPU{goal}  load {os.getloadavg()[0]:.1f}", flush=True)


def start_up(folder: Path) -> None:
    """A one-request ``hitcurve`` against a bare interpreter."""
    tiny = folder / "one.jsonl"
    tiny.write_text(ONE_REQUEST)
    _, bare_wall, bare_cpu = best_of_warm([sys.executable, "-c", "pass"])
    _, wall, cpu = best_of_warm([sys.executable, "-m", "kvviz", "hitcurve", str(tiny)])
    print("start-up:")
    report("python -c pass", bare_wall, bare_cpu)
    report("kvviz hitcurve <one request>", wall, cpu)
    report("  imports and compiled-code loading (difference)", wall - bare_wall, cpu - bare_cpu, START_TARGET_S)


def hits_of(csv: str) -> dict[tuple[str, float], int]:
    """``(policy, capacity) -> hits`` from ``hitcurve``'s CSV (capacity ``inf`` included)."""
    rows = (line.split(",") for line in csv.strip().splitlines()[1:])
    return {(p, float(c)): int(h) for p, c, h, *_ in rows}


def grid(trace_path: str, capacities: list[int]) -> tuple[dict[tuple[str, float], int], float, list[str]]:
    """kvviz's whole-process grid, eight policies and libCacheSim's seven: the seven's hits and wall seconds."""
    caps = ",".join(map(str, capacities)) + ",inf"
    cmd = [sys.executable, "-m", "kvviz", "hitcurve", trace_path, "--sample", "exact", "--capacities", caps]
    _, wall, cpu = best_of_warm(cmd)
    report(f"kvviz hitcurve, {len(POLICIES)} policies x {len(capacities) + 1} capacities", wall, cpu, GRID_TARGET_S)
    seven = [p for p in POLICIES if p != "length_aware"]
    out, wall7, cpu7 = best_of_warm([*cmd, "--policies", ",".join(seven)])
    report(f"kvviz hitcurve, libCacheSim's {len(seven)} policies", wall7, cpu7)
    return hits_of(out), wall7, seven


def libcachesim(ids: np.ndarray, capacities: list[int], policies: list[str], folder: Path) -> tuple[dict, float]:
    """libCacheSim's whole process, one configuration at a time: its hits and wall seconds. Its largest
    capacity holds every distinct block, kvviz's ``inf``."""
    path = folder / "trace.oracleGeneral"
    write_oracle_general(ids, path)
    hashpower = max(16, math.ceil(math.log2(int(ids.max()) + 1)))
    caps = [*capacities, int(ids.max()) + 1]  # every distinct block: libCacheSim's "infinite"
    cmd = [sys.executable, "-c", LIBCACHESIM, str(path), str(hashpower), json.dumps(caps), ",".join(policies)]
    out, wall, cpu = best_of_warm(cmd)
    result = json.loads(out)
    report(f"libCacheSim, {len(policies)} x {len(caps)} one at a time, whole process", wall, cpu)
    report("  of which its simulations alone", result["seconds"], result["cpu"])
    hits = {}
    for key, value in result["hits"].items():
        policy, cap = key.split(",")
        hits[(policy, math.inf if int(cap) == caps[-1] else float(cap))] = value
    return hits, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a trace file (default: a synthetic trace of the conversation trace's size)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start_up(folder)
        if args.trace:
            trace_path = args.trace
        else:
            trace_path = str(folder / "synthetic.jsonl")
            Path(trace_path).write_text(generate(WorkloadConfig(requests=SYNTHETIC_REQUESTS, seed=0)).to_jsonl())
        replay = replay_of(load_trace(trace_path))
        capacities = list(log_capacities(100, replay.n_ids // 2, POINTS))
        print(f"grid: {Path(trace_path).name}, {replay.accesses:,} block accesses, {replay.n_ids:,} distinct")
        ours, wall, policies = grid(trace_path, capacities)
        theirs, their_wall = libcachesim(replay.ids, capacities, policies, folder)
    print(f"ratio libCacheSim / kvviz: x{their_wall / wall:.1f} wall (target >= {TARGET_RATIO:g})")
    wrong = [(k, v, ours.get(k)) for k, v in sorted(theirs.items()) if ours.get(k) != v]
    print(f"hit counts equal to libCacheSim's: {len(theirs) - len(wrong)} of {len(theirs)}")
    if wrong:
        raise SystemExit(f"hit counts differ (policy, capacity, libCacheSim, kvviz): {wrong[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
