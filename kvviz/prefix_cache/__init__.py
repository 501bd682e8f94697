"""Prefix-cache replay (SGLang's RadixCache over a trace) and the views built on it.

``replay`` holds the compiled replay and its sweep, ``views`` the readings of a curve (memory,
money, windows, requests), ``example`` the worked example (Tair LiteHit's five requests).
"""

from kvviz.prefix_cache.replay import (
    CURVE_COLUMNS,
    POLICY_NAMES,
    RULES,
    PrefixPolicy,
    PrefixReplay,
    cached_tokens,
    cost,
    curve_of_table,
    final_state,
    hits_table,
    parse_policies,
    parse_policy,
    prefix_nodes,
    prepare,
    request_hits,
    sweep,
    warm_up,
)
from kvviz.prefix_cache.views import (
    BLOCK_TWINS,
    GIB,
    SHARES,
    MemoryPrice,
    Reach,
    block_bytes,
    by_turn,
    comparison,
    curve_notes,
    fraction_notes,
    hit_fractions,
    memory_price,
    paper_rows,
    reach_notes,
    reach_table,
    reaches,
    window_notes,
    window_ratios,
)

__all__ = [
    "BLOCK_TWINS", "CURVE_COLUMNS", "GIB", "POLICY_NAMES", "RULES", "SHARES", "MemoryPrice", "PrefixPolicy",
    "PrefixReplay", "Reach", "block_bytes", "by_turn", "cached_tokens", "comparison", "cost", "curve_notes",
    "curve_of_table", "final_state", "fraction_notes", "hit_fractions", "hits_table", "memory_price", "paper_rows",
    "parse_policies", "parse_policy", "prefix_nodes", "prepare", "reach_notes", "reach_table", "reaches",
    "request_hits", "sweep", "warm_up", "window_notes", "window_ratios",
]
