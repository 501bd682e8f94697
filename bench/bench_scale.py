"""Scale benchmark: a 10M-request synthetic trace through ``import`` and ``stats``.

Builds the trace with ``kvviz.workload.generate`` in pieces of 100,000 requests (see
``build_trace_file``), writes it as Mooncake JSONL,
then runs ``python -m kvviz import`` and ``python -m kvviz stats <id>`` as separate processes and
prints wall time and each process's peak RSS. Targets (issue 11): import ≤ 60 s, stats ≤ 10 s,
peak memory ≤ 4 GiB. ``.venv/bin/python bench/bench_scale.py [requests] [--keep FILE]``.

``build_trace_file(requests, path)`` and ``import_trace(path, library)`` are the pieces other
benchmarks (the sampled hit curve) can call to get the same trace.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvviz.workload import WorkloadConfig, generate  # noqa: E402

CHUNK = 100_000
SEEDS = 10


def build_trace_file(requests: int, path: Path) -> tuple[int, int]:
    """Write ``requests`` synthetic requests to ``path`` (JSONL); returns (requests, block accesses).

    Ten pieces of 100,000 requests (seeds 0-9, ids shifted so pieces never share a block) repeat in
    turn with later timestamps: piece k's blocks come back every ten pieces, like a daily pattern.
    Each piece is formatted once, so building stays cheap next to what it measures.
    """
    pieces = [generate(WorkloadConfig(requests=min(CHUNK, requests), seed=s)) for s in range(min(SEEDS, -(-requests // CHUNK)))]
    id_step = max(int(p.blocks.max()) for p in pieces) + 1
    time_step = max(int(p.requests["timestamp"].iloc[-1]) for p in pieces) + 1000
    tails = [_tails(p, k * id_step) for k, p in enumerate(pieces)]
    written = accesses = 0
    with path.open("w") as out:
        for c in range(-(-requests // CHUNK)):
            piece, tail = pieces[c % len(pieces)], tails[c % len(pieces)]
            n = min(CHUNK, requests - written)
            ts = (piece.requests["timestamp"].to_numpy()[:n] + c * time_step).tolist()
            out.writelines(f'{{"timestamp": {t}, {rest}' for t, rest in zip(ts, tail[:n]))
            written += n
            accesses += int(piece.offsets[n])
    return written, accesses


def _tails(piece, id_shift: int) -> list[str]:
    """Each request's line after its timestamp."""
    ids, offsets = (piece.blocks.astype("int64") + id_shift).tolist(), piece.offsets.tolist()
    inp, outp = piece.requests["input_length"].tolist(), piece.requests["output_length"].tolist()
    return [f'"input_length": {inp[i]}, "output_length": {outp[i]}, '
            f'"hash_ids": [{", ".join(map(str, ids[offsets[i]:offsets[i + 1]]))}]}}\n' for i in range(len(inp))]


_PEAK = ("import resource, sys; from kvviz.cli import main; rc = main(sys.argv[1:]); "
         "u = resource.getrusage(resource.RUSAGE_SELF); "
         "print('PEAK_KIB', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(rc)")


def _run(argv: list[str], env: dict) -> tuple[float, float, float, str]:
    """Run a kvviz command in its own process; (wall s, its CPU s, its peak RSS in GiB, stdout)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"kvviz {argv[0]} failed: {proc.stderr.strip()[-500:]}")
    peak, cpu = next(line.split()[1:] for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB"))
    return wall, float(cpu), int(peak) / 2**20, proc.stdout


def import_trace(path: Path, library: Path) -> tuple[str, float, float, float]:
    """``python -m kvviz import path`` into ``library``; (entry id, wall s, CPU s, peak RSS GiB)."""
    wall, cpu, peak, out = _run(["import", str(path)], _env(library))
    return json.loads(out)["id"], wall, cpu, peak


def _env(library: Path) -> dict:
    return {**os.environ, "KVVIZ_TRACES": str(library), "OPENBLAS_NUM_THREADS": "1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="?", type=int, default=10_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="write the trace here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "scale.jsonl"
        start = time.perf_counter()
        n, accesses = build_trace_file(args.requests, path)
        print(f"{'build':<10} {n:,} requests, {accesses:,} block accesses, {path.stat().st_size / 1e9:.2f} GB "
              f"JSONL in {time.perf_counter() - start:.1f} s", flush=True)
        library = Path(tmp) / "lib"
        eid, wall, cpu, peak = import_trace(path, library)
        print(f"{'import':<10} {wall:7.1f} s wall {cpu:7.1f} s CPU, peak RSS {peak:.2f} GiB  (target 60 s, 4 GiB)",
              flush=True)
        wall, cpu, peak, _ = _run(["stats", eid], _env(library))
        print(f"{'stats':<10} {wall:7.1f} s wall {cpu:7.1f} s CPU, peak RSS {peak:.2f} GiB  (target 10 s, 4 GiB)",
              flush=True)
        print(f"{'machine':<10} load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)


if __name__ == "__main__":
    main()
