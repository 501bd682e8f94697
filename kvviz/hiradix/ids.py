"""Block ids numbered 0, 1, 2, …: the form every compiled replay indexes its arrays by."""

from __future__ import annotations

import numpy as np

from kvviz.traces import Trace
from kvviz.traces.reuse import dense_ids


def dense_block_ids(trace: Trace, dtype: type = np.int64) -> np.ndarray:
    """The trace's block ids as dense array indices, as ``dtype``. A trace whose ids are so numbered
    (``ids_dense``, as a library entry stores them in first-use order, as int32) is used as it is,
    without reading them (nor a copy, when ``dtype`` is theirs); any other goes through the one
    relabelling, :func:`kvviz.traces.reuse.dense_ids` (ids already in ``0 .. accesses-1`` kept, others
    numbered in the order of their ids)."""
    blocks = trace.blocks if trace.ids_dense else dense_ids(trace.blocks)[0]
    return np.asarray(blocks, dtype=dtype).reshape(-1)
