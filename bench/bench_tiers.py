"""Benchmark: a 3-tier replay of a 1M-request trace, and the what-to-buy search on the bundled example.

    .venv/bin/python -m bench.bench_tiers                  # 1,000,000 requests, 24M block accesses
    .venv/bin/python -m bench.bench_tiers --requests 200000

The trace is generated here: each request reads the first blocks of a document drawn by Zipf's law
(shared prefixes) and then blocks of its own, arriving as a Poisson stream. Targets: the replay in
at most 15 s wall (kernels compiled) and 3 GiB, the search on the bundled example in at most 10 s. Wall and
CPU seconds are printed (the machine is shared), and the peak resident memory of this process.
"""

from __future__ import annotations

import argparse
import resource

import numpy as np
import pandas as pd

from bench.timing import timed
from kvviz.prefix_cache.replay import prepare
from kvviz.tiers import TierConfig, plan, replay
from kvviz.traces import Trace, from_arrays, load_trace

EXAMPLE = "assets/example_trace.jsonl"


def synthetic(requests: int, documents: int, shared: int = 20, own: int = 4, seed: int = 0) -> Trace:
    """``requests`` of ``shared + own`` blocks of 512 tokens: a Zipf-drawn document's first blocks, then new ones."""
    rng = np.random.default_rng(seed)
    doc = (rng.zipf(1.1, requests) - 1) % documents
    doc_blocks = doc[:, None] * shared + np.arange(shared)[None, :]
    own_blocks = documents * shared + np.arange(requests * own).reshape(requests, own)
    blocks = np.concatenate([doc_blocks, own_blocks], axis=1).reshape(-1)
    arrivals = np.cumsum(rng.exponential(1000 / 40.0, requests)).astype(np.int64)  # 40 requests/s
    n = shared + own
    frame = pd.DataFrame({"timestamp": arrivals, "input_length": n * 512, "output_length": 100})
    return from_arrays(frame, blocks, np.full(requests, n), block_size=512, name="bench")


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--documents", type=int, default=200_000)
    args = parser.parse_args()
    small = TierConfig("llama-3-8b", "h100", hbm_gib=1.0, dram_gib=2.0, ssd_gib=8.0)
    timed("compile or load the kernels (the bundled example)", lambda: replay(load_trace(EXAMPLE), small))
    trace = timed("generate the trace", lambda: synthetic(args.requests, args.documents))
    prepared = timed("prefix tree: dense nodes and parents", lambda: prepare(trace))
    print(f"trace: {prepared.n_requests:,} requests, {prepared.accesses:,} accesses, {prepared.n_nodes:,} prefixes")
    config = TierConfig("llama-3-8b", "h100", gpus=8, tp=1, dram_gib=1024, ssd_gib=4096, instances=2)
    result = timed("3-tier replay (its GPU-only baseline included) + TTFT", lambda: replay(prepared, config))
    s = result.summary()
    print(f"hits by tier {s['hit_blocks']}, ratio {s['hit_ratio']:.4f} (ceiling {s['ceiling_hit_ratio']:.4f})")
    p90 = {k: s[k]["p90"] for k in ("ttft_s", "ttft_gpu_only_s", "ttft_no_cache_s")}
    print(f"TTFT p90 {p90['ttft_s']:.3f} s (GPU only {p90['ttft_gpu_only_s']:.3f}, none {p90['ttft_no_cache_s']:.3f})")
    print(f"peak memory so far: {peak_gib():.2f} GiB")
    example = load_trace(EXAMPLE)
    found = timed(
        "plan on the bundled example (reaches + grid, 2 processes)",
        lambda: plan(example, TierConfig("llama-3-8b", "h100", hbm_gib=1.0, dram_gib=4.0), 1.0),
    )
    best = None if found.best is None else found.best.to_dict()
    print(f"plan: {found.replays} replays, {len(found.grid)} sizes, best {best}")
    print(f"peak memory: {peak_gib():.2f} GiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
