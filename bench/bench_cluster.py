"""Timings of the Mooncake cluster simulators, and the rates their work budgets use.

* one hour of simulated time at 2x overload with 6 prefill instances: <= 1 s per policy;
* the four-scheduler comparison over a 12,000-request trace: <= 5 s in total;
* the rates behind ``overload.cost`` (arrivals and load samples per CPU second) and
  ``conductor.cost`` (block lookups per CPU second), beside the constants they use.

Run: ``.venv/bin/python -m bench.bench_cluster``
"""

from __future__ import annotations

import time

from bench.timing import timed
from kvviz.mooncake import conductor, overload
from kvviz.traces import from_records
from kvviz.traces.workload import WorkloadConfig, generate


def cpu_of(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def overload_rates() -> None:
    config = overload.ClusterConfig()
    for load in (2.0, 4.0):
        arrivals = overload.poisson_arrivals(config, load, 3600, seed=0)
        n = len(arrivals.time_s)
        cpu = cpu_of(lambda: [overload.simulate(arrivals, config, p) for p in overload.POLICIES])
        print(
            f"  load {load:g}: {n:,} arrivals x 4 policies in {cpu:.2f} CPU s = "
            f"{4 * n / cpu:,.0f} arrivals/CPU s (budget uses {overload.ARRIVALS_PER_S:,.0f})"
        )
    two = overload.trace_arrivals(from_records([0, 2_592_000_000], [8000, 8000], [100, 100], None), 2.0)
    samples = overload.MAX_SAMPLES
    cpu = cpu_of(lambda: overload.simulate(two, config, "baseline"))
    print(
        f"  two requests 30 days apart: {samples:,} samples in {cpu:.3f} CPU s = {samples / cpu:,.0f} "
        f"samples/CPU s (budget uses {overload.SAMPLES_PER_S:,.0f})"
    )


def main() -> None:
    config = overload.ClusterConfig(prefill_instances=6)
    arrivals = overload.poisson_arrivals(config, 2.0, 3600, seed=0)
    print(
        f"overload: 1 h at 2x capacity, {config.prefill_instances}P+{config.decode_instances}D, "
        f"{len(arrivals.time_s):,} arrivals (target <= 1 s per policy)"
    )
    for policy in overload.POLICIES:
        timed(f"  {policy}", lambda: overload.simulate(arrivals, config, policy))
    heavy = overload.ClusterConfig(prefill_instances=6, decode_instances=8)
    arrivals = overload.poisson_arrivals(heavy, 2.0, 3600, seed=0, mean_input=8000)
    print(f"overload, prefill-heavy mix: 6P+8D, 8k-token prompts, {len(arrivals.time_s):,} arrivals")
    for policy in overload.POLICIES:
        timed(f"  {policy}", lambda: overload.simulate(arrivals, heavy, policy))
    print("overload work-budget rates")
    overload_rates()

    trace = generate(WorkloadConfig(requests=12_000, seed=0))
    cfg = conductor.ConductorConfig(speedup=3.0)
    print(f"schedule: {trace.n_requests:,} requests, {cfg.instances} prefill instances (target <= 5 s for all four)")
    for s in conductor.SCHEDULERS:
        timed(f"  {s}", lambda: conductor.schedule(trace, cfg, s))
    estimate = conductor.cost(trace, cfg, len(conductor.SCHEDULERS))
    cpu = cpu_of(lambda: conductor.compare(trace, cfg))
    print(
        f"  all four: {estimate.units:,.0f} block lookups in {cpu:.2f} CPU s = {estimate.units / cpu:,.0f} "
        f"lookups/CPU s (budget uses {conductor.BLOCK_VISITS_PER_S:,.0f}; estimate {estimate.seconds:.2f} s)"
    )


if __name__ == "__main__":
    main()
