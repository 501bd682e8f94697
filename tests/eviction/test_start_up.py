"""Start-up stays lean: numba is imported only by the modules whose kernels run.

Importing numba costs a process about a second of CPU on this machine, and setting up its
compiler more, so the modules that only name, parse, count or draw must not pull it in: a
``kvviz --help``, a ``kvviz stats`` or a page that never replays a cache pays nothing for it.
Each check runs in a fresh interpreter, since this test process has long imported numba.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "assets/example_trace.jsonl"
NUMBA_FREE = (
    "kvviz.cli",
    "kvviz.commands.hitcurve",
    "kvviz.eviction.grid",
    "kvviz.eviction.curves",
    "kvviz.eviction.notes",
    "kvviz.eviction.figures",
    "kvviz.traces",
)


def _run(code: str, env: dict[str, str] | None = None) -> list[str]:
    """The lines a fresh interpreter prints running ``code`` (with ``env`` added to the environment)."""
    env = {**os.environ, **env} if env else None
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[:-1]


def test_the_modules_that_run_no_kernel_and_loading_a_trace_do_not_import_numba():
    steps = [f"import {module}" for module in NUMBA_FREE] + [f"kvviz.traces.load_trace({EXAMPLE!r})"]
    code = "import sys\n" + "".join(
        f"{step}\nprint('numba' in sys.modules, 'llvmlite' in sys.modules)\n" for step in steps
    )
    assert dict(zip(steps, _run(code))) == dict.fromkeys(steps, "False False")


def test_a_module_whose_kernels_run_imports_numba():
    assert _run("import sys, kvviz.eviction.replay\nprint('numba' in sys.modules)") == ["True"]


def test_the_exact_curve_on_the_command_line_builds_no_data_frame_and_draws_nothing():
    code = (
        "import contextlib, io, sys\nfrom kvviz.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['hitcurve', {EXAMPLE!r}, '--sample', 'exact', '--capacities', '10,inf']) == 0\n"
        "print('numba' in sys.modules, 'pandas' in sys.modules, 'plotly' in sys.modules)"
    )
    assert _run(code) == ["True False False"]


def test_loading_the_kernels_skips_numbas_scipy_probe_and_numba_still_computes_dot_products():
    code = (
        "import sys, numba, numpy as np\nfrom kvviz.eviction.replay import warm_up\nwarm_up()\n"
        "print('scipy.linalg' in sys.modules, 'numba.np.arraymath' in sys.modules)\n"
        "print(numba.njit(lambda a, b: np.dot(a, b))(np.arange(4.0), np.arange(4.0)))\n"
        "import scipy.linalg.cython_blas\nprint('scipy.linalg' in sys.modules)"
    )
    assert _run(code) == ["False False", "14.0", "True"]


def test_a_kernel_compiled_in_a_fresh_cache_skips_numbas_scipy_probe(tmp_path):
    """A kernel with no cached code compiles, and numba's CPU target loads for it without scipy.linalg."""
    (tmp_path / "one.py").write_text("from kvviz.common.jit import kernel\n\n@kernel\ndef one(x):\n    return x + 1\n")
    code = (
        "import sys\nfrom one import one\n"
        "print(one(1), 'numba.np.arraymath' in sys.modules, 'scipy.linalg' in sys.modules)"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    assert _run(code, env) == ["2 True False"]


def test_a_process_that_imported_scipy_linalg_first_keeps_numbas_blas():
    code = "import scipy.linalg, kvviz.common.jit, numba.np.arraymath as m\nprint(m._HAVE_BLAS)"
    assert _run(code) == ["True"]


def test_scipy_linalg_is_refused_only_to_the_thread_that_loads_numba():
    code = (
        "import sys, threading\nfrom kvviz.common.jit import _RefuseScipyLinalg\n"
        "sys.meta_path.insert(0, _RefuseScipyLinalg())\n"
        "try:\n    import scipy.linalg\nexcept ImportError:\n    print('refused here')\n"
        "other = threading.Thread(target=lambda: __import__('scipy.linalg'))\nother.start()\nother.join()\n"
        "print('scipy.linalg' in sys.modules)"
    )
    assert _run(code) == ["refused here", "True"]


def _precompile(**env: str) -> subprocess.CompletedProcess:
    """``python -m kvviz.precompile`` in a fresh interpreter, as an install script runs it."""
    return subprocess.run(
        [sys.executable, "-m", "kvviz.precompile"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_precompile_command_compiles_or_loads_every_kernel_and_says_which():
    """In a test run the kernels are compiled already (before the workers start), so it only loads them."""
    done = _precompile()
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.splitlines()[-1]
    assert re.fullmatch(
        r"kvviz: (compiled the simulators \(once for this code\)|loaded the compiled simulators) in \d+\.\d s", last
    )


def test_the_precompile_command_stops_in_one_line_on_a_memory_limit_that_is_not_a_number():
    done = _precompile(KVVIZ_MEMORY_GIB="lots")
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "kvviz: cannot compile the simulators: kvviz tiers on a tiny trace failed: kvviz tiers: the environment "
        "variable KVVIZ_MEMORY_GIB is 'lots': give a number of GiB above 0 and at most 1,048,576"
    ]
