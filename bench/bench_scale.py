"""Scale benchmark: a 10M-request synthetic trace through ``import``, ``stats`` and an
8-policy SHARDS-sampled hit curve, and the sampled-vs-exact error table on a 1M-request trace.

Builds the trace with ``kvviz.traces.workload.generate`` in pieces of 100,000 requests (see
``build_trace_file``) as Mooncake JSONL, or reuses one (``--trace FILE``). Each step runs in its own
process and prints wall time, that process's CPU seconds and its peak RSS beside its target:
``import`` ≤ 30 s, ``stats <id>`` ≤ 10 s, the sampled curve ≤ 30 s, every step ≤ 4 GiB.
A step past 6 GiB of RSS or 30 minutes is stopped (the machine is shared).

The sampled curve is ``kvviz.eviction.shards.sampled_curve`` on the library entry, what ``hitcurve --sample
0.01`` runs: LRU exact (the stack-distance pass over every access, as the control variate), the
1% SHARDS-adj sample with the three disjoint 1% samples and the 2% sample of its error bound, on both
cores; it prints each policy's largest bound and flag beside the curve. The error table compares
``kvviz.eviction.shards.sampled_curve`` at a 1% rate (SHARDS-adj alone, and with the LRU correction)
against the exact ``kvviz.eviction.replay.hit_curve`` on the first 1M requests' worth of the same
builder, over the capacities the sample represents (``Sample.represents``); target ≤ 0.01.

``.venv/bin/python -m bench.bench_scale [requests] [--trace FILE | --keep FILE | --entry ID] [--errors-only]``
(``--entry`` times ``stats`` and the sampled curve on an entry of ``$KVVIZ_TRACES`` already
imported, without building, importing or the error table.)

``build_trace_file(requests, path)`` and ``import_trace(path, library)`` are the pieces other
benchmarks can call to get the same trace.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

from kvviz.eviction.grid import RELIABLE_ERROR
from kvviz.traces.workload import WorkloadConfig, generate

ROOT = Path(__file__).resolve().parents[1]

CHUNK = 100_000
SEEDS = 10


def build_trace_file(requests: int, path: Path) -> tuple[int, int]:
    """Write ``requests`` synthetic requests to ``path`` (JSONL); returns (requests, block accesses).

    Ten pieces of 100,000 requests (seeds 0-9, ids shifted so pieces never share a block) repeat in
    turn with later timestamps: piece k's blocks come back every ten pieces, like a daily pattern.
    Each piece is formatted once, so building stays cheap next to what it measures.
    """
    pieces = [
        generate(WorkloadConfig(requests=min(CHUNK, requests), seed=s))
        for s in range(min(SEEDS, -(-requests // CHUNK)))
    ]
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
    return [
        f'"input_length": {inp[i]}, "output_length": {outp[i]}, '
        f'"hash_ids": [{", ".join(map(str, ids[offsets[i] : offsets[i + 1]]))}]}}\n'
        for i in range(len(inp))
    ]


_CHILD = (
    "import resource, sys; from {module} import {function} as run; "
    "rc = run(sys.argv[1:]); u = resource.getrusage(resource.RUSAGE_SELF); "
    "print('PEAK_KIB', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(rc)"
)
KVVIZ = {"module": "kvviz.cli", "function": "main"}
TIMEOUT_S = 1800
MAX_RSS_GIB = 6.0  # a step is stopped past this (the machine's watchdog kills at 7 GB)
RATE = 0.01
CURVE_CAPACITIES = "10k,30k,100k,300k,1000k,3000k,inf"  # × 1% = 100 .. 30,000 sampled blocks
ERROR_REQUESTS = 1_000_000
ERROR_CAPACITIES = "10k,30k,100k,300k,1000k,inf"


def _run(argv: list[str], env: dict, child: dict = KVVIZ) -> tuple[float, float, float, str]:
    """Run ``child``'s function on ``argv`` in its own process, stopped past ``TIMEOUT_S`` or
    ``MAX_RSS_GIB`` (the machine is shared); (wall s, its CPU s, its peak RSS in GiB, stdout)."""
    start = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(**child), *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        over: list[float] = []
        threading.Thread(target=_watch, args=(proc, over), daemon=True).start()
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SystemExit(f"{child['function']} {argv[:1]} stopped after {TIMEOUT_S} s") from None
    wall = time.perf_counter() - start
    if over:
        raise SystemExit(f"{child['function']} {argv[:1]} stopped at {over[0]:.2f} GiB RSS (limit {MAX_RSS_GIB} GiB)")
    if proc.returncode != 0:
        raise SystemExit(f"{child['function']} {argv[:1]} failed: {err.strip()[-500:]}")
    peak, cpu = next(line.split()[1:] for line in err.splitlines() if line.startswith("PEAK_KIB"))
    return wall, float(cpu), int(peak) / 2**20, out


def _watch(proc: subprocess.Popen, over: list[float]) -> None:
    """Kill ``proc`` once its resident memory passes ``MAX_RSS_GIB`` (noted in ``over``)."""
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            rss = next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmRSS"))
        except (OSError, StopIteration, ValueError):
            return
        if rss / 2**20 > MAX_RSS_GIB:
            over.append(rss / 2**20)
            proc.kill()
            return
        time.sleep(0.1)


def import_trace(path: Path, library: Path) -> tuple[str, float, float, float]:
    """``python -m kvviz import path`` into ``library``; (entry id, wall s, CPU s, peak RSS GiB)."""
    wall, cpu, peak, out = _run(["import", str(path)], _env(library))
    return json.loads(out)["id"], wall, cpu, peak


def _env(library: Path) -> dict:
    return {**os.environ, "KVVIZ_TRACES": str(library), "OPENBLAS_NUM_THREADS": "1"}


def sampled_main(argv: list[str]) -> int:
    """Child process: ``ENTRY_ID RATE CAPACITIES``; every policy's sampled curve (LRU exact) as CSV."""
    from kvviz.eviction.grid import POLICIES, parse_capacities
    from kvviz.eviction.shards import sampled_curve
    from kvviz.traces import library

    eid, rate, caps = argv
    result = sampled_curve(library.open_entry(eid), list(POLICIES), parse_capacities(caps), float(rate))
    print(
        f"# rate {result.rate:g}, {result.sampled_accesses:,} of {result.accesses:,} accesses sampled, "
        f"LRU exact (sampled LRU off by {result.lru_error:.3f})"
    )
    sys.stdout.write(result.curve.to_csv(index=False))
    return 0


