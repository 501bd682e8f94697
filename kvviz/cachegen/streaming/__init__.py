"""CacheGen's bandwidth-adaptive streaming of a context's KV, chunk by chunk (SIGCOMM'24 §5.3).

The context is cut into chunks (default 1,500 tokens); each chunk is pre-encoded at several
levels and can also be sent as text, which the GPU recomputes over the earlier chunks' KV. A
policy picks one configuration per chunk while the bandwidth changes; TTFT is the time the last
chunk is ready, and the SLO is met when TTFT <= SLO.

``setup`` holds what is streamed, ``bandwidth`` the bandwidth traces (generated or read from a
CSV), ``transfer`` the chunk-by-chunk send every policy shares, ``policies`` the paper's and the
artifact's rules and the fixed configurations, ``oracle`` the bound, ``results`` the tables of a
run and ``sweeps`` the sweeps over persistence and SLO. Everything is vectorised across K bandwidth
traces at once, so 1,000 random traces take a fraction of a second.
"""

from kvviz.cachegen.streaming.bandwidth import (
    BANDWIDTH_KINDS,
    MAX_CSV_BYTES,
    MAX_CSV_ROWS,
    MAX_GBPS,
    MAX_TIME_S,
    MAX_TRACES,
    MIN_GBPS,
    STEP_TRACE,
    Bandwidth,
    iid_traces,
    load_bandwidth_csv,
    make_bandwidth,
    persistent_traces,
    step_trace,
)
from kvviz.cachegen.streaming.oracle import ORACLE_GRID, OraclePlan, oracle_plan, oracle_run
from kvviz.cachegen.streaming.policies import policy_names, run_all, simulate, stream_cost
from kvviz.cachegen.streaming.results import by_mean_bandwidth, summary, timeline
from kvviz.cachegen.streaming.setup import (
    ARTIFACT_TEXT_S,
    GPU_NAME,
    KL_TIE,
    MAX_CHUNKS,
    MODEL_NAME,
    TEXT_BYTES_PER_TOKEN,
    ChunkMeasures,
    Level,
    StreamSetup,
    kv_values_per_token,
    prefill_seconds,
)
from kvviz.cachegen.streaming.sweeps import PERSISTENCE_GRID, persistence_sweep, slo_sweep
from kvviz.cachegen.streaming.transfer import Run

__all__ = [
    "ARTIFACT_TEXT_S",
    "BANDWIDTH_KINDS",
    "GPU_NAME",
    "KL_TIE",
    "MAX_CHUNKS",
    "MAX_CSV_BYTES",
    "MAX_CSV_ROWS",
    "MAX_GBPS",
    "MAX_TIME_S",
    "MAX_TRACES",
    "MIN_GBPS",
    "MODEL_NAME",
    "ORACLE_GRID",
    "PERSISTENCE_GRID",
    "STEP_TRACE",
    "TEXT_BYTES_PER_TOKEN",
    "Bandwidth",
    "ChunkMeasures",
    "Level",
    "OraclePlan",
    "Run",
    "StreamSetup",
    "by_mean_bandwidth",
    "iid_traces",
    "kv_values_per_token",
    "load_bandwidth_csv",
    "make_bandwidth",
    "oracle_plan",
    "oracle_run",
    "persistence_sweep",
    "persistent_traces",
    "policy_names",
    "prefill_seconds",
    "run_all",
    "simulate",
    "slo_sweep",
    "step_trace",
    "stream_cost",
    "summary",
    "timeline",
]
