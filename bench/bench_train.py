"""Benchmark: training speed of the numpy record-world trainer (target: the full recipe ≤ 6 min).

Times ``--steps`` steps (default 200) of the shipped recipe, in wall and CPU seconds, and
extrapolates the CPU time to the full run (on a shared machine the wall time mostly measures the others).
The full reproduction is ``python -m kvviz.cacheblend.train`` (it prints its own timings).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench.timing import timed  # noqa: E402
from kvviz.cacheblend.train import Recipe, train  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    full = Recipe()
    cpu = time.process_time()
    timed(f"{args.steps} training steps", lambda: train(Recipe(steps=args.steps), log=lambda _: None))
    per_step = (time.process_time() - cpu) / args.steps
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{per_step * 1e3:.1f} ms CPU per step (batch {full.batch}, 2..12 records, {full.n_questions} questions)")
    print(f"full recipe, {full.steps} steps: about {per_step * full.steps / 60:.1f} min of CPU (target <= 6 min)")


if __name__ == "__main__":
    main()
