"""The one JIT switch for the policy kernels.

Every per-access loop in ``kvviz.policies`` (and the stack-distance pass in ``kvviz.reuse``) is
plain Python that numba compiles once and caches on disk (``cache=True``), so the readable loop is
also the fast one. Kernels release the GIL
(``nogil=True``) so a sweep runs one simulation per core from a thread pool; the small data
structure helpers are inlined into them (``inline="always"``), which keeps a list or heap
operation as cheap as writing it out by hand.

numba checks only a kernel's own file before reusing its disk cache, not the helpers inlined
into it, so the cache lives in a folder named after a hash of every module of this package:
any edit here starts a fresh cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit

_HERE = Path(__file__).resolve().parent
if not os.environ.get("NUMBA_CACHE_DIR"):
    _source = hashlib.sha1(b"".join(p.read_bytes() for p in sorted(_HERE.glob("*.py")))).hexdigest()[:12]
    numba.config.CACHE_DIR = str(_HERE / "__pycache__" / f"numba-{_source}")

kernel = njit(cache=True, nogil=True)
"""Decorator for a compiled per-access loop."""

helper = njit(cache=True, nogil=True, inline="always")
"""Decorator for a data-structure operation inlined into the kernels."""
