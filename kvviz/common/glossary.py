"""The jargon the pages use, each defined once, in words a student can follow.

Pages put a definition where the term first appears: in a control's ``help`` (``define("MFU")``)
or in the "Terms" popover beside a figure (``ui.kit.frame.terms``). The course notes the pages cite
are named in full here, so "lecture 27 §5" always says which course's lecture it is; an exercise is
cited with its lecture ("lecture 27, exercise 1").
"""

from __future__ import annotations

TERMS: dict[str, str] = {
    "lock count": "How many users still need a radix-tree node's KV: running requests whose prefix "
    "passes through it, and pending CPU↔GPU copies. A node whose lock count is above zero is never "
    "evicted, so an eviction can free fewer tokens than asked when the leaves are locked.",
    "D/H": "Where a node's KV lives in a hierarchical cache: D = device (GPU memory) only, H = host "
    "(CPU memory) only, D+H = both (a GPU copy with a backup on the host, which can be evicted "
    "from the GPU without recomputation).",
    "AR(1)": "First-order autoregressive process: each value is the previous one pulled towards the mean "
    "plus fresh noise. For the 'persistent' bandwidth trace the values are the chunks' bandwidths, "
    "so a slow chunk is usually followed by a slow one; for the synthetic KV they are a channel's "
    "values along the tokens (correlation ρ).",
    "i.i.d.": "Independent and identically distributed: every chunk's bandwidth is drawn afresh from the "
    "same distribution, with no memory of the chunk before.",
    "rANS": "Range asymmetric numeral systems: the entropy coder CacheGen uses to pack quantised KV "
    "values into close to their entropy in bits, decodable fast enough for streaming.",
    "SHARDS": "Spatially hashed sampling (Waldspurger et al., FAST'15): keep only the blocks whose hash "
    "falls in a chosen share R of the hash space, replay them through a cache R times the size, and read "
    "the hit ratio off the sample: a close estimate of the whole trace's curve at a fraction of the work.",
    "anti-phase correlation": "How strongly prefill load and decode load move in opposite directions "
    "(one high while the other is low), measured as their correlation at the time lag where it is most "
    "negative: −1 is a perfect see-saw, 0 no coupling.",
    "t_d": "Mooncake's predicted decode time of a request: the prediction-based rejection assumes every "
    "decode lasts t_d seconds to estimate the decode load at the moment a prefill will finish.",
    "MFU": "Model FLOPs utilisation: the fraction of the GPU's peak FLOP/s that prefill really achieves. "
    "Prefill time = FLOPs ÷ (peak × MFU).",
    "HKVD": "High-KV-deviation tokens: in CacheBlend, the tokens whose reused KV differs most from what "
    "full prefill would compute; recomputing only those (r % of the tokens) restores most of the "
    "cross-chunk attention.",
    "TTFT": "Time to first token: from a request's arrival until its first output token (queueing, KV "
    "transfer and prefill).",
    "SLO": "Service-level objective: the latency a request must meet (here a TTFT or TBT limit).",
    "TBT": "Time between tokens: the gap between consecutive output tokens while a request decodes.",
    "lecture 9": "Lecture 9 of Stanford CS349D AI Inference Infrastructure (Spring 2026), 'Context "
    "Management': Mooncake, CacheGen and Strata; the project's first lecture note.",
    "lecture 27": "Lecture 27 of CMU 11-868 Large Language Model Systems (Spring 2026), Junchen Jiang's "
    "guest lecture 'KV Cache: a new AI memory abstraction' (CacheGen, CacheBlend, LMCache); "
    "the project's second lecture note.",
}


def define(term: str) -> str:
    """The definition of ``term`` as one line ("term: …"), for a control's help text."""
    return f"**{term}**: {TERMS[term]}"
