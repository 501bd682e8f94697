"""Compile every numba kernel the pages and commands call, before anyone asks for one.

numba compiles a kernel the first time it runs and writes the machine code to its disk cache
(``kvviz.common.jit.CACHE_DIR``); every later process loads it from there. On a fresh checkout that
cache is empty, and without this the first visitor of a page that replays a trace would wait for the
compile. ``compile_all`` runs each command that calls a kernel once, on a tiny trace, in two
processes side by side (the tiered replay's kernel compiles for about as long as all the others
together, so it has a process of its own); with a filled cache it only loads them. ``make run``
(``ui.kit.serve``) calls ``compile_with_progress`` in the server's process before the server starts, so
a visitor never meets a page whose kernel is still compiling; the test run calls ``compile_all``
before its workers start, so that no worker, test server or pool process compiles a kernel again.
``python -m kvviz.precompile`` does what ``make run`` does before its server, with the same lines, so that
an install script can compile before the first visitor or command.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TRACE = "\n".join(
    f'{{"timestamp": {t * 300}, "input_length": 1024, "output_length": 4, "hash_ids": [{t % 3}, {9 + t}]}}'
    for t in range(12)
)
COMMANDS = [
    [
        ["tiers", "@", "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "1GiB", "--dram", "2GiB", "--ssd", "4GiB"],
        ["tiers", "@", "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "1GiB", "--dram", "2GiB", "--ssd", "4GiB"]
        + ["--instances", "2", "--router", "kv-aware"],
    ],
    [
        ["hitcurve", "@", "--capacities", "2,inf", "--cache", "prefix"],
        ["hitcurve", "@", "--capacities", "2,inf"],
        ["hitcurve", "@", "--capacities", "2,inf", "--prefix"],
        ["hitcurve", "@", "--capacities", "2,inf", "--sample", "0.5"],
        ["hitcurve", "@", "--capacities", "2", "--cache", "vllm"],
        ["cluster", "@", "--instances", "2", "--blocks", "2", "--pool-blocks", "2"],
        ["cluster", "@", "--instances", "2", "--blocks", "2", "--engine", "vllm-lmcache"],
        ["stats", "@"],
    ],
]
"""The commands that call a kernel, in two groups that compile for about as long (the tiered replay alone, the rest).
The routed tiered command routes by each instance's GPU tree (kv-aware), so the kernel that reads that tree compiles
too. The second group also replays the trace request by request, as the Eviction page does and no command. It
compiles the prefix replay first: the tiered command needs it too (its GPU-only baseline), after its own long
compile, and then loads it from the disk cache instead of compiling it a second time beside the first."""

FRESH_ESTIMATE = "one to three minutes on two cores"
"""What the first compile of a checkout takes, said before it starts (its measured time is printed after)."""
TICK_S = 15.0


def compile_all(in_process: bool = False) -> None:
    """Compile (or, with a filled disk cache, load) every kernel, the two groups side by side; or, with
    ``in_process``, one after the other in this process, which then holds them loaded."""
    if in_process:
        for commands in COMMANDS:
            run_commands(commands)
        return
    with ProcessPoolExecutor(len(COMMANDS), mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(run_commands, COMMANDS))


def run_commands(commands: list[list[str]]) -> None:
    """Run each kernel-calling command once on a tiny trace, its output and notes discarded."""
    from kvviz.cli import main

    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.jsonl"
        trace.write_text(TRACE + "\n")
        for argv in commands:
            notes = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(notes):
                code = main([str(trace) if a == "@" else a for a in argv])
            if code != 0:  # what the command said, e.g. a memory limit set too low to replay anything
                said = notes.getvalue().strip().splitlines()
                raise RuntimeError(f"kvviz {argv[0]} on a tiny trace failed: {said[-1] if said else f'exit {code}'}")
        if commands == COMMANDS[-1]:
            replay_per_request(trace)
            compile_other_kinds()


def replay_per_request(path: Path) -> None:
    """Every policy's hits request by request, at a capacity that evicts and one that holds everything."""
    from kvviz.eviction.grid import POLICIES
    from kvviz.eviction.replay import replay_of, simulate
    from kvviz.traces import load_trace

    replay = replay_of(load_trace(path))
    for policy in POLICIES:
        for capacity in (2, float("inf")):
            simulate(replay, policy, capacity)


def compile_other_kinds() -> None:
    """The kernel calls the tiny trace's commands may not make: the re-chaining of per-block hashes (a
    format option), and the sampling hashes and the LRU pass of a sampled curve on block ids as a file
    or a library entry gives them (int32) and as a hand-made trace may (int64). Each entry function
    hands its kernel read-only arrays (``kvviz.common.jit.frozen``), so these are all the kinds there are."""
    import numpy as np

    from kvviz.eviction.shards import block_hashes, in_band
    from kvviz.traces.hashing import rechain
    from kvviz.traces.reuse import lru_hit_counts

    rechain(np.array([0, 1, 0, 2]), np.array([0, 2, 4]))
    for dtype in (np.int32, np.int64):
        ids = np.array([0, 1, 0, 2], dtype)
        block_hashes(ids)
        in_band(ids, 0.5, 0.25)
        lru_hit_counts(ids, 3, np.array([1.0, 2.0]))


def cached_kernels() -> int:
    """How many compiled kernels numba's disk cache holds (one index file per kernel)."""
    from kvviz.common import jit

    return sum(1 for _ in Path(jit.CACHE_DIR).rglob("*.nbi"))


def say(line: str) -> None:
    """One line on the process's stdout, at once (``make`` pipes it, which would otherwise hold it back),
    also while ``run_commands`` discards what the commands print."""
    print(line, file=sys.__stdout__, flush=True)


def compile_with_progress() -> tuple[float, bool]:
    """``compile_all``, saying what it does and, every ``TICK_S`` seconds, how long it has been going.

    An empty cache compiles in two processes side by side; a filled one is loaded in this process (the
    server's, which then needs no second load), since loading costs a process less than starting two
    (a kernel whose cached code numba finds stale is compiled here then). Returns the seconds it took
    and whether it compiled anything (rather than only loading).
    """
    before = cached_kernels()
    if before == 0:
        say(f"kvviz: compiling the simulators once for this checkout ({FRESH_ESTIMATE}; later starts reuse them)")
    start = time.monotonic()
    done = threading.Event()

    doing = "loading (and compiling any simulator whose code changed)" if before else "compiling"

    def tick() -> None:
        while not done.wait(TICK_S):
            say(f"kvviz: still {doing}, {time.monotonic() - start:.0f} s so far")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        compile_all(in_process=before > 0)
    finally:
        done.set()
    return time.monotonic() - start, cached_kernels() > before


def compile_and_say(failure: str) -> bool:
    """``compile_with_progress``, then what it did in one line; a setting that leaves the tiny trace no
    room to run (a memory limit) is one line too, ``failure: why``, and False."""
    from kvviz.common.errors import InputError

    try:
        seconds, compiled = compile_with_progress()
    except (RuntimeError, InputError) as exc:
        say(f"{failure}: {exc}")
        return False
    what = "compiled the simulators (once for this code)" if compiled else "loaded the compiled simulators"
    say(f"kvviz: {what} in {seconds:.1f} s")
    return True


def main() -> int:
    """``python -m kvviz.precompile``: exit code 0 once every kernel is compiled or loaded, else 2."""
    return 0 if compile_and_say("kvviz: cannot compile the simulators") else 2


if __name__ == "__main__":
    sys.exit(main())
