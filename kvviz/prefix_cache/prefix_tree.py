"""The trace's prefix tree, aggregated: which shared prefixes carry the reuse.

Every distinct prefix of a trace is a node (``kvviz.prefix_cache.prefix_nodes`` re-chains the
block ids on their parent); a node used by ``r`` requests could be served from cache ``r − 1``
times, so it carries ``(r − 1) × block tokens`` of reusable tokens — what an infinite prefix
cache saves there. A large trace has hundreds of thousands of nodes, so the tree is cut to the
``top`` nodes used by the most requests (a parent is used at least as often as its child, so the
cut keeps every kept node's ancestors), and chains of kept nodes shared by the same requests are
drawn as one segment ("blocks 1–20"). This is the export of hot radix paths that Tair KVCache's
optimizer offers, drawn as an icicle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common.errors import require
from kvviz.prefix_cache.replay import PrefixReplay

ROOT = -1
SEGMENT_COLUMNS = (
    "segment",
    "parent",
    "first_block",
    "last_block",
    "blocks",
    "tokens",
    "requests",
    "reused_tokens",
    "first_s",
    "last_s",
)


@dataclass(frozen=True)
class PrefixTree:
    """The kept part of a trace's prefix tree as segments (one row each, parents before children)."""

    segments: pd.DataFrame
    total_nodes: int
    kept_nodes: int
    reused_tokens: int  # over the whole tree
    block_size: int

    @property
    def kept_reused_tokens(self) -> int:
        return int(self.segments["reused_tokens"].sum())


def node_stats(replay: PrefixReplay) -> pd.DataFrame:
    """Per node: requests using it, first and last use (s since the trace's first arrival)."""
    request = np.repeat(np.arange(replay.n_requests), np.diff(replay.offsets))
    t = (replay.timestamps_ms[request] - replay.timestamps_ms.min()) / 1000.0
    first = np.full(replay.n_nodes, np.inf)
    last = np.full(replay.n_nodes, -np.inf)
    np.minimum.at(first, replay.nodes, t)
    np.maximum.at(last, replay.nodes, t)
    return pd.DataFrame(
        {
            "parent": replay.parent,
            "depth": replay.depth,
            "requests": np.bincount(replay.nodes, minlength=replay.n_nodes),
            "first_s": first,
            "last_s": last,
        }
    )


def prefix_tree(replay: PrefixReplay, top: int = 200) -> PrefixTree:
    """The ``top`` most used nodes, chains shared by the same requests merged into segments."""
    require(1 <= top <= 5000, f"the tree shows 1..5000 nodes, got {top}", field="top")
    stats = node_stats(replay)
    order = np.lexsort((stats["depth"].to_numpy(), -stats["requests"].to_numpy()))
    kept = np.sort(order[:top])
    kept = kept[np.argsort(stats["depth"].to_numpy()[kept], kind="stable")]
    parent = stats["parent"].to_numpy()
    requests = stats["requests"].to_numpy()
    kept_children = pd.Series(parent[kept]).value_counts()
    group: dict[int, int] = {}
    for node in kept.tolist():
        p = int(parent[node])
        merge = p != ROOT and p in group and kept_children.get(p, 0) == 1 and requests[p] == requests[node]
        group[node] = group[p] if merge else node
    heads = np.array(list(group.values()))
    members = np.array(list(group.keys()))
    frame = pd.DataFrame({"segment": heads, "node": members, "depth": stats["depth"].to_numpy()[members]})
    seg = (
        frame.groupby("segment", sort=False)
        .agg(first_block=("depth", "min"), last_block=("depth", "max"), blocks=("node", "size"))
        .reset_index()
    )
    head_parent = parent[seg["segment"].to_numpy()]
    seg["parent"] = [group.get(int(p), ROOT) if p != ROOT else ROOT for p in head_parent]
    seg["first_block"] += 1
    seg["last_block"] += 1
    seg["tokens"] = seg["blocks"] * replay.block_size
    seg["requests"] = requests[seg["segment"].to_numpy()]
    seg["reused_tokens"] = (seg["requests"] - 1) * seg["tokens"]
    seg["first_s"] = stats["first_s"].to_numpy()[seg["segment"].to_numpy()]
    seg["last_s"] = stats["last_s"].to_numpy()[seg["segment"].to_numpy()]
    total = int(((requests - 1) * replay.block_size).sum())
    return PrefixTree(seg[list(SEGMENT_COLUMNS)], replay.n_nodes, len(kept), total, replay.block_size)


def hottest(tree: PrefixTree, n: int = 10) -> pd.DataFrame:
    """The ``n`` segments carrying the most reusable tokens, as a readable table."""
    rows = tree.segments.sort_values("reused_tokens", ascending=False, kind="stable").head(n)
    return pd.DataFrame(
        {
            "blocks": [f"{a}–{b}" if a != b else f"{a}" for a, b in zip(rows["first_block"], rows["last_block"])],
            "tokens": rows["tokens"].to_numpy(),
            "requests": rows["requests"].to_numpy(),
            "reused tokens": rows["reused_tokens"].to_numpy(),
            "first use (s)": rows["first_s"].to_numpy(),
            "last use (s)": rows["last_s"].to_numpy(),
        }
    )


def tree_notes(tree: PrefixTree) -> list[str]:
    """What the aggregated tree says: how concentrated the reuse is, and its hottest segment."""
    if tree.reused_tokens == 0:
        return ["No prefix is used twice in this trace: an infinite prefix cache would reuse nothing."]
    share = tree.kept_reused_tokens / tree.reused_tokens
    best = tree.segments.sort_values("reused_tokens", ascending=False).iloc[0]
    span = (
        f"blocks {int(best['first_block'])}–{int(best['last_block'])}"
        if best["blocks"] > 1
        else f"block {int(best['first_block'])}"
    )
    return [
        f"The {tree.kept_nodes:,} most used of {tree.total_nodes:,} distinct prefixes carry {share:.0%} of all "
        "reusable tokens: reuse concentrates on a few shared heads.",
        f"The hottest segment ({span}, {int(best['tokens']):,} tokens) is used by {int(best['requests']):,} "
        f"requests between {best['first_s']:,.0f} s and {best['last_s']:,.0f} s — "
        f"{int(best['reused_tokens']):,} tokens a cache could serve instead of recomputing.",
    ]
