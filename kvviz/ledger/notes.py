"""The ledger page's "What to notice", generated from the tables each view shows, and its paper notes.

Lecture 27's KV ledger (§2 KV size, §3 load vs recompute and the break-even bandwidth, §5 storage
economics, §6.3 CPU and SSD tiers): every claim here reads the numbers of the table or figure
beside it (``kvviz.ledger.ledger``'s size, break-even, load-or-recompute, multi-turn and economics
tables, ``kvviz.ledger.tiers.compare``'s summary), so an edited model, GPU, link or price changes the
words with the numbers, and a claim is never stronger than what the viewer sees.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from kvviz.common.hardware import LinkSpec, ModelSpec
from kvviz.common.numbers import readable

BREAKEVEN = "break-even GB/s per GPU"
# What each view's paper rows compare, and where the inputs come from (the notes under "paper vs simulation").
SIZE_PAPER_NOTE = (
    "KV sizes are exact arithmetic from the model configs; they agree to the byte. The per-day figure "
    "multiplies the course notes' throughput; it is not modelled."
)
RECOMPUTE_PAPER_NOTE = (
    "All rows use one H100 at the MFU in the sidebar. The notes' 6 GB/s for Llama-3-8B is at a shorter "
    "context (5.9 GB/s at 4K here); their turn-20 prompt length is not stated, so the default chat "
    "(230 + 370 tokens a turn) is a fit."
)
ECONOMICS_PAPER_NOTE = (
    "The course notes' formula for 1.06% is not given: storage $/h ÷ GPU $/h with its inputs gives 0.94% "
    "(1.06% needs ~1.13 TB (1.03 TiB) per node). The notes' lecture-27 time model prefills 10K tokens of 70B in "
    "0.58 s on 8 H100s; set MFU to 0.33 to match it."
)
TIERS_PAPER_NOTE = (
    "One GPU, first come first served, prefill only (decoding is not simulated); loads are not overlapped "
    "with compute. The notes' absolute TTFTs come from their own simulator and are not printed, so only "
    "directions are compared. The course notes' LMCache vs engine offload (70B on MI300X, 19 users: TTFT 0.15 "
    "vs 1.63 s) is a measured system and is not simulated here."
)
APART = 2.0  # KV and parameter ratios this far apart: size "does not follow" parameters


def _span(low: float, high: float, digits: int = 3) -> str:
    a, b = readable(low, digits), readable(high, digits)
    return a if a == b else f"{a}–{b}"


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def size_notes(
    size: pd.DataFrame, models: Mapping[str, ModelSpec], model: str, context: int, capacity_gib: float
) -> list[str]:
    """The Size view: KV per token by attention design, one context against the memory, size vs parameters."""
    kib = size.groupby("attention", sort=False)["KiB/token"].agg(["min", "max"]).sort_values("max", ascending=False)
    kinds = "; ".join(f"{a} {_span(r['min'], r['max'])} KiB" for a, r in kib.iterrows())
    notes = [
        f"KV per token = layers × 2 (K and V) × KV heads × head dim × bytes, so the attention design sets it: "
        f"{kinds} per token in the table."
    ]
    row = size.set_index("model").loc[model]
    fits = int(row["tokens in capacity"])
    many = fits // max(context, 1)
    notes.append(
        f"At {context:,} tokens one context of {model} is {readable(row['GiB per context'])} GiB of KV: "
        f"{readable(capacity_gib)} GiB holds {fits:,} tokens, "
        + (
            f"{many:,} such context{'s' * (many != 1)}."
            if many
            else "not even one such context: it must live elsewhere."
        )
    )
    shown = [m for m in size["model"] if m in models]
    if len(shown) > 1:
        big, small = max(shown, key=lambda m: models[m].params_b), min(shown, key=lambda m: models[m].params_b)
        p = models[big].params_b / models[small].params_b
        k = models[big].kv_bytes_per_token / models[small].kv_bytes_per_token
        kv = f"{k:.1f}× its KV per token" if k >= 1 else f"{1 / k:.1f}× less KV per token"
        lead = (
            "Size does not follow parameters"
            if abs(math.log(k / p)) > math.log(APART)
            else "Here size follows parameters"
        )
        notes.append(f"{lead}: {big} has {p:.1f}× the parameters of {small} and {kv}.")
    return notes


def breakeven_notes(be: pd.DataFrame, links: Mapping[str, LinkSpec]) -> list[str]:
    """The break-even curves: how context and model move the bar, and which links clear it."""
    notes = [
        "Break-even bandwidth = KV bytes per token ÷ recompute time per token. Above it, load; below it, recompute."
    ]
    if be.empty:
        return notes
    lo_ctx, hi_ctx = int(be["context"].min()), int(be["context"].max())
    ends = be[be["context"].isin([lo_ctx, hi_ctx])].pivot_table(index="model", columns="context", values=BREAKEVEN)
    if lo_ctx < hi_ctx:
        fall = ends[lo_ctx] / ends[hi_ctx]
        way = "falls" if fall.min() > 1 else "changes"
        notes.append(
            f"From {lo_ctx:,} to {hi_ctx:,} tokens of context the bar {way} "
            f"{_span(fall.min(), fall.max(), 2)}× (attention makes recompute grow faster than the bytes)."
        )
    at = min(be["context"].unique(), key=lambda c: abs(math.log(c / 8192)))
    ref = be[be["context"] == at].set_index("model")
    top, bottom = ref[BREAKEVEN].idxmax(), ref[BREAKEVEN].idxmin()
    if top != bottom:
        notes.append(
            f"At {at:,} tokens the bar is highest for {top} ({ref.at[top, 'attention']}, "
            f"{readable(ref.at[top, BREAKEVEN])} GB/s) and lowest for {bottom} ({ref.at[bottom, 'attention']}, "
            f"{readable(ref.at[bottom, BREAKEVEN])} GB/s), "
            f"{ref.at[top, BREAKEVEN] / ref.at[bottom, BREAKEVEN]:.0f}× apart."
        )
    low, high = be[BREAKEVEN].min(), be[BREAKEVEN].max()
    groups = {
        "clear the bar everywhere on the figure": [],
        "clear it for some models and contexts only": [],
        "stay below it everywhere": [],
    }
    for name, ln in links.items():
        bw = ln.gb_s * ln.efficiency
        groups[list(groups)[0 if bw > high else 2 if bw < low else 1]].append(f"{name} ({readable(bw)} GB/s)")
    said = [f"{_names(v)} {k}" for k, v in groups.items() if v]
    if said:
        notes.append("; ".join(said) + f" (the curves span {readable(low)}–{readable(high)} GB/s).")
    return notes


def load_notes(lr: pd.DataFrame, model: str, context: int) -> list[str]:
    """One context over every link (``kvviz.ledger.ledger.load_or_recompute``)."""
    if lr.empty:
        return []
    recompute = float(lr["recompute ms"].iloc[0])
    load = lr[lr["verdict"] == "load"].sort_values("load speed-up", ascending=False)
    slow = lr[lr["verdict"] != "load"]
    notes = [
        f"{model} recomputes {context:,} tokens in {readable(recompute)} ms; "
        + (
            f"loading them is faster over {_names(list(load['link']))} "
            f"(up to {readable(load['load speed-up'].iloc[0], 2)}×)"
            if len(load)
            else "no link loads them faster"
        )
        + (f", slower over {_names(list(slow['link']))}." if len(slow) else ".")
    ]
    near = lr.iloc[(lr["load speed-up"].map(math.log).abs()).argsort().iloc[0]]
    notes.append(
        f"{near['link']} is nearest break-even: {readable(near['load ms'])} ms to load against "
        f"{readable(recompute)} ms to recompute, so a small change of context, model or MFU flips its verdict."
    )
    return notes


def chat_notes(last: pd.DataFrame, turns: int) -> list[str]:
    """The last turn of the multi-turn chat (``kvviz.ledger.ledger.last_turn``): each tier's TTFT."""
    t = last.set_index("tier")["TTFT ms"]
    history = int(last["history tokens"].iloc[0])
    links = t.drop(["no cache", "GPU hit"], errors="ignore")
    notes = [
        f"At turn {turns} the history is {history:,} tokens: the turn's TTFT is {readable(t['no cache'], 4)} ms "
        f"with no cache (all recomputed), {readable(t['GPU hit'])} ms with a GPU hit."
    ]
    if len(links):
        slower = list(links[links > t["no cache"]].index)
        notes.append(
            f"Loading it over {links.idxmin()} takes {readable(links.min())} ms"
            + (
                f"; over {_names(slower)} it is slower than recomputing."
                if slower
                else "; every link shown beats recomputing."
            )
        )
    return notes


