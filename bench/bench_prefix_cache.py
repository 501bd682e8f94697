"""Benchmark: prefix-cache curves (20 capacities x LRU, LFU, FIFO) against today's block-cache sweep.

    .venv/bin/python -m bench.bench_prefix_cache                   # synthetic, 18,000 requests / ~290k accesses
    .venv/bin/python -m bench.bench_prefix_cache --trace conversation_trace.jsonl

Prints preparing the prefix tree, the prefix sweep and the block sweep (same policies and
capacities, one thread per core, as the pages run them), their ratio, vLLM's block-pool sweep on
the same capacities against one SGLang policy's, and the two curves side by side. Wall and CPU
seconds: the machine is shared.
"""

from __future__ import annotations

import argparse
import time

from bench.timing import timed
from kvviz import prefix_cache, vllm
from kvviz.eviction import curves, grid
from kvviz.eviction import replay as eviction
from kvviz.traces import load_trace
from kvviz.traces.workload import WorkloadConfig, generate

POLICIES = ("lru", "lfu", "fifo")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a trace file (default: a synthetic trace)")
    parser.add_argument(
        "--requests",
        type=int,
        default=18_000,
        help="synthetic requests (default: %(default)s, ~290k accesses like Mooncake's conversation trace)",
    )
    parser.add_argument("--points", type=int, default=20)
    args = parser.parse_args()
    timed("compile or load the kernels", lambda: (eviction.warm_up(), prefix_cache.warm_up(), vllm.warm_up()))
    trace = load_trace(args.trace) if args.trace else generate(WorkloadConfig(requests=args.requests, seed=0))
    block = eviction.replay_of(trace)
    capacities = grid.log_capacities(100, block.n_ids, args.points)
    print(
        f"trace: {trace.n_requests:,} requests, {block.accesses:,} block accesses, {block.n_ids:,} distinct; "
        f"{len(capacities)} capacities {capacities[0]:,}..{capacities[-1]:,}"
    )
    replay = timed("prefix tree: dense nodes and parents", lambda: prefix_cache.prepare(trace))
    t0 = time.process_time()
    prefix = timed("prefix sweep, 3 policies x capacities", lambda: prefix_cache.sweep(replay, POLICIES, capacities))
    t_prefix = time.process_time() - t0
    t0 = time.process_time()
    timed("vLLM block-pool sweep, same capacities", lambda: vllm.sweep(replay, capacities))
    t_pool = time.process_time() - t0
    print(f"vLLM pool / one SGLang policy CPU time: {t_pool / (t_prefix / len(POLICIES)):.2f}x")
    t0 = time.process_time()
    swept = timed(
        "block sweep, same grid (fresh stack distances)",
        lambda: eviction.sweep(eviction.replay_of(trace), POLICIES, capacities),
    )
    t_block = time.process_time() - t0
    print(f"prefix / block CPU time, same grid: {t_prefix / t_block:.2f}x")
    t0 = time.process_time()
    timed(
        "block sweep, the Eviction page's grid (8 policies)",
        lambda: eviction.sweep(eviction.replay_of(trace), grid.POLICIES, capacities),
    )
    print(f"prefix (3 policies) / block page grid (8 policies) CPU time: {t_prefix / (time.process_time() - t0):.2f}x")
    blocks = curves.curve_of(swept, prefix=True).set_index(["policy", "capacity"])["hit_ratio"]
    full = curves.curve_of(swept).set_index(["policy", "capacity"])["hit_ratio"]
    print("\npolicy capacity   prefix-cache  block(prefix mode)  block(all hits)  prefix - block(prefix mode)")
    for row in prefix.itertuples(index=False):
        b = blocks[(row.policy, row.capacity)]
        print(
            f"{row.policy:6s} {int(row.capacity):8,d}   {row.hit_ratio:12.4f}  {b:18.4f}  "
            f"{full[(row.policy, row.capacity)]:15.4f}  {row.hit_ratio - b:+.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