def errors_main(argv: list[str]) -> int:
    """Child process: ``TRACE_FILE RATE CAPACITIES``; per policy, the largest |sampled − exact| hit
    ratio over the represented capacities, SHARDS-adj alone ("plain") and with the LRU correction, as CSV."""
    from kvviz.eviction.grid import POLICIES, parse_capacities
    from kvviz.eviction.replay import hit_curve
    from kvviz.traces import load_trace

    path, rate, caps = argv
    trace, capacities, policies = load_trace(Path(path)), parse_capacities(caps), list(POLICIES)
    exact = hit_curve(trace, policies, capacities).set_index(["policy", "capacity"])["hit_ratio"]
    plain, corrected = (_errors(trace, policies, capacities, float(rate), exact, lru) for lru in (False, True))
    table = pd.DataFrame({"plain": plain, "corrected": corrected})
    table["represented"] = [", ".join(_short(c) for c in plain.attrs["represented"][p]) for p in table.index]
    print(f"# {trace.n_requests:,} requests, {len(trace.blocks):,} accesses")
    sys.stdout.write(table.to_csv(index_label="policy"))
    return 0


def _errors(trace, policies, capacities, rate, exact, exact_lru: bool) -> pd.Series:
    from kvviz.eviction.shards import sampled_curve

    curve = sampled_curve(trace, policies, capacities, rate, exact_lru=exact_lru).curve
    curve = curve[curve["represented"]].set_index(["policy", "capacity"])["hit_ratio"]
    error = (curve - exact.loc[curve.index]).abs().groupby(level="policy").max().reindex(policies)
    error.attrs["represented"] = {p: curve.loc[p].index.tolist() for p in policies}
    return error


def _short(capacity: float) -> str:
    return "inf" if capacity == float("inf") else f"{capacity / 1000:g}k"


def _line(step: str, wall: float, cpu: float, peak: float, target_s: float) -> None:
    print(
        f"{step:<10} {wall:7.1f} s wall {cpu:7.1f} s CPU, peak RSS {peak:.2f} GiB  (target {target_s:g} s, 4 GiB)",
        flush=True,
    )


