"""Benchmark: load the record-world model and evaluate 200 documents at 5 ratios (target ≤ 5 s),
plus the page's first-render work (the lecture-setting numbers and one document view, ≤ 3 s).

Run: ``.venv/bin/python -m bench.bench_blend`` (prints seconds; set OPENBLAS_NUM_THREADS=1 on a
busy machine: these matrices are tiny and BLAS threads only fight).
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench.timing import timed
from kvviz.cacheblend import blend
from kvviz.cacheblend.model import load_model
from kvviz.cacheblend.record_world import sample_documents


def main() -> None:
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    start = time.perf_counter()
    model = timed("load model", load_model)
    s = timed("setup: full prefill + chunk caches, 200 docs", lambda: blend.setup(model, sample_documents(200, 0), 5))
    table = timed(
        "evaluate 5 methods at ratios 0,0.1,0.2,0.3,0.5", lambda: blend.evaluate(model, s, (0.0, 0.1, 0.2, 0.3, 0.5))
    )
    print(f"{'TOTAL load + 200 docs x 5 ratios (target <= 5 s)':<58s} {time.perf_counter() - start:7.2f} s")
    print(table.to_string(index=False))
    start = time.perf_counter()
    timed("page: lecture-setting numbers (200 docs)", lambda: blend.lecture_numbers(model, sample_documents(200, 2026)))
    timed("page: one document view", lambda: blend.inspect_document(model, sample_documents(1, 0), 5, 0.2))
    print(f"{'TOTAL page first-render work (target <= 3 s)':<58s} {time.perf_counter() - start:7.2f} s")


if __name__ == "__main__":
    main()
