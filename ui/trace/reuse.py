"""A trace's reuse measures for the Trace page, cached on its fingerprint. They weigh about as much
as the trace itself, so they are shared, never copied per run (``st.cache_resource``; the figures
only read them), and an upload's entry goes when the upload is dropped (``ui.kit.uploads``)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz.traces import Trace
from kvviz.traces.reuse import stack_distances
from kvviz.traces.stats import block_counts
from ui.kit import uploads


@uploads.released_with_upload
@st.cache_resource(max_entries=16, ttl="1h", show_spinner="Measuring reuse…")
def reuse_of(key: str, _trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Popularity counts, and LRU stack distances as int32: a distance is below the trace's block
    accesses, which ``kvviz.traces.MAX_ACCESSES`` keeps below 2^31."""
    return block_counts(_trace.blocks), stack_distances(_trace.blocks).astype(np.int32)
