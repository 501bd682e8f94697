"""Benchmark of the trace core on a Mooncake-sized trace (~300,000 block accesses), and of the
JSONL parsers that ingest could use.

Prints the time to generate, write, parse, summarise and compute LRU stack distances, then
parses one JSONL text with the standard library's ``json.loads`` per line (the old loop),
pyarrow's JSON reader (ingest's fast path) and the whole ``load_trace``. Run with ``make bench``
or ``.venv/bin/python -m bench.bench_trace [requests]`` (the README's parser numbers used
1,000,000 requests: ``bench_trace.py 1000000``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.timing import timed
from kvviz.traces import load_trace
from kvviz.traces.reuse import stack_distances
from kvviz.traces.stats import trace_stats
from kvviz.traces.workload import WorkloadConfig, generate


def json_loop(data: bytes) -> int:
    """The old parser's core: one ``json.loads`` per line."""
    import json

    return sum(len(json.loads(line)["hash_ids"]) for line in data.split(b"\n") if line)


def pyarrow_json(data: bytes) -> int:
    """pyarrow's JSON reader with ingest's explicit schema."""
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema(
        [
            ("timestamp", pa.float64()),
            ("input_length", pa.int64()),
            ("output_length", pa.int64()),
            ("hash_ids", pa.list_(pa.int64())),
        ]
    )
    return pj.read_json(
        io.BytesIO(data),
        read_options=pj.ReadOptions(block_size=32 << 20),
        parse_options=pj.ParseOptions(explicit_schema=schema),
    ).num_rows


def main(requests: int = 20_000) -> None:
    if requests > 100_000:  # past the generator's one-call size: bench_scale's pieces
        from bench_scale import build_trace_file

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.jsonl"
            timed(f"build {requests:,} requests (bench_scale pieces)", lambda: build_trace_file(requests, path))
            data = path.read_bytes()
    else:
        trace = timed(f"generate {requests:,} requests", lambda: generate(WorkloadConfig(requests=requests)))
        print(f"{'block accesses':<58} {len(trace.blocks):,}")
        data = timed("to_jsonl", trace.to_jsonl).encode()
    print(f"{'JSONL size':<58} {len(data) / 2**20:.1f} MiB")
    parsed = timed("load_trace (parse + validate)", lambda: load_trace(data))
    timed("trace_stats", lambda: trace_stats(parsed))
    timed("stack_distances (LRU curve)", lambda: stack_distances(parsed.blocks))
    timed("parser: json.loads per line (the old loop)", lambda: json_loop(data))
    timed("parser: pyarrow.json.read_json (ingest's fast path)", lambda: pyarrow_json(data))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
