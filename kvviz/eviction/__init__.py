"""Block caches: the replay of a trace's block accesses through eviction policies, SHARDS sampling, who leads a hit curve and why, and its figures."""
