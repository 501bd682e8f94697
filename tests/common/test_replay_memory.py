"""A replay's memory, estimated before it runs, against the peak it reaches.

Each replay runs in a fresh process on a mid-size synthetic trace, read from a file (its distinct blocks
bounded by its accesses) or as a library entry (dense ids: its distinct blocks counted): first on a few
requests (imports, compiled kernels, thread pools), then the resident-memory peak is reset
(``/proc/self/clear_refs``) and the whole trace replayed; what it adds over the resident memory before is
the measured peak. The estimate must be at least that and at most ``ESTIMATE_FACTOR`` times it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvviz.common import budget

ROOT = Path(__file__).resolve().parents[2]
CAPACITIES = [1000, 10000, 30000, 50000, 100000, float("inf")]  # hitcurve's default
MEASURE = r"""
import gc, json, re, sys
from kvviz.common import budget
from kvviz.traces.workload import WorkloadConfig, generate

def status(key):
    return int(re.search(rf"{key}:\s+(\d+)", open("/proc/self/status").read()).group(1)) * 1024

kind, caps, folder = sys.argv[1], json.loads(sys.argv[2].replace("inf", "Infinity")), sys.argv[3]
trace = generate(WorkloadConfig(requests=7000, seed=3, block_size=64))
if folder:  # a library entry: its ids dense, so the estimate counts its distinct blocks
    import os
    os.environ["KVVIZ_TRACES"] = folder
    from kvviz.traces import library
    trace = library.open_entry(library.store(trace, "measured").entry.id)

def run(t):
    if kind == "EVICTION":
        from kvviz.eviction.replay import counts
        from kvviz.eviction.grid import POLICIES
        counts(t, list(POLICIES), caps)
        return len(POLICIES) * len(caps)
    if kind == "PREFIX":
        from kvviz import prefix_cache
        prefix_cache.sweep(t, ["lru", "lfu", "fifo"], caps)
        return 3 * len(caps)
    if kind == "VLLM":
        from kvviz import vllm
        vllm.sweep(t, caps)
        return len(caps)
    if kind == "TIERED":
        from kvviz.tiers import replay
        from kvviz.tiers.config import TierConfig
        replay(t, TierConfig(dram_gib=64.0, ssd_gib=1000.0))
        return 1
    if kind == "CLUSTER":
        from kvviz.cluster.simulate import ClusterConfig, run as serve
        serve(t, "cache-aware", ClusterConfig(instances=8))
        return 8
    if kind == "STATS":
        from kvviz.traces.stats import trace_stats
        trace_stats(t)
        return 1
    from kvviz.traces.reuse import stack_distances
    from kvviz.traces.stats import block_counts
    block_counts(t.blocks)
    stack_distances(t.blocks)
    return 1

run(trace.head(300))
gc.collect()
before = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
runs = run(trace)
peak = status("VmHWM") - before
at_once = runs if kind == "CLUSTER" else None
need = budget.replay_memory(getattr(budget, kind), trace, runs, at_once).need
print(json.dumps({"peak": peak, "need": need, "accesses": len(trace.blocks)}))
"""


def _measured(kind: str, library: str = "") -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, kind, json.dumps(CAPACITIES), library],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's resident-peak reset")
@pytest.mark.parametrize(
    ("kind", "entry"),
    [(kind, False) for kind in ("EVICTION", "PREFIX", "VLLM", "TIERED", "CLUSTER", "STATS", "REUSE")]
    + [(kind, True) for kind in ("PREFIX", "TIERED", "CLUSTER")],  # the tightest when the blocks are counted
)
def test_a_replays_estimate_bounds_its_measured_peak(kind, entry, tmp_path):
    got = _measured(kind, str(tmp_path) if entry else "")
    assert got["accesses"] > 500_000  # a trace large enough that the replay, not the interpreter, is measured
    assert got["peak"] <= got["need"] <= budget.ESTIMATE_FACTOR * got["peak"], got
