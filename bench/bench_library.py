"""Benchmark of the trace library's checks on a large entry (default 24,000,000 block accesses).

Prints the time to store the entry (its checksum included), to open it the first time in a
process (read into memory, checksum, array headers and invariants), to open it again (read and
checked again: the bytes a process uses are the bytes it checked), its peak memory, to list the
library cheaply and with every entry read whole (``import --list``), and the array check every
Trace runs when it is built (``array_problem``). Run with ``make bench`` or
``.venv/bin/python -m bench.bench_library [accesses] [requests]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.timing import timed
from kvviz.traces import from_arrays, library
from kvviz.traces.model import array_problem

ROOT = Path(__file__).resolve().parents[1]

OPEN_TWICE = (
    "import sys; from bench.timing import timed; from kvviz.traces import library\n"
    "import resource\n"
    "for label in ('first open in a process', 'second open (read and checked again)'):\n"
    "    timed(label, lambda: library.open_entry(sys.argv[1]))\n"
    "print(f'peak memory of the opening process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB')"
)


def build(accesses: int, requests: int):
    """A trace of ``requests`` requests sharing ``accesses`` int32 block ids."""
    rng = np.random.default_rng(1)
    counts = np.full(requests, accesses // requests, np.int64)
    counts[: accesses - int(counts.sum())] += 1
    frame = {
        "timestamp": np.arange(requests, dtype=np.int64) * 10,
        "input_length": counts * 512,
        "output_length": np.full(requests, 100, np.int64),
    }
    return from_arrays(frame, rng.integers(0, accesses // 4, accesses, dtype=np.int32), counts, name="bench")


def main(argv: list[str]) -> int:
    accesses = int(argv[0]) if argv else 24_000_000
    requests = int(argv[1]) if len(argv) > 1 else accesses // 1000
    trace = timed(f"build a trace of {accesses:,} accesses, {requests:,} requests", lambda: build(accesses, requests))
    timed(
        "array check of a Trace (array_problem)", lambda: array_problem(trace.blocks, trace.offsets, {trace.n_requests})
    )
    with tempfile.TemporaryDirectory() as folder:
        os.environ[library.ROOT_ENV] = folder
        entry = timed("store (write, checksum, meta)", lambda: library.store(trace)).entry
        print(f"entry: {entry.bytes / 1e6:,.1f} MB")
        subprocess.run([sys.executable, "-c", OPEN_TWICE, entry.id], cwd=ROOT, check=True)
        timed("list (descriptions and array headers)", library.entries)
        library._CHECKED.clear()
        timed("list with every entry read whole (import --list)", lambda: library.entries(verify=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
