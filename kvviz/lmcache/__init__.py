"""vLLM + LMCache: vLLM's block pool on the GPU and LMCache's chunked store over CPU, disk and remote backends.

``store`` is LMCache's chunk keys, lookup and backends; ``stack`` a trace through both.
"""

from kvviz.lmcache.stack import StackInstance, StackRun, replay
from kvviz.lmcache.store import BACKENDS, ChunkStore, LMCacheConfig, chunks_of_gib

__all__ = ["BACKENDS", "ChunkStore", "LMCacheConfig", "StackInstance", "StackRun", "chunks_of_gib", "replay"]
