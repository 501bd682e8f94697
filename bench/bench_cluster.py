"""Timings of the Mooncake cluster simulators (targets from issue 6).

* one hour of simulated time at 2x overload with 6 prefill instances: <= 1 s per policy;
* the four-scheduler comparison over a 12,000-request trace: <= 5 s in total.

Run: ``.venv/bin/python bench/bench_cluster.py``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvviz import conductor, overload  # noqa: E402
from kvviz.workload import WorkloadConfig, generate  # noqa: E402


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    config = overload.ClusterConfig(prefill_instances=6)
    arrivals = overload.poisson_arrivals(config, 2.0, 3600, seed=0)
    print(f"overload: 1 h at 2x capacity, {config.prefill_instances}P+{config.decode_instances}D, "
          f"{len(arrivals.time_s):,} arrivals (target <= 1 s per policy)")
    for policy in overload.POLICIES:
        print(f"  {policy:9s} {best_of(lambda: overload.simulate(arrivals, config, policy)):.3f} s")
    heavy = overload.ClusterConfig(prefill_instances=6, decode_instances=8)
    arrivals = overload.poisson_arrivals(heavy, 2.0, 3600, seed=0, mean_input=8000)
    print(f"overload, prefill-heavy mix: 6P+8D, 8k-token prompts, {len(arrivals.time_s):,} arrivals")
    for policy in overload.POLICIES:
        print(f"  {policy:9s} {best_of(lambda: overload.simulate(arrivals, heavy, policy)):.3f} s")

    trace = generate(WorkloadConfig(requests=12_000, seed=0))
    cfg = conductor.ConductorConfig(speedup=3.0)
    print(f"schedule: {trace.n_requests:,} requests, {cfg.instances} prefill instances (target <= 5 s for all four)")
    total = 0.0
    for s in conductor.SCHEDULERS:
        t = best_of(lambda: conductor.schedule(trace, cfg, s), repeats=1)
        total += t
        print(f"  {s:9s} {t:.3f} s")
    print(f"  all four  {total:.3f} s")


if __name__ == "__main__":
    main()