def _build(requests: int, path: Path) -> None:
    start = time.perf_counter()
    n, accesses = build_trace_file(requests, path)
    print(
        f"{'build':<10} {n:,} requests, {accesses:,} block accesses, {path.stat().st_size / 1e9:.2f} GB "
        f"JSONL in {time.perf_counter() - start:.1f} s",
        flush=True,
    )


def scale(path: Path, library: Path) -> None:
    """Import, stats and the sampled curve of ``path``, each in its own process."""
    eid, wall, cpu, peak = import_trace(path, library)
    _line("import", wall, cpu, peak, 30)
    curves(eid, library)


def curves(eid: str, library: Path) -> None:
    """Stats and the sampled curve of the library entry ``eid``, each in its own process."""
    wall, cpu, peak, _ = _run(["stats", eid], _env(library))
    _line("stats", wall, cpu, peak, 10)
    wall, cpu, peak, out = _run(
        [eid, str(RATE), CURVE_CAPACITIES], _env(library), {"module": "bench.bench_scale", "function": "sampled_main"}
    )
    _line("sampled", wall, cpu, peak, 30)
    head, _, body = out.partition("\n")
    curve = pd.read_csv(io.StringIO(body))
    print(
        f"{'':<10} 8 policies × {curve['capacity'].nunique()} capacities, {head[2:]}; hit ratio "
        f"(* = not represented), and the largest error bound (flagged over {RELIABLE_ERROR:g}):"
    )
    shown = curve.assign(
        cell=[f"{r:.3f}{'' if ok else '*'}" for r, ok in zip(curve["hit_ratio"], curve["represented"])]
    )
    table = shown.pivot(index="policy", columns="capacity", values="cell").reindex(curve["policy"].unique())
    table = table.rename(columns=_short)
    shown_rows = curve[curve["represented"] & (curve["capacity"] != float("inf"))]
    estimate = shown_rows.groupby("policy", sort=False)["error_estimate"].max()
    table["bound"] = [f"{e:.3f}{' flagged' if e > RELIABLE_ERROR else ''}" for e in estimate.reindex(table.index)]
    print(table.to_string(), flush=True)


def errors(path: Path, env: dict) -> None:
    """The sampled-vs-exact error table on the trace at ``path``, in its own process."""
    wall, cpu, peak, out = _run(
        [str(path), str(RATE), ERROR_CAPACITIES], env, {"module": "bench.bench_scale", "function": "errors_main"}
    )
    head, _, body = out.partition("\n")
    table = pd.read_csv(io.StringIO(body), index_col="policy")
    print(
        f"{'errors':<10} {wall:7.1f} s wall {cpu:7.1f} s CPU, peak RSS {peak:.2f} GiB; {head[2:]}: largest "
        f"|sampled − exact| hit ratio at a {RATE:.0%} rate over the represented capacities (target 0.01)"
    )
    for column in ("plain", "corrected"):
        table[column] = [f"{v:.4f}{'' if v <= 0.01 else ' over'}" for v in table[column]]
    print(table.to_string(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="?", type=int, default=10_000_000)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--keep", type=Path, default=None, help="write the trace here and keep it")
    source.add_argument("--trace", type=Path, default=None, help="reuse this trace file instead of building one")
    source.add_argument(
        "--entry",
        default=None,
        help="only stats and the sampled curve of this entry of $KVVIZ_TRACES (imported before)",
    )
    parser.add_argument("--errors-only", action="store_true", help="only the sampled-vs-exact error table")
    args = parser.parse_args()
    if args.trace is not None and not args.trace.is_file():
        parser.error(f"--trace {args.trace}: no such file")
    if args.entry is not None:
        from kvviz.traces import library

        curves(args.entry, library.root())
        _say_load()
        return
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "lib"
        if not args.errors_only:
            path = args.trace or args.keep or Path(tmp) / "scale.jsonl"
            if args.trace is None:
                _build(args.requests, path)
            scale(path, library)
            if args.keep is None and args.trace is None:
                path.unlink()
        small = Path(tmp) / "errors.jsonl"
        _build(ERROR_REQUESTS, small)
        errors(small, _env(library))
        _say_load()


def _say_load() -> None:
    print(
        f"{'machine':<10} load average {', '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min) "
        f"on {os.cpu_count()} cores",
        flush=True,
    )


if __name__ == "__main__":
    main()
