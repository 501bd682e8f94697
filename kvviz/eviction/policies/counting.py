"""Counting hits per request, in full and in prefix mode.

In prefix mode an access counts only if every earlier block of its request hit too: a prefix
cache can reuse a request's KV up to its first miss and must recompute everything after it.
The cache itself is replayed the same way in both modes; only the counting differs.
"""

from __future__ import annotations

import numpy as np

from kvviz.common.jit import kernel


@kernel
def hits_per_request(hit: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hits, prefix hits) of each request; request r owns ``hit[offsets[r]:offsets[r+1]]``."""
    n_requests = len(offsets) - 1
    full = np.zeros(n_requests, np.int64)
    prefix = np.zeros(n_requests, np.int64)
    for r in range(n_requests):
        first_miss = offsets[r]
        while first_miss < offsets[r + 1] and hit[first_miss]:
            first_miss += 1
        hits = first_miss - offsets[r]
        prefix[r] = hits
        for i in range(first_miss, offsets[r + 1]):
            hits += hit[i]
        full[r] = hits
    return full, prefix


@kernel
def prefix_hits(hit: np.ndarray, offsets: np.ndarray) -> int:
    """All requests' prefix hits together: ``hits_per_request(...)[1].sum()`` without the
    per-request arrays, reading each request only up to its first miss (a sweep's total)."""
    total = 0
    for r in range(len(offsets) - 1):
        i = offsets[r]
        while i < offsets[r + 1] and hit[i]:
            i += 1
        total += i - offsets[r]
    return total
