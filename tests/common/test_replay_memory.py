"""A replay's memory, estimated before it runs, against the peak it reaches.

The replays run on a mid-size synthetic trace, read from a file (its distinct blocks bounded by its
accesses) or as a library entry (dense ids: its distinct blocks counted), one process for each, which
generates the trace once and forks a child for each replay. The child starts as a fresh process would
after the trace is made: it runs the replay on a few requests (imports, compiled kernels, thread pools),
then resets its resident-memory peak (``/proc/self/clear_refs``) and replays the whole trace; what it adds
over the resident memory before is the measured peak. (Warming every replay up in the parent before
forking measured peaks 2-5 MB lower: the children reused memory that the other warm-ups had freed.) The
estimate must be at least that peak and at most ``ESTIMATE_FACTOR`` times it.
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
import gc, json, os, re, sys, traceback
from kvviz.common import budget
from kvviz.traces.workload import WorkloadConfig, generate

def status(key):
    return int(re.search(rf"{key}:\s+(\d+)", open("/proc/self/status").read()).group(1)) * 1024

kinds, caps, folder = sys.argv[1].split(","), json.loads(sys.argv[2].replace("inf", "Infinity")), sys.argv[3]
trace = generate(WorkloadConfig(requests=7000, seed=3, block_size=64))
if folder:  # a library entry: its ids dense, so the estimate counts its distinct blocks
    os.environ["KVVIZ_TRACES"] = folder
    from kvviz.traces import library
    trace = library.open_entry(library.store(trace, "measured").entry.id)

def run(kind, t):
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

def measured(kind):
    run(kind, head)
    gc.collect()
    before = status("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")
    runs = run(kind, trace)
    peak = status("VmHWM") - before
    at_once = runs if kind == "CLUSTER" else None
    need = budget.replay_memory(getattr(budget, kind), trace, runs, at_once).need
    return {"peak": peak, "need": need, "accesses": len(trace.blocks)}

head = trace.head(300)
got = {}
for kind in kinds:
    read, write = os.pipe()
    if os.fork() == 0:
        try:
            os.write(write, json.dumps(measured(kind)).encode())
        except BaseException:
            os.write(write, json.dumps({"error": traceback.format_exc()}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        got[kind] = json.loads(pipe.read())
    os.wait()
print(json.dumps(got))
"""


def _measured(kinds: tuple[str, ...], library: str = "") -> dict[str, dict]:
    """Each kind's peak, estimate and accesses, measured in one process (``library``: the folder to store
    the trace in and open it from as an entry)."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, ",".join(kinds), json.dumps(CAPACITIES), library],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


FROM_A_FILE = ("EVICTION", "PREFIX", "VLLM", "TIERED", "CLUSTER", "STATS", "REUSE")
AS_AN_ENTRY = ("PREFIX", "TIERED", "CLUSTER")  # the tightest when the blocks are counted


@pytest.fixture(scope="module")
def from_a_file() -> dict[str, dict]:
    return _measured(FROM_A_FILE)


@pytest.fixture(scope="module")
def as_an_entry(tmp_path_factory) -> dict[str, dict]:
    return _measured(AS_AN_ENTRY, str(tmp_path_factory.mktemp("library")))


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's resident-peak reset")
@pytest.mark.parametrize(
    ("kind", "entry"), [(kind, False) for kind in FROM_A_FILE] + [(kind, True) for kind in AS_AN_ENTRY]
)
def test_a_replays_estimate_bounds_its_measured_peak(kind, entry, request):
    got = request.getfixturevalue("as_an_entry" if entry else "from_a_file")[kind]
    assert "error" not in got, got["error"]
    assert got["accesses"] > 500_000  # a trace large enough that the replay, not the interpreter, is measured
    assert got["peak"] <= got["need"] <= budget.ESTIMATE_FACTOR * got["peak"], got
