"""Compile every numba kernel once, in the process that starts the test workers.

numba writes each kernel's machine code to its disk cache the first time the kernel runs, and every
later process loads it from there. On a fresh checkout the cache is empty: without this, each
pytest-xdist worker, each browser test's Streamlit server and each Ray or pool worker that meets a
kernel before another process has written it compiles that kernel again. Running every command
that calls a kernel once, on a tiny trace, before the workers start leaves one compile per kernel.
The tiered replay's kernel compiles for about as long as all the others together: it gets a process
of its own.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TRACE = "\n".join(
    f'{{"timestamp": {t * 300}, "input_length": 1024, "output_length": 4, "hash_ids": [{t % 3}, {9 + t}]}}'
    for t in range(12)
)
COMMANDS = [
    [["tiers", "@", "--model", "llama-3-8b", "--gpu", "h100", "--hbm", "1GiB", "--dram", "2GiB", "--ssd", "4GiB"]],
    [
        ["hitcurve", "@", "--capacities", "2,inf"],
        ["hitcurve", "@", "--capacities", "2,inf", "--prefix"],
        ["hitcurve", "@", "--capacities", "2,inf", "--sample", "0.5"],
        ["hitcurve", "@", "--capacities", "2,inf", "--cache", "prefix"],
        ["hitcurve", "@", "--capacities", "2", "--cache", "vllm"],
        ["stats", "@"],
    ],
]
"""The commands in two groups that compile for about as long (the tiered replay alone, the rest)."""


def compile_all() -> None:
    """Run the groups side by side, one process each (there is a core for each)."""
    with ProcessPoolExecutor(len(COMMANDS), mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(run_commands, COMMANDS))


def run_commands(commands: list[list[str]]) -> None:
    """Run each kernel-calling command once on a tiny trace, its output and notes discarded."""
    from kvviz.cli import main

    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.jsonl"
        trace.write_text(TRACE + "\n")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for argv in commands:
                assert main([str(trace) if a == "@" else a for a in argv]) == 0, argv
