"""Benchmark: what a library entry's dense block ids save a replay, and what reading an entry into
memory costs.

    .venv/bin/python -m bench.bench_dense_ids                  # 1M requests, ~16M block accesses
    .venv/bin/python -m bench.bench_dense_ids --requests 200000

The trace is ``bench.bench_scale``'s builder, imported into a temporary trace library (neither is
timed). A fresh process opens the entry (read into memory and verified; its peak memory printed),
then runs exact LRU and FIFO at ``bench.bench_hitcurve``'s five capacities on it, twice each, in
turn: as the library gives it (ids already 0, 1, 2, … in order of first use, so the replay uses them as they
are) and with the flag cleared (the replay relabels them with ``np.unique``, as it does for a
trace from a file). The hit counts must be equal; the ratio of the best times is printed. The
machine may be shared: the load average is printed with each measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.bench_hitcurve import CAPACITIES
from bench.bench_scale import build_trace_file, import_trace

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = 1_000_000
CHILD = """
import json, os, resource, sys, time
from dataclasses import replace
from kvviz.eviction.replay import counts
from kvviz.traces import library

def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return out, time.perf_counter() - wall, time.process_time() - cpu

caps = json.loads(sys.argv[2])
counts(library.open_entry(sys.argv[1]).head(1000), ["lru", "fifo"], caps)  # compile outside the timings
trace, wall, cpu = timed(lambda: library.open_entry(sys.argv[1]))
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"open (read, checksum, checks): {wall:.2f} s wall {cpu:.2f} s CPU; peak {rss:,.0f} MiB; "
      f"load {os.getloadavg()[0]:.1f}")
hits, best = {}, {}
for _ in range(2):  # alternating, best of two: the machine may be shared
    for label, source in (("dense ids as stored", trace), ("relabelled (np.unique)", replace(trace, ids_dense=False))):
        hits[label], wall, cpu = timed(lambda: counts(source, ["lru", "fifo"], caps))
        print(f"LRU+FIFO x {len(caps)} capacities, {label:24s} {wall:6.2f} s wall {cpu:6.2f} s CPU; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        best[label] = min((wall, cpu), best.get(label, (wall, cpu)))
assert hits["dense ids as stored"] == hits["relabelled (np.unique)"], "hit counts differ"
(dw, dc), (rw, rc) = best["dense ids as stored"], best["relabelled (np.unique)"]
print(f"relabelled / dense, best of two: x{rw / dw:.2f} wall, x{rc / dc:.2f} CPU")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests in the trace (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, folder = Path(tmp) / "trace.jsonl", Path(tmp) / "library"
        _, accesses = build_trace_file(args.requests, jsonl)
        eid = import_trace(jsonl, folder)[0]
        jsonl.unlink()
        print(f"trace: {args.requests:,} requests, {accesses:,} block accesses, library entry {eid}", flush=True)
        env = {**os.environ, "KVVIZ_TRACES": str(folder)}
        subprocess.run([sys.executable, "-c", CHILD, eid, json.dumps(CAPACITIES)], cwd=ROOT, env=env, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
