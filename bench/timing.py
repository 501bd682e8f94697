"""The benchmarks' one timing helper: wall time and this process's CPU time.

The machine may be shared; under load the wall time mostly measures the others, and the CPU time is
roughly what an idle machine would take.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(label: str, fn: Callable[[], T]) -> T:
    """Run ``fn``, print its wall and CPU seconds after ``label``, and return its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label:<58s} {time.perf_counter() - wall:7.2f} s wall {time.process_time() - cpu:7.2f} s CPU", flush=True)
    return out
