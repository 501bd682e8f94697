"""Benchmark: the command line's start-up, and the small hit-curve grid beside libCacheSim in the same run.

    .venv/bin/python -m bench.bench_cli --trace conversation_trace.jsonl   # Mooncake's conversation trace
    .venv/bin/python -m bench.bench_cli                                    # a synthetic trace of its size
    .venv/bin/python -m bench.bench_cli --start-up                         # part 1 alone

1. **Start-up**: ``kvviz hitcurve`` on a one-request trace, whole process, against a bare interpreter
   (``python -c pass``): what importing the command's modules and loading its compiled kernels costs
   (target: at most 0.5 s). Beside it, the floor any numba program pays: a one-line ``@njit(cache=True)``
   function loaded from its disk cache and called once in a fresh process, and the gap between the
   two (what kvviz adds). Within the floor, numba's import alone, and what loading numba's CPU target
   costs on top of it (at the first load of cached code numba loads every registry of its CPU target,
   among them ``numba.np.arraymath``, whose BLAS check imports ``scipy.linalg``; numba offers no
   setting to skip it). Then the same function through kvviz's decorator (``kvviz.common.jit``,
   which skips that check), the floor kvviz's commands stand on, and what kvviz adds to it.
2. **The grid**: ``kvviz hitcurve TRACE --sample exact`` with the eight policies at 20 capacities (100
   blocks to half the distinct blocks, log-spaced, then infinite), whole process (target: at most 1.5 s),
   then libCacheSim 0.3.5 over the same accesses driven one configuration at a time in one process,
   as a user of its Python package would: each (policy, capacity) opens the trace and runs
   ``process_trace``, whole process too (its interpreter, import and trace reading included), with
   its simulation seconds alone beside it. libCacheSim has no LengthAware policy, so it runs the other
   seven; kvviz's grid is also timed with those seven. The ratio is libCacheSim's wall seconds over
   kvviz's (target: at least 5), and every hit count must be equal.
3. **Per policy**: in this process, each policy's 20 capacities one after another on one core
   (``time.process_time``, kernels loaded first): where the grid's simulation time goes.

Each process runs once to warm the operating system's file cache (and numba's disk cache), then
``--repeat`` times (default 5); the best and the median wall and CPU seconds are printed with the
load average (the machine may be shared: CPU seconds, user and system, are nearer what an idle
machine would take, on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from bench.bench_hitcurve import LIBCACHESIM, ROOT, timed_process, write_oracle_general
from kvviz.eviction.grid import POLICIES, log_capacities
from kvviz.eviction.replay import counts, replay_of
from kvviz.traces import load_trace
from kvviz.traces.workload import WorkloadConfig, generate

SYNTHETIC_REQUESTS = 18_000  # about the conversation trace's 288,500 block accesses
POINTS = 19  # finite capacities; with inf, 20
START_TARGET_S, GRID_TARGET_S, TARGET_RATIO = 0.5, 1.5, 5.0
ONE_REQUEST = '{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [0, 1]}\n'


REPEAT = 5
FLOOR = "import numba\n@numba.njit(cache=True)\ndef one(x):\n    return x + 1\none(1)\n"
"""The least a numba program pays to start: one cached compiled function, loaded and called."""
KVVIZ_FLOOR = "from kvviz.common.jit import kernel\n@kernel\ndef one(x):\n    return x + 1\none(1)\n"
"""The same through kvviz's decorator, which loads numba without its BLAS check."""


@dataclass(frozen=True)
class Timing:
    """A command's timed runs: best and median wall and CPU seconds."""

    wall: float
    cpu: float
    wall_median: float
    cpu_median: float

    def __sub__(self, other: Timing) -> Timing:
        return Timing(*(a - b for a, b in zip(astuple(self), astuple(other))))


