"""The two numba decorators of kvviz's compiled loops, and the disk cache they share.

Every per-access loop (the eviction policies, the stack-distance pass, the prefix replay, the
sampling hash) is plain Python that numba compiles once and caches on disk, so the readable loop
is also the fast one. ``kernel`` is ``numba.njit(cache=True, nogil=True)``: kernels release the
GIL, so a sweep runs one simulation per core from a thread pool. ``helper`` also inlines a small
data-structure operation into the kernels (``inline="always"``), which keeps a list or heap step
as cheap as writing it out.

numba compiles a kernel once per *kind* of argument (dtype, layout, writable or read-only): a call
with a kind no earlier call made compiles again, in front of whoever makes it. So the functions that
call a kernel hand it their arrays through ``frozen`` (contiguous, read-only, a fixed dtype), and
``kvviz.precompile`` makes the same calls: a page, a command and a test then share one compiled
signature.

Importing this module imports numba, so only the modules that define kernels import it, and only
the code that runs them imports those: a module that only names, parses or draws stays without it.

numba checks only a kernel's own source file before reusing its disk cache, not the functions
compiled into it from other files: after an edit of the eviction policies' ``_lists.py``, FIFO's
cached code would keep the old list operations. So the cache lives in a folder named after a hash
of every kvviz module that compiles with these decorators, and an edit of any of them starts a
fresh cache. ``NUMBA_CACHE_DIR``, when set, wins.

Before it compiles (and, left to itself, before it loads compiled code) numba imports every
implementation module of its CPU target, among them ``numba.np.arraymath``, which looks for a BLAS
for its float dot products by importing
``scipy.linalg.cython_blas``, and so all of ``scipy.linalg`` (a quarter of a CPU second, more than
loading every eviction kernel). No kernel here calls a BLAS routine, so before a kernel compiles
this module imports ``numba.np.arraymath`` itself with ``scipy.linalg`` refused to its own thread
meanwhile: numba's float dot products then take its plain loop in this process
(``_get_inner_prod``), and everything else, scipy included, imports as before. A process that only
loads cached kernels never imports ``numba.np.arraymath`` at all, and one that imported
``scipy.linalg`` first pays nothing and keeps numba's BLAS.

Before it loads a kernel's cached code, numba refreshes its CPU target: it loads every typing and
lowering registry (typed containers, random numbers, polynomials, extensions), a fifth of a command's
start-up, which only compiling needs. This module makes that load start numba's runtime alone
(``_load_cached_code``); numba's compiler refreshes the target itself before any compile. Loading it on
a second thread beside the command's own work would not help: it is Python holding the interpreter's
lock but for a few hundredths of a second in LLVM.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import os
import sys
import threading
from pathlib import Path

import numba
import numpy as np
from numba.core.base import BaseContext
from numba.core.caching import Cache
from numba.core.runtime import rtsys

_KVVIZ = Path(__file__).resolve().parents[1]
_USERS = b"kvviz.common.jit import"


def _source_hash() -> str:
    """A hash of every kvviz module that imports this one, in path order (this one names itself)."""
    digest = hashlib.sha1()
    for path in sorted(_KVVIZ.rglob("*.py")):
        source = path.read_bytes()
        if _USERS in source:
            digest.update(source)
    return digest.hexdigest()[:12]


CACHE_DIR = Path(
    os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).resolve().parent / "__pycache__" / f"numba-{_source_hash()}"
)
"""numba's disk cache for every kernel (numba reads it when a kernel is decorated)."""

numba.config.CACHE_DIR = str(CACHE_DIR)


class _RefuseScipyLinalg(importlib.abc.MetaPathFinder):
    """Refuses ``scipy.linalg`` to the thread that made it, and only to it: another thread (a
    server's other session) importing scipy meanwhile imports it as usual."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "scipy.linalg" and threading.get_ident() == self.thread:
            raise ImportError("scipy.linalg is not loaded for numba's BLAS check (kvviz.common.jit)")
        return None


def _load_numba_without_blas_probe() -> None:
    """Import ``numba.np.arraymath`` with its BLAS probe's import of scipy refused (see above)."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    refuse = _RefuseScipyLinalg()
    sys.meta_path.insert(0, refuse)
    try:
        import numba.np.arraymath  # noqa: F401  (numba catches the ImportError: no BLAS)
    finally:
        sys.meta_path.remove(refuse)


def _load_cached_code(cache: Cache, sig: object, target_context: BaseContext) -> object | None:
    """numba's ``Cache.load_overload`` (numba/core/caching.py) without its ``target_context.refresh()``:
    the runtime that compiled code calls into is started (``rtsys.initialize``, which that refresh starts
    with), and the cached code is loaded as numba loads it (``Cache._load_overload``, its I/O errors
    guarded as numba guards them).

    The refresh loads every typing and lowering registry of numba's CPU target (typed containers,
    random numbers, polynomials, third-party extensions, ...): what compiling a function needs, not
    loading one, and a fifth of a command's start-up. numba's compiler refreshes both contexts itself
    before it compiles (``CompilerBase.__init__``, numba/core/compiler.py), so a kernel whose cached code is stale, or a
    function compiled later in the process, still finds every registry loaded.
    """
    rtsys.initialize(target_context)
    with cache._guard_against_spurious_io_errors():
        code = cache._load_overload(sig, target_context)
    if code is None:  # numba compiles next, and its refresh imports numba.np.arraymath
        _load_numba_without_blas_probe()
    return code


Cache.load_overload = _load_cached_code

kernel = numba.njit(cache=True, nogil=True)
"""Decorator for a compiled per-access loop."""

helper = numba.njit(cache=True, nogil=True, inline="always")
"""Decorator for a data-structure operation inlined into the kernels."""


def frozen(array: np.ndarray, dtype: type | None = None) -> np.ndarray:
    """``array`` as the one kind of array the kernels are handed: C-contiguous, aligned, of ``dtype``
    (default its own) and read-only. A view, without a copy, when the array is already so laid out."""
    view = np.require(array, dtype=dtype, requirements=("C", "A")).view()
    view.flags.writeable = False
    return view
