"""Benchmark: which kernels a test run compiles although the precompile ran first.

    .venv/bin/python -m bench.bench_compiles                          # the core test folders
    .venv/bin/python -m bench.bench_compiles tests/eviction tests/vllm/test_block_pool.py
    .venv/bin/python -m bench.bench_compiles --keep /tmp/copy         # keep the copy for a rerun
    .venv/bin/python -m bench.bench_compiles --rev HEAD~3 tests/vllm  # an earlier commit, to compare

numba compiles a kernel once per kind of argument (dtype, layout, writable or read-only) and keeps
one entry per kind in the kernel's index file (``*.nbi``) in its disk cache. A call with a kind the
precompile (``kvviz.precompile.compile_all``) did not make compiles again, in whichever test meets
it first, on every fresh checkout. This clones the committed state of this checkout into a
temporary folder (so the cache starts empty), runs the precompile there (its wall and CPU time printed),
then each test selection in turn, one pytest process each, without workers, and after each prints
the kernel signatures that appeared in the cache: every one is a compile a fresh test run pays.
The machine may be shared: the load average is printed with each timing.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELECTIONS = [
    "tests/eviction",
    "tests/prefix_cache",
    "tests/vllm",
    "tests/traces",
    "tests/tiers",
    "tests/cluster",
    "tests/radix",
    "tests/mooncake",
    "tests/cli",
    "tests/common",
]
"""The test folders that call kernels, as a test run without pages or a browser meets them."""


def signatures(cache: Path) -> set[str]:
    """Every compiled kernel signature in numba's disk cache, as ``file:function(arg types)``.

    An index file is a pickled numba version followed by a pickled (source stamp, {key: data file})
    whose key starts with the signature's tuple of numba types (``numba.core.caching``'s
    ``IndexDataCacheFile``), so numba must be importable to read it.
    """
    import numba  # noqa: F401 - the index's keys are numba types

    found = set()
    for index in cache.rglob("*.nbi"):
        with index.open("rb") as f:
            pickle.load(f)
            _, overloads = pickle.loads(f.read())
        kernel = index.name.removesuffix(".nbi").rsplit("-", 1)[0]
        found.update(f"{kernel}{tuple(str(t) for t in key[0])}" for key in overloads)
    return found


def clone(to: Path, rev: str | None = None) -> Path:
    """A fresh clone of this checkout's committed state (or of ``rev``), sharing its virtual environment."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(to)], check=True)
    if rev:
        subprocess.run(["git", "-C", str(to), "checkout", "-q", rev], check=True)
    (to / ".venv").symlink_to((ROOT / ".venv").resolve())
    return to


def cache_dir(copy: Path) -> Path:
    """The copy's numba cache folder (named after a hash of its kernel sources)."""
    code = "from kvviz.common.jit import CACHE_DIR; print(CACHE_DIR)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([".venv/bin/python", "-c", code], cwd=copy, env=env, capture_output=True, text=True)
    return Path(out.stdout.strip())


def cpu_seconds() -> float:
    """CPU seconds of every finished child process of this one (and theirs)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(copy: Path, argv: list[str]) -> str:
    """Wall and CPU seconds (the latter steadier on a shared machine) and the last line printed (pytest's
    summary) or the exit code of one command in the copy."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    start, cpu = time.monotonic(), cpu_seconds()
    done = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
    said = lines[-1] if lines else f"exit {done.returncode}"
    return f"{time.monotonic() - start:.1f} s wall, {cpu_seconds() - cpu:.1f} CPU s ({load()}), {said}"


def load() -> str:
    """The machine's one-minute load average, printed beside a timing."""
    return f"load {os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("selections", nargs="*", default=SELECTIONS, help="pytest paths, one process each")
    parser.add_argument("--keep", type=Path, help="clone into this (new) folder and keep it")
    parser.add_argument("--rev", help="measure this commit instead of the checkout's last (e.g. to compare)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="kvviz-compiles-")) / "copy"
    copy = clone(folder, args.rev)
    cache = cache_dir(copy)
    python = ".venv/bin/python"
    said = timed(copy, [python, "-c", "from kvviz.precompile import compile_all; compile_all()"])
    before = signatures(cache)
    print(f"precompile: {said}, {len(before)} signatures", flush=True)
    total = 0
    for selection in args.selections:
        pytest = [python, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", selection]
        said = timed(copy, pytest)
        after = signatures(cache)
        added = sorted(after - before)
        total += len(added)
        print(f"{selection}: {said}, {len(added)} compiled", flush=True)
        for signature in added:
            print(f"    {signature}", flush=True)
        before = after
    print(f"compiled during the tests: {total}")
    if args.keep is None:
        shutil.rmtree(folder.parent)


if __name__ == "__main__":
    main()
