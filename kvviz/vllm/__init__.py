"""vLLM's prefix caching: its block pool replayed over a trace, beside SGLang's radix tree.

``block_pool`` holds the compiled replay (chained block hashes, the free queue) and its sweep,
``compare`` the sentences that say where the two engines part ways on a trace, and ``example``
the worked example where they do.
"""

from kvviz.vllm.block_pool import POLICY, BlockPool, PoolState, final_state, hits_table, request_hits, sweep, warm_up
from kvviz.vllm.compare import engine_gaps, engine_notes
from kvviz.vllm.example import EDGE_CAPACITY, EDGE_SCRIPT, engines_example

__all__ = [
    "EDGE_CAPACITY",
    "EDGE_SCRIPT",
    "POLICY",
    "BlockPool",
    "PoolState",
    "engine_gaps",
    "engine_notes",
    "engines_example",
    "final_state",
    "hits_table",
    "request_hits",
    "sweep",
    "warm_up",
]
