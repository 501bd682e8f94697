"""The one JIT switch for the policy kernels.

Every per-access loop in ``kvviz.eviction.policies`` (and the stack-distance pass in ``kvviz.traces.reuse``) is
plain Python that numba compiles once and caches on disk (``cache=True``), so the readable loop is
also the fast one. Kernels release the GIL
(``nogil=True``) so a sweep runs one simulation per core from a thread pool; the small data
structure helpers are inlined into them (``inline="always"``), which keeps a list or heap
operation as cheap as writing it out by hand.

numba itself is imported when a kernel is first compiled or called through it, not when a module
defines one: a command-line run that calls the kernels' native code (``kvviz.eviction.policies.native``)
never needs it, and importing it costs 0.15–0.2 s. Until then a kernel is a ``Jitted`` stand-in
that numba, once imported, types and inlines as the dispatcher it wraps.

numba checks only a kernel's own file before reusing its disk cache, not the helpers inlined
into it, so the cache lives in a folder named after a hash of every module of this package:
any edit here starts a fresh cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

_HERE = Path(__file__).resolve().parent
_SOURCE = hashlib.sha1(b"".join(p.read_bytes() for p in sorted(_HERE.glob("*.py")))).hexdigest()[:12]
CACHE_DIR = Path(os.environ.get("NUMBA_CACHE_DIR") or _HERE / "__pycache__" / f"numba-{_SOURCE}")
"""numba's disk cache, and beside it the native objects."""

_LOCK = threading.RLock()
_NUMBA: list[ModuleType] = []


def numba_module() -> ModuleType:
    """numba, imported and set up for these kernels (its cache folder; ``Jitted`` as a dispatcher)."""
    with _LOCK:
        if not _NUMBA:
            import numba
            from numba.extending import typeof_impl

            if not os.environ.get("NUMBA_CACHE_DIR"):
                numba.config.CACHE_DIR = str(CACHE_DIR)
            typeof_impl.register(Jitted)(lambda value, context: typeof_impl(value.dispatcher, context))
            _NUMBA.append(numba)
        return _NUMBA[0]


class Jitted:
    """A function numba compiles with ``options`` when it is first called or compiled into a kernel."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        functools.update_wrapper(self, func)
        self.py_func = func              # numba's inliner reads py_func and targetoptions
        self._options = options
        self._dispatcher: Any = None

    @property
    def dispatcher(self) -> Any:
        if self._dispatcher is None:
            numba = numba_module()
            with _LOCK:
                if self._dispatcher is None:
                    self._dispatcher = numba.njit(**self._options)(self.py_func)
        return self._dispatcher

    @property
    def targetoptions(self) -> dict[str, Any]:
        return self.dispatcher.targetoptions

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher(*args)


def kernel(func: Callable[..., Any]) -> Jitted:
    """Decorator for a compiled per-access loop."""
    return Jitted(func, {"cache": True, "nogil": True})


def helper(func: Callable[..., Any]) -> Jitted:
    """Decorator for a data-structure operation inlined into the kernels."""
    return Jitted(func, {"cache": True, "nogil": True, "inline": "always"})
