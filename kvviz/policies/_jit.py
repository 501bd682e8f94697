"""The one JIT switch for the policy kernels.

Every per-access loop in ``kvviz.policies`` is plain Python that numba compiles once and caches
on disk (``cache=True``), so the readable loop is also the fast one. Kernels release the GIL
(``nogil=True``) so a sweep runs one simulation per core from a thread pool; the small data
structure helpers are inlined into them (``inline="always"``), which keeps a list or heap
operation as cheap as writing it out by hand.
"""

from __future__ import annotations

from numba import njit

kernel = njit(cache=True, nogil=True)
"""Decorator for a compiled per-access loop."""

helper = njit(cache=True, nogil=True, inline="always")
"""Decorator for a data-structure operation inlined into the kernels."""