def economics_notes(econ: pd.DataFrame) -> list[str]:
    """Storage economics (``kvviz.ledger.ledger.economics_curve``): the reuse rate that pays for keeping KV."""
    hits = econ["break-even hits/h"]
    notes = [
        f"Keeping a context pays once it is reused {_span(hits.min(), hits.max(), 2)} times an hour "
        f"(every model and context on the figure); below one reuse an hour for {(hits < 1).mean():.0%} of them."
    ]
    soon, late = econ.loc[hits.idxmin()], econ.loc[hits.idxmax()]
    notes.append(
        f"{soon['model']} pays back soonest ({readable(soon['break-even hits/h'], 2)} hits/h at "
        f"{soon['context']:,} tokens), {late['model']} latest ({readable(late['break-even hits/h'], 2)} at "
        f"{late['context']:,})."
    )
    lo_ctx, hi_ctx = econ["context"].min(), econ["context"].max()
    ends = econ[econ["context"].isin([lo_ctx, hi_ctx])].pivot_table(
        index="model", columns="context", values="break-even hits/h"
    )
    if lo_ctx < hi_ctx:
        sooner = bool((ends[hi_ctx] < ends[lo_ctx]).all())
        notes.append(
            f"From {lo_ctx:,} to {hi_ctx:,} tokens, longer contexts pay back "
            + (
                "sooner for every model (recompute grows faster than the bytes kept)."
                if sooner
                else "sooner for some models only."
            )
        )
    return notes


