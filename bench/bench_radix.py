"""Timings of the radix page's work (replaying scripts, drawing one step's tree, a window of 25
trees) and of a whole Mooncake-sized trace through the tree, totals only (``radix --trace``).

Run: .venv/bin/python -m bench.bench_radix
"""

from __future__ import annotations

import resource
import time
from dataclasses import asdict

from kvviz.radix.figures import tree_figure
from kvviz.radix.presets import PRESETS
from kvviz.radix.replay import ReplayConfig, replay
from kvviz.radix.script import parse_text, to_text
from kvviz.radix.trace_replay import replay_trace, script_from_trace
from kvviz.traces.workload import WorkloadConfig, generate

# About the size of Mooncake's conversation trace: ~12,000 requests, ~290,000 block accesses.
MOONCAKE_SIZED = WorkloadConfig(
    requests=12_000, seed=0, doc_tokens=15_000, chat_first_tokens=7_500, oneshot_tokens=12_000, chat_turn_tokens=600
)


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    for key, preset in PRESETS.items():
        config = ReplayConfig(**{**asdict(ReplayConfig()), **preset.suggested})
        t, rep = timed(lambda: replay(preset.script(), config))
        last = rep.tree(rep.n_steps - 1)
        print(f"preset {key:9s} replay {t * 1000:7.1f} ms  steps {rep.n_steps:3d}  nodes(last) {len(last):4d}")
    trace = generate(WorkloadConfig(requests=600, seed=1))
    for n in (50, 200, 500):
        text = to_text(script_from_trace(trace, n, 1000))
        config = ReplayConfig(cache="hiradix", device_capacity=2000, host_capacity=8000)
        t, rep = timed(lambda: replay(parse_text(text), config), repeat=1)
        last = rep.tree(rep.n_steps - 1)
        tf, _ = timed(lambda: tree_figure(last))
        print(
            f"trace {n:4d} requests  replay {t:6.2f} s  steps {rep.n_steps:4d}  node rows {len(rep.nodes):7d}  "
            f"last tree {len(last):4d} nodes, figure {tf * 1000:6.0f} ms"
        )
        t, _ = timed(lambda: replay(parse_text(text), config, snapshots=False), repeat=1)
        print(f"           without snapshots {t:6.2f} s")
        t, _ = timed(lambda: replay(parse_text(text), config, snapshots=range(100, 125)), repeat=1)
        print(f"           a window of 25 trees (steps 100-124) {t:6.2f} s")
    whole = generate(MOONCAKE_SIZED)
    for cache in ("radix", "hiradix"):
        config = ReplayConfig(cache=cache, device_capacity=20_000, host_capacity=80_000)
        wall, cpu = time.perf_counter(), time.process_time()
        result = replay_trace(whole, config)
        print(
            f"whole trace, {cache:7s}: {result.requests:,} requests, {whole.offsets[-1]:,} blocks, "
            f"hit ratio {result.hit_ratio:.3f}, {result.totals['evicted_device']:,} blocks evicted: "
            f"{time.perf_counter() - wall:6.2f} s wall {time.process_time() - cpu:6.2f} s CPU"
        )
    print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
