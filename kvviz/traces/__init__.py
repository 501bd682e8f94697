"""Request traces: the ``Trace`` object, the formats kvviz reads, and the trace library.

``load_trace(path_or_bytes)`` reads Mooncake JSONL (FAST'25), Qwen-Bailian JSONL (ATC'25) and
CSV (vidur, splitwise, Azure, BurstGPT, or any with a column map), plain or gzip/zstd
compressed, at any size up to the documented ceiling. ``kvviz.traces.library`` stores imported
traces by content hash; ``kvviz.traces.cli`` is the one helper every command uses to take a trace.
"""

from kvviz.traces.formats import Format
from kvviz.traces.ingest import MAX_ACCESSES, MAX_INPUT_LENGTH, MAX_OUTPUT_LENGTH, MAX_REQUESTS, ReadOptions, load_trace
from kvviz.traces.model import DEFAULT_BLOCK_SIZE, Trace, blocks_needed, fingerprint, from_arrays, from_records
from kvviz.traces.source import FILES, MIB, UPLOAD_LIMIT_MIB, UPLOADS, Limits
from kvviz.traces.timeunits import TimeUnit

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "FILES",
    "Format",
    "Limits",
    "MAX_ACCESSES",
    "MAX_INPUT_LENGTH",
    "MAX_OUTPUT_LENGTH",
    "MAX_REQUESTS",
    "MIB",
    "ReadOptions",
    "TimeUnit",
    "Trace",
    "UPLOADS",
    "UPLOAD_LIMIT_MIB",
    "blocks_needed",
    "fingerprint",
    "from_arrays",
    "from_records",
    "load_trace",
]