def timed(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[str, Timing]:
    """Run ``cmd`` once to warm the caches, then ``repeat`` times: its last stdout and its timing."""
    timed_process(cmd, env)
    runs = [timed_process(cmd, env) for _ in range(repeat)]
    walls, cpus = [r[1] for r in runs], [r[2] for r in runs]
    return runs[-1][0], Timing(min(walls), min(cpus), statistics.median(walls), statistics.median(cpus))


def report(label: str, t: Timing, target: float | None = None) -> None:
    goal = f" (target <= {target:g} s)" if target else ""
    print(
        f"  {label:<50} {t.wall:5.2f} ({t.wall_median:5.2f}) s wall {t.cpu:5.2f} ({t.cpu_median:5.2f}) s CPU"
        f"{goal}  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def start_up(folder: Path, repeat: int) -> None:
    """A one-request ``hitcurve`` against a bare interpreter and against numba's floor."""
    tiny = folder / "one.jsonl"
    tiny.write_text(ONE_REQUEST)
    (folder / "floor.py").write_text(FLOOR)
    (folder / "kvviz_floor.py").write_text(KVVIZ_FLOOR)
    floor_env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "numba-cache")}
    python = [sys.executable, "-c"]
    _, bare = timed([*python, "pass"], repeat)
    _, numpy_only = timed([*python, "import numpy"], repeat)
    _, numba_only = timed([*python, "import numba"], repeat)
    _, floor = timed([sys.executable, str(folder / "floor.py")], repeat, floor_env)
    kvviz_env = {**floor_env, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    _, kvviz_floor = timed([sys.executable, str(folder / "kvviz_floor.py")], repeat, kvviz_env)
    _, kvviz = timed([sys.executable, "-m", "kvviz", "hitcurve", str(tiny)], repeat)
    print(f"start-up: best (median) of {repeat} runs")
    report("python -c pass", bare)
    report("kvviz hitcurve <one request>", kvviz)
    report("  imports and compiled-code loading (difference)", kvviz - bare, START_TARGET_S)
    report("numba's floor: one cached @njit function, called", floor)
    report("  of which numpy's import", numpy_only - bare)
    report("  of which numba's import (numpy's included)", numba_only - bare)
    report("  of which numba's CPU target, at the first load", floor - numba_only)
    report("  what kvviz adds to the floor (difference)", kvviz - floor)
    report("the same function through kvviz's decorator", kvviz_floor)
    report("  what kvviz adds to that floor (difference)", kvviz - kvviz_floor)


def hits_of(csv: str) -> dict[tuple[str, float], int]:
    """``(policy, capacity) -> hits`` from ``hitcurve``'s CSV (capacity ``inf`` included)."""
    rows = (line.split(",") for line in csv.strip().splitlines()[1:])
    return {(p, float(c)): int(h) for p, c, h, *_ in rows}


def grid(trace_path: str, capacities: list[int], repeat: int) -> tuple[dict[tuple[str, float], int], float, list[str]]:
    """kvviz's whole-process grid, eight policies and libCacheSim's seven: the seven's hits and best wall seconds."""
    caps = ",".join(map(str, capacities)) + ",inf"
    cmd = [sys.executable, "-m", "kvviz", "hitcurve", trace_path, "--sample", "exact", "--capacities", caps]
    _, eight = timed(cmd, repeat)
    report(f"kvviz hitcurve, {len(POLICIES)} policies x {len(capacities) + 1} capacities", eight, GRID_TARGET_S)
    seven = [p for p in POLICIES if p != "length_aware"]
    out, t7 = timed([*cmd, "--policies", ",".join(seven)], repeat)
    report(f"kvviz hitcurve, libCacheSim's {len(seven)} policies", t7)
    return hits_of(out), t7.wall, seven


def libcachesim(ids: np.ndarray, capacities: list[int], policies: list[str], folder: Path) -> tuple[dict, float]:
    """libCacheSim's whole process, one configuration at a time: its hits and wall seconds. Its largest
    capacity holds every distinct block, kvviz's ``inf``."""
    path = folder / "trace.oracleGeneral"
    write_oracle_general(ids, path)
    hashpower = max(16, math.ceil(math.log2(int(ids.max()) + 1)))
    caps = [*capacities, int(ids.max()) + 1]  # every distinct block: libCacheSim's "infinite"
    cmd = [sys.executable, "-c", LIBCACHESIM, str(path), str(hashpower), json.dumps(caps), ",".join(policies)]
    out, t = timed(cmd, 1)  # its slowest part: one timed run
    result = json.loads(out)
    report(f"libCacheSim, {len(policies)} x {len(caps)} one at a time, whole process", t)
    report(
        "  of which its simulations alone", Timing(result["seconds"], result["cpu"], result["seconds"], result["cpu"])
    )
    hits = {}
    for key, value in result["hits"].items():
        policy, cap = key.split(",")
        hits[(policy, math.inf if int(cap) == caps[-1] else float(cap))] = value
    return hits, t.wall


def per_policy(replay, capacities: list[int]) -> None:
    """Each policy's CPU seconds for the grid's capacities, one simulation after another."""
    caps = [*capacities, math.inf]
    counts(replay, list(POLICIES), [capacities[0]], workers=1)  # load every kernel first
    print("per policy, in one process (CPU s for its capacities):")
    for policy in POLICIES:
        start = time.process_time()
        counts(replay, [policy], caps, workers=1)
        print(f"  {policy:<14} {time.process_time() - start:6.3f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a trace file (default: a synthetic trace of the conversation trace's size)")
    parser.add_argument(
        "--repeat", type=int, default=REPEAT, help=f"timed runs of each kvviz command (default {REPEAT})"
    )
    parser.add_argument("--start-up", action="store_true", help="measure the start-up only (part 1)")
    args = parser.parse_args()
    if args.start_up and args.trace:
        parser.error("--trace applies to the grid, which --start-up leaves out")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start_up(folder, args.repeat)
        if args.start_up:
            return 0
        if args.trace:
            trace_path = args.trace
        else:
            trace_path = str(folder / "synthetic.jsonl")
            Path(trace_path).write_text(generate(WorkloadConfig(requests=SYNTHETIC_REQUESTS, seed=0)).to_jsonl())
        replay = replay_of(load_trace(trace_path))
        capacities = list(log_capacities(100, replay.n_ids // 2, POINTS))
        print(f"grid: {Path(trace_path).name}, {replay.accesses:,} block accesses, {replay.n_ids:,} distinct")
        ours, wall, policies = grid(trace_path, capacities, args.repeat)
        theirs, their_wall = libcachesim(replay.ids, capacities, policies, folder)
        per_policy(replay, capacities)
    print(f"ratio libCacheSim / kvviz: x{their_wall / wall:.1f} wall (target >= {TARGET_RATIO:g})")
    wrong = [(k, v, ours.get(k)) for k, v in sorted(theirs.items()) if ours.get(k) != v]
    print(f"hit counts equal to libCacheSim's: {len(theirs) - len(wrong)} of {len(theirs)}")
    if wrong:
        raise SystemExit(f"hit counts differ (policy, capacity, libCacheSim, kvviz): {wrong[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