def tiers_notes(summary: pd.DataFrame, fill: str) -> list[str]:
    """The tiered cache (``kvviz.ledger.tiers.compare``, setups in ``default_setups`` order): GPU only, a slow and
    a fast CPU tier, then an SSD."""
    s = summary.set_index("setup")
    gpu, slow, fast = s.iloc[0], s.iloc[1], s.iloc[2]
    notes = [
        f"GPU only: {gpu['recomputed %']:.0f}% of prompt tokens are recomputed (LRU evicts other users' "
        f"histories before they return); mean TTFT {gpu['mean TTFT s']:.2f} s."
    ]
    notes.append(
        f"The CPU tier serves {slow['CPU hit %']:.0f}% of the tokens from memory: mean TTFT "
        f"{gpu['mean TTFT s']:.2f} → {slow['mean TTFT s']:.2f} s with slow reads ({s.index[1]}), "
        f"{fast['mean TTFT s']:.2f} s with fast ones ({s.index[2]})."
    )
    if len(s) > 3:
        ssd = s.iloc[3]
        change = ssd["mean TTFT s"] / fast["mean TTFT s"] - 1
        notes.append(
            f"Adding the SSD: recomputed {fast['recomputed %']:.0f}% → {ssd['recomputed %']:.0f}% of the tokens, "
            f"mean TTFT {fast['mean TTFT s']:.2f} → {ssd['mean TTFT s']:.2f} s ({change:+.0%})"
            + (": the hit rate rises, the TTFT barely moves." if abs(change) < 0.1 else ".")
        )
    if fill == "write-through" and slow["CPU hit %"] < 1:
        notes.append(
            "With write-through the CPU tier holds copies of what the GPU already has: it serves "
            f"{slow['CPU hit %']:.1f}% of the tokens."
        )
    return notes
