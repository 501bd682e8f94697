"""Block ids numbered 0, 1, 2, …: the form every compiled replay indexes its arrays by."""

from __future__ import annotations

import numpy as np

from kvviz.traces import Trace


def dense_block_ids(trace: Trace, dtype: type = np.int64) -> np.ndarray:
    """The trace's block ids numbered 0, 1, 2, … as ``dtype``. A trace whose ids are already so
    numbered (``ids_dense``, as a library entry stores them in first-use order, as int32) is used as
    it is, without the sort a relabelling costs (nor a copy, when ``dtype`` is theirs); any other is
    relabelled in the order of its ids."""
    if trace.ids_dense:
        return np.asarray(trace.blocks, dtype=dtype).reshape(-1)
    return np.unique(trace.blocks, return_inverse=True)[1].astype(dtype).reshape(-1)
