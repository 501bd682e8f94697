"""Block caches: a trace's block accesses replayed through eviction policies, SHARDS sampling,
who leads a hit curve and why, and its figures."""
