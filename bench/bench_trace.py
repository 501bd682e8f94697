"""Benchmark of the trace core on a Mooncake-sized trace (~300,000 block accesses).

Prints the time to generate, write, parse, summarise and compute LRU stack distances. Run with
``make bench`` or ``.venv/bin/python bench/bench_trace.py [requests]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kvviz.reuse import stack_distances  # noqa: E402
from kvviz.stats import trace_stats  # noqa: E402
from kvviz.trace import load_trace  # noqa: E402
from kvviz.workload import WorkloadConfig, generate  # noqa: E402
from timing import timed  # noqa: E402




def main(requests: int = 20_000) -> None:
    trace = timed(f"generate {requests:,} requests", lambda: generate(WorkloadConfig(requests=requests)))
    print(f"{'block accesses':<58} {len(trace.blocks):,}")
    text = timed("to_jsonl", trace.to_jsonl)
    data = text.encode()
    print(f"{'JSONL size':<58} {len(data) / 2**20:.1f} MiB")
    parsed = timed("load_trace (parse + validate)", lambda: load_trace(data))
    timed("trace_stats", lambda: trace_stats(parsed))
    timed("stack_distances (LRU curve)", lambda: stack_distances(parsed.blocks))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
