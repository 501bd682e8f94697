"""The page map: one entry per dashboard page, shared by the router, the home cards and tests.

The router (``app.py``) lists a page only when its file exists in ``pages/``, so a page is
added to the app by adding its file; its place in the navigation is decided here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

SECTIONS: tuple[str, ...] = (
    "Cache contents",
    "Reuse and eviction",
    "Moving KV",
    "Serving cluster",
    "Model",
    "In class",
)

SECTION_BLURBS: dict[str, str] = {
    "Cache contents": "Where KV lives: which tokens' KV sits on the GPU, in CPU memory, or nowhere.",
    "Reuse and eviction": "How KV is reused: which blocks come back, and which a finite cache keeps.",
    "Moving KV": "How KV moves: compressed, streamed, and adapted to the bandwidth at hand.",
    "Serving cluster": "How a cluster schedules around KV: prefill and decode pools, overload, placement.",
    "Model": "What reuse does to a real model's answers, on a tiny LLaMA trained for this dashboard.",
    "In class": "The lectures' exercises, each opened on the page that answers it.",
}


@dataclass(frozen=True)
class PageInfo:
    """One page: its file stem under ``pages/`` (also its URL path), title, icon and card text."""

    stem: str
    title: str
    icon: str
    section: str
    blurb: str


PAGES: tuple[PageInfo, ...] = (
    PageInfo(
        "radix",
        "Radix tree & HiCache",
        ":material/account_tree:",
        "Cache contents",
        "Where KV lives: SGLang's radix tree and Strata's GPU/CPU HiRadixTree, node by node.",
    ),
    PageInfo(
        "ledger",
        "Where to keep KV",
        ":material/calculate:",
        "Cache contents",
        "KV size per token, load versus recompute, storage economics, and CPU or SSD tiers.",
    ),
    PageInfo(
        "radix_schedule",
        "Scheduling for reuse",
        ":material/low_priority:",
        "Cache contents",
        "The order a queue is served in decides the reuse: FCFS, longest prefix match and DFS-weight.",
    ),
    PageInfo(
        "trace",
        "Trace",
        ":material/timeline:",
        "Reuse and eviction",
        "How KV is reused: a request trace's arrivals, lengths, block popularity and reuse.",
    ),
    PageInfo(
        "eviction",
        "Eviction hit curves",
        ":material/query_stats:",
        "Reuse and eviction",
        "How reuse survives a finite cache: hit rate against capacity for eight policies.",
    ),
    PageInfo(
        "prefix_cache",
        "Prefix-cache replay",
        ":material/account_tree:",
        "Reuse and eviction",
        "A trace cached the way serving engines cache it: SGLang's radix tree or vLLM's block pool beside a "
        "block cache, in GiB.",
    ),
    PageInfo(
        "tiers",
        "Size the KV tiers",
        ":material/stacks:",
        "Reuse and eviction",
        "Your trace through GPU memory, host DRAM and SSD: hits, TTFT, dollars, and the cheapest mix.",
    ),
    PageInfo(
        "cachegen",
        "CacheGen streaming",
        ":material/network_check:",
        "Moving KV",
        "How KV moves: a KV codec and per-chunk adaptive levels over a changing bandwidth.",
    ),
    PageInfo(
        "strata",
        "Strata's I/O",
        ":material/swap_vert:",
        "Moving KV",
        "Why copying KV back to the GPU is slower than the link, and how Strata's layout and batching fix it.",
    ),
    PageInfo(
        "cluster",
        "Mooncake cluster",
        ":material/hub:",
        "Serving cluster",
        "Prefill/decode load under overload, early rejection, and KVCache-centric scheduling.",
    ),
    PageInfo(
        "cacheblend",
        "CacheBlend",
        ":material/join:",
        "Model",
        "Reusing non-prefix KV on a tiny trained LLaMA: which tokens must be recomputed.",
    ),
    PageInfo(
        "exercises",
        "Exercises",
        ":material/school:",
        "In class",
        "The exercises of lectures 9 and 27, each beside the live view that answers it, your answers checked.",
    ),
)


def page_info(stem: str) -> PageInfo:
    """The catalog entry for a page stem; raises KeyError for an unknown stem."""
    for info in PAGES:
        if info.stem == stem:
            return info
    raise KeyError(stem)
