"""Where vLLM's block pool and SGLang's radix tree part ways on a trace, in sentences computed from
their curves."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.vllm.block_pool import POLICY

GIB = 2**30


def engine_gaps(curve: pd.DataFrame, against: str = "lru") -> pd.DataFrame:
    """Per finite capacity: vLLM's and SGLang's (policy ``against``) hits and hit ratios, and
    ``difference`` = vLLM − SGLang in hit ratio."""
    finite = curve[np.isfinite(curve["capacity"])]
    ours = finite[finite["policy"] == POLICY].set_index("capacity")
    theirs = finite[finite["policy"] == against].set_index("capacity")
    out = pd.DataFrame(
        {
            "vllm hits": ours["hits"],
            "sglang hits": theirs["hits"],
            "vllm": ours["hit_ratio"],
            "sglang": theirs["hit_ratio"],
        }
    ).dropna()
    out["difference"] = out["vllm"] - out["sglang"]
    return out.reset_index()


def _where(capacity: float, bytes_per_block: float | None) -> str:
    blocks = f"{int(capacity):,} blocks"
    return f"{blocks} ({capacity * bytes_per_block / GIB:,.3g} GiB)" if bytes_per_block else blocks


def engine_notes(
    curve: pd.DataFrame, orphans: int, bytes_per_block: float | None = None, against: str = "lru"
) -> list[str]:
    """Where vLLM and SGLang differ most on this trace, which is ahead and why; and the orphaned
    tails counted in vLLM's final pool at the largest finite capacity (``orphans``)."""
    gaps = engine_gaps(curve, against)
    if gaps.empty:
        return []
    label = against.upper()
    k = int(np.argmax(np.abs(gaps["difference"].to_numpy())))
    worst = gaps.iloc[k]
    gap = 100 * float(worst["difference"])
    if abs(gap) < 0.005:
        lead = f"**vLLM** and **SGLang {label}** hit alike at every capacity shown."
    else:
        more = int(worst["vllm hits"] - worst["sglang hits"])
        side = "vLLM" if more > 0 else f"SGLang {label}"
        where = _where(float(worst["capacity"]), bytes_per_block)
        lead = (
            f"**{side}** is ahead where the engines differ most: at {where} "
            f"vLLM hits {int(worst['vllm hits']):,} blocks and SGLang {label} {int(worst['sglang hits']):,} "
            f"({gap:+.2f} points); over the capacities shown vLLM is ahead at "
            f"{int((gaps['difference'] > 0).sum())} and behind at {int((gaps['difference'] < 0).sum())} of "
            f"{len(gaps)}."
        )
    why = (
        "Why: to make room SGLang evicts a whole radix edge — every block of a leaf, however many it needs — "
        "while vLLM takes single blocks from the head of its free queue, a request's tail first, so the rest "
        "of a prefix stays cached for the next request that shares it."
    )
    if (gaps["difference"] < 0).any():
        why += (
            f" Where SGLang is ahead, its {label} key kept a prefix that vLLM's queue order (when a block was "
            "last freed) let go."
        )
    orphan = (
        f"{orphans:,} cached block{'s' if orphans != 1 else ''} of vLLM's final pool "
        f"{'are' if orphans != 1 else 'is'} orphaned (a tail whose head was evicted, which no lookup reaches): "
        "served one at a time, a request frees its tail before its head, so a tail never outlives its head; "
        "on a server, blocks still held by running requests can orphan one."
    )
    return [lead, why, orphan]
