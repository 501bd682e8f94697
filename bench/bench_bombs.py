"""Benchmark of the decompression-bomb defences and of the memory a large upload costs.

Each gzip and zstd bomb of tests/traces/bombs.py (12 GiB of zeros, of one repeated JSONL line, of one
request with 10^9 ids, of lines carrying 19,532 ids each) is read in its own process twice: as
an upload (``load_trace(bytes, limits=UPLOADS)``, the web path) and by ``python -m kvviz stats
FILE`` (the command line). Then an upload-sized trace (``bench_scale.build_trace_file``) is read
as an upload: plain, about 200 MiB, or with ``--zstd`` compressed at level 3 (6,500,000 requests
make the largest upload, ~1.4 GiB of text in ~190 MiB). Every row prints the wall and CPU
seconds, the process's peak resident memory before the read (imports and the file's bytes) and
after it, and the outcome.

Run: ``.venv/bin/python -m bench.bench_bombs [--requests N] [--zstd]`` (default 900,000 requests).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]

MIB = 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, path: str) -> None:
    """Read ``path`` as ``mode`` ("upload" or "cli") and print one JSON line of what it cost."""
    from kvviz.cli import main
    from kvviz.common.errors import InputError
    from kvviz.traces import UPLOADS, load_trace

    data = Path(path).read_bytes() if mode == "upload" else b""
    before = _peak_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    if mode == "upload":
        try:
            trace = load_trace(data, limits=UPLOADS)
            outcome = f"loaded: {trace.n_requests:,} requests, {len(trace.blocks):,} ids"
        except InputError as exc:
            outcome = f"refused: {exc}"
    else:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(["stats", path])
        outcome = f"exit {rc}: {err.getvalue().strip()}"
    print(
        json.dumps(
            {
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
                "before": before,
                "peak": _peak_mib(),
                "outcome": outcome,
            }
        )
    )


def run(mode: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(label: str, size: int, result: dict) -> None:
    print(
        f"{label:<42} {size / MIB:8.2f} MiB {result['wall']:6.2f} s wall {result['cpu']:6.2f} s CPU "
        f"{result['before']:6.0f} → {result['peak']:5.0f} MiB  {result['outcome'][:110]}",
        flush=True,
    )


def main() -> None:
    from bench_scale import build_trace_file

    from tests.traces.bombs import CONTENTS, PACKERS, bomb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=900_000)
    parser.add_argument("--zstd", action="store_true", help="read the trace compressed with zstd")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; columns: file size, wall, CPU, RSS before → peak, outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for compression in PACKERS:
            for content in CONTENTS:
                path = Path(tmp) / f"bomb.{compression}"
                path.write_bytes(bomb(compression, content))
                for mode in ("upload", "cli"):
                    row(f"{mode}: {compression} of {content}", path.stat().st_size, run(mode, path))
        path = Path(tmp) / "trace.jsonl"
        requests, accesses = build_trace_file(args.requests, path)
        if args.zstd:
            with path.open("rb") as plain, (Path(tmp) / "trace.zst").open("wb") as packed:
                zstandard.ZstdCompressor(level=3).copy_stream(plain, packed)
            path.unlink()
            path = path.with_suffix(".zst")
        row(f"upload: {requests:,} requests, {accesses:,} ids", path.stat().st_size, run("upload", path))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:4])
    else:
        main()
