"""Benchmark: a large trace served by 8 instances behind SGLang's cache-aware router.

    .venv/bin/python -m bench.bench_routers                      # 1M requests (16.5M block accesses)
    .venv/bin/python -m bench.bench_routers --requests 200000 --router round-robin
    .venv/bin/python -m bench.bench_routers --keep trace.jsonl    # build it there once, then reuse it
    .venv/bin/python -m bench.bench_routers --dram-blocks 400000 --storage-blocks 4000000 --shared-storage

The trace is ``bench.bench_scale``'s builder (pieces of 100,000 generated requests whose blocks come
back every ten pieces), read and prepared for replay untimed. Timed: ``kvviz.cluster.run`` over 8
instances of ``--blocks`` blocks (``--engine vllm-lmcache``: vLLM pools, with ``--remote-chunks`` an
LMCache remote backend they share; ``--dram-blocks``: SGLang's HiCache, each instance with that much
host memory, over ``--storage-blocks`` of storage each or, with ``--shared-storage``, one pool). One
warm-up run on the first 2,000 requests comes first, so numba's compile is not counted. Prints wall
and CPU seconds, the process's peak RSS, the blocks found on each tier, the hit ratio and TTFT
percentiles, beside the targets: ≤ 60 s and ≤ 4 GiB for 1M requests.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path

import numpy as np

from bench.bench_scale import build_trace_file
from bench.timing import timed
from kvviz.cluster import ClusterConfig, run
from kvviz.lmcache import LMCacheConfig
from kvviz.prefix_cache import prepare
from kvviz.traces import load_trace

TARGET_S = 60.0
TARGET_GIB = 4.0


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--router", default="cache-aware")
    parser.add_argument("--engine", default="sglang", help="sglang or vllm-lmcache")
    parser.add_argument("--remote-chunks", type=float, default=0.0, help="vllm-lmcache: the shared remote backend")
    parser.add_argument("--dram-blocks", type=int, default=0, help="sglang: each instance's host memory (HiCache)")
    parser.add_argument("--storage-blocks", type=int, default=0, help="with --dram-blocks: HiCache's storage")
    parser.add_argument("--shared-storage", action="store_true", help="the storage is one pool for all instances")
    parser.add_argument("--keep", type=Path, default=None, help="the trace file: built there if missing, else read")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "trace.jsonl"
        if not path.exists():
            timed(f"build {args.requests:,} requests", lambda: build_trace_file(args.requests, path))
        trace = timed("read", lambda: load_trace(path))
    replay = timed("prepare", lambda: prepare(trace))
    print(f"{replay.n_requests:,} requests, {replay.accesses:,} block accesses, {replay.n_nodes:,} prefixes")
    lmcache = LMCacheConfig(remote_chunks=args.remote_chunks)
    config = ClusterConfig(
        instances=args.instances,
        blocks=args.blocks,
        engine=args.engine,
        lmcache=lmcache,
        host_blocks=args.dram_blocks,
        storage_blocks=args.storage_blocks,
        shared_storage=args.shared_storage,
    )
    timed("warm-up (2,000 requests)", lambda: run(trace.head(2000), args.router, config))
    before = peak_gib()
    result = timed(
        f"{args.router} over {args.instances} instances", lambda: run(replay, args.router, config, trace=trace)
    )
    p50, p99 = np.percentile(result.ttft_s, [50, 99])
    found = result.by_instance(args.instances)[["gpu", "dram", "storage"]].sum()
    print(f"blocks found: GPU {found['gpu']:,}, DRAM {found['dram']:,}, storage {found['storage']:,}")
    print(f"hit ratio {result.hit_ratio:.4f}, TTFT p50 {p50:.3f} s p99 {p99:.3f} s, imbalance {result.imbalance:.3f}")
    print(
        f"peak RSS {peak_gib():.2f} GiB (before the run {before:.2f});",
        f"targets ≤ {TARGET_S:.0f} s, ≤ {TARGET_GIB:.0f} GiB",
    )


if __name__ == "__main__":
    main()
