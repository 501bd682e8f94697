"""Block-cache eviction policies, each a compiled per-access loop returning a hit mask."""
