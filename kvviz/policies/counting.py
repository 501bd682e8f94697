"""Counting hits per request, in full and in prefix mode.

In prefix mode an access counts only if every earlier block of its request hit too: a prefix
cache can reuse a request's KV up to its first miss and must recompute everything after it.
The cache itself is replayed the same way in both modes; only the counting differs.
"""

from __future__ import annotations

import numpy as np

from kvviz.policies._jit import kernel


@kernel
def hits_per_request(hit: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hits, prefix hits) of each request; request r owns ``hit[offsets[r]:offsets[r+1]]``."""
    n_requests = len(offsets) - 1
    full = np.zeros(n_requests, np.int64)
    prefix = np.zeros(n_requests, np.int64)
    for r in range(n_requests):
        leading = True
        for i in range(offsets[r], offsets[r + 1]):
            if hit[i]:
                full[r] += 1
                if leading:
                    prefix[r] += 1
            else:
                leading = False
    return full, prefix
