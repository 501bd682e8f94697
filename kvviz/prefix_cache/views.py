"""Reading prefix-cache curves: prefix against block cache, memory in GiB and dollars, windows, requests.

Capacity in bytes follows the ledger (``kvviz.common.hardware``): one block holds ``block tokens × KV
bytes per token`` of the chosen model. Memory is priced per device (``kvviz.common.hardware.DevicePrices``,
each default with its source): GPU HBM as the share of its own GPU's hour it is (``GPU-hour ÷ HBM
capacity``), CPU DRAM at the price of server memory. Markers at 80/90/95% of the infinite-cache
ceiling follow Tair KVCache's capacity trade-off curve (which marks 95% and 99%).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import paper
from kvviz.common.errors import require
from kvviz.common.hardware import DevicePrices, GPUSpec, ModelSpec
from kvviz.common.numbers import readable
from kvviz.eviction.curves import curve_of, nice_window
from kvviz.eviction.grid import INFINITE
from kvviz.ledger.ledger import Prices
from kvviz.prefix_cache.example import LITEHIT_REPORTED
from kvviz.prefix_cache.replay import PrefixReplay, label

GIB = 2**30
SHARES: tuple[float, ...] = (0.8, 0.9, 0.95)
BLOCK_TWINS: tuple[str, ...] = ("lru", "lfu", "fifo")
"""Policies that exist on both sides: SGLang's radix keys and the block cache's (kvviz.eviction.replay)."""


def block_bytes(model: ModelSpec, block_tokens: int) -> float:
    """KV bytes of one cache block: the model's KV bytes per token × tokens per block."""
    require(block_tokens >= 1, f"block size must be at least 1 token, got {block_tokens}", field="block_size")
    return model.kv_bytes_per_token * block_tokens


@dataclass(frozen=True)
class MemoryPrice:
    """Dollars per GiB-hour of GPU HBM and of CPU DRAM."""

    hbm: float
    dram: float


def memory_price(gpu: GPUSpec, prices: DevicePrices | None = None) -> MemoryPrice:
    """HBM at ``gpu``'s own GPU-hour and DRAM as server memory (default: each device's list price)."""
    p = prices or DevicePrices.for_gpu(gpu)
    return MemoryPrice(p.hbm_per_gib_hour(gpu), p.dram_per_gib_hour())


@dataclass(frozen=True)
class Reach:
    """The smallest swept capacity where a policy's curve reaches ``share`` of the infinite cache."""

    policy: str
    share: float
    capacity: float | None  # None: no swept capacity gets there
    hit_ratio: float


def reaches(curve: pd.DataFrame, ceiling: float, shares: Sequence[float] = SHARES) -> list[Reach]:
    """Per policy and share, the first finite capacity whose hit ratio is at least share × ceiling."""
    out = []
    finite = curve[np.isfinite(curve["capacity"])].sort_values("capacity", kind="stable")
    for policy, rows in finite.groupby("policy", sort=False):
        for share in shares:
            ok = rows[rows["hit_ratio"] >= share * ceiling - 1e-12]
            out.append(
                Reach(
                    str(policy),
                    share,
                    float(ok["capacity"].iloc[0]) if len(ok) else None,
                    float(ok["hit_ratio"].iloc[0]) if len(ok) else math.nan,
                )
            )
    return out


def reach_table(found: Sequence[Reach], bytes_per_block: float, price: MemoryPrice) -> pd.DataFrame:
    """The reaches with their memory (GiB) and what that memory costs per hour in HBM and in DRAM."""
    rows = []
    for r in found:
        gib = r.capacity * bytes_per_block / GIB if r.capacity is not None else math.nan
        rows.append(
            {
                "policy": label(r.policy),
                "share of ceiling": f"{r.share:.0%}",
                "capacity (blocks)": r.capacity if r.capacity is not None else math.nan,
                "hit ratio": r.hit_ratio,
                "GiB": gib,
                "HBM $/h": gib * price.hbm,
                "DRAM $/h": gib * price.dram,
            }
        )
    return pd.DataFrame(rows)


def comparison(prefix: pd.DataFrame, block_prefix_mode: pd.DataFrame, block_all: pd.DataFrame) -> pd.DataFrame:
    """Prefix cache beside block cache per (policy, capacity): ``prefix``, ``block (prefix mode)``,
    ``block (every hit)`` hit ratios and ``difference`` = prefix − block (prefix mode)."""
    keys = ["policy", "capacity"]
    out = prefix[keys + ["hit_ratio"]].rename(columns={"hit_ratio": "prefix"})
    out = out.merge(
        block_prefix_mode[keys + ["hit_ratio"]].rename(columns={"hit_ratio": "block (prefix mode)"}), on=keys
    ).merge(block_all[keys + ["hit_ratio"]].rename(columns={"hit_ratio": "block (every hit)"}), on=keys)
    out["difference"] = out["prefix"] - out["block (prefix mode)"]
    return out


@dataclass(frozen=True)
class Curves:
    """What the Curves view draws: every radix policy's prefix curve, the infinite-cache ceiling,
    where each policy reaches 80/90/95% of it, and the side-by-side with the block cache."""

    curve: pd.DataFrame  # policy, capacity, hits, accesses, hit_ratio
    ceiling: float
    found: tuple[Reach, ...]
    comp: pd.DataFrame | None  # ``comparison`` for the policies the block cache has too


def compare_curves(curve: pd.DataFrame, swept: pd.DataFrame | None, twins: Sequence[str]) -> Curves:
    """The Curves view's readings of a prefix curve and the block cache's sweep (``kvviz.eviction.replay.sweep``
    columns) of the ``twins``, the policies both caches have."""
    ceiling = float(curve[curve["capacity"] == INFINITE]["hit_ratio"].iloc[0])
    comp = (
        None
        if swept is None
        else comparison(curve[curve["policy"].isin(list(twins))], curve_of(swept, prefix=True), curve_of(swept))
    )
    return Curves(curve, ceiling, tuple(reaches(curve, ceiling)), comp)


def window_ratios(replay: PrefixReplay, table: np.ndarray, window_s: float | None = None) -> pd.DataFrame:
    """Hit ratio per (time window, capacity): rows are window starts (s since the first arrival),
    columns the table's capacity rows, from a hits table (capacity × request)."""
    ts = (replay.timestamps_ms - replay.timestamps_ms.min()) / 1000.0
    window = window_s or nice_window(float(ts.max()) if len(ts) else 0.0)
    start = np.floor(ts / window) * window
    blocks = np.diff(replay.offsets)
    windows, inverse = np.unique(start, return_inverse=True)
    accesses = np.bincount(inverse, weights=blocks, minlength=len(windows))
    ratios = np.stack([np.bincount(inverse, weights=row, minlength=len(windows)) for row in table], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame(ratios / accesses[:, None], index=pd.Index(windows, name="time_s"))


def hit_fractions(replay: PrefixReplay, hits: np.ndarray) -> np.ndarray:
    """Each request's cached tokens ÷ prompt tokens (a hit block is ``block_size`` tokens, the
    partial last block at most what is left of the prompt)."""
    return np.minimum(hits * replay.block_size, replay.input_lengths) / replay.input_lengths


def by_turn(requests: pd.DataFrame, fractions: np.ndarray, column: str = "turn") -> pd.DataFrame | None:
    """Mean hit fraction and request count by turn number, or None when the trace has no turns."""
    if column not in requests.columns:
        return None
    frame = pd.DataFrame({"turn": pd.to_numeric(requests[column], errors="coerce"), "fraction": fractions})
    frame = frame.dropna()
    if frame.empty:
        return None
    grouped = frame.groupby("turn")["fraction"].agg(["mean", "size"]).reset_index()
    return grouped.rename(columns={"mean": "mean hit fraction", "size": "requests"})


# ---- what to notice, and the comparison with papers and systems ----------------------------------


def _where(capacity: float, bytes_per_block: float | None) -> str:
    blocks = f"{int(capacity):,} blocks"
    return f"{blocks} ({readable(capacity * bytes_per_block / GIB)} GiB)" if bytes_per_block else blocks


def curve_notes(comp: pd.DataFrame, bytes_per_block: float | None = None) -> list[str]:
    """Per policy: how far the prefix cache is from the block cache (prefix mode), and which way."""
    finite = comp[np.isfinite(comp["capacity"])]
    notes = []
    for policy, rows in finite.groupby("policy", sort=False):
        k = int(np.argmax(np.abs(rows["difference"].to_numpy())))
        worst = rows.iloc[k]
        gap = 100 * float(worst["difference"])
        mean = 100 * float(rows["difference"].mean())
        if abs(gap) < 0.05:
            notes.append(f"**{str(policy).upper()}**: the two caches agree within 0.05 points at every capacity.")
            continue
        side = "prefix cache ahead" if gap > 0 else "block cache ahead"
        notes.append(
            f"**{str(policy).upper()}**: the widest gap is {gap:+.2f} points ({side}) at "
            f"{_where(float(worst['capacity']), bytes_per_block)}; on average {mean:+.2f} points."
        )
    lru = finite[finite["policy"] == "lru"]
    if len(lru):
        gap = 100 * float(lru["difference"].abs().max())
        notes.append(
            f"For LRU the gap stays within {gap:.2f} points. Block LRU's hits are already whole prefixes "
            "(a block's parent is used no earlier than the block, so its stack distance is never larger), "
            "so prefix mode loses nothing; the caches differ in what they keep: block LRU can hold a "
            "request's tail after its head is gone (the worked example), the radix tree frees whole edges "
            "of many blocks at once."
        )
    return notes


def reach_notes(table: pd.DataFrame) -> list[str]:
    """Which policy reaches 90% of the ceiling with the least memory, and what that memory costs."""
    at = table[(table["share of ceiling"] == "90%") & table["GiB"].notna()]
    if at.empty:
        return ["No policy reaches 90% of the infinite-cache ceiling in the swept range: widen the capacity range."]
    best = at.sort_values("GiB").iloc[0]
    return [
        f"**{best['policy']}** reaches 90% of the ceiling with the least memory: {readable(best['GiB'])} GiB, about "
        f"${best['HBM $/h']:,.2f} an hour as GPU HBM against ${best['DRAM $/h']:,.4f} as CPU DRAM — the HBM "
        "price is the GPU-hour the memory comes with."
    ]


def fraction_notes(fractions: np.ndarray, turns: pd.DataFrame | None) -> list[str]:
    """How hits spread over requests: all-or-nothing or partial, and how they grow with turns."""
    none = float(np.mean(fractions == 0))
    most = float(np.mean(fractions >= 0.9))
    partial = 1 - none - most
    notes = [
        f"{none:.0%} of requests find nothing cached, {most:.0%} find 90% or more of their prompt, and "
        f"{partial:.0%} something in between: one hit ratio over all blocks hides this spread."
    ]
    if turns is not None and len(turns) >= 2:
        first, last = turns.iloc[0], turns.iloc[-1]
        notes.append(
            f"Turn {int(first['turn'])} has {first['mean hit fraction']:.0%} of its prompt cached, turn "
            f"{int(last['turn'])} {last['mean hit fraction']:.0%}: each turn re-sends the history, "
            "which the cache holds if it survived the think time."
        )
    return notes


def window_notes(
    windows: pd.DataFrame, labels: Sequence[str], policy: str, other: str, diff: pd.DataFrame
) -> list[str]:
    """Warm-up, and where in time and capacity two policies differ most."""
    notes = []
    first = windows.iloc[0]
    later = windows.iloc[len(windows) // 2 :].mean()
    col = len(labels) - 1
    notes.append(
        f"At {labels[col]} the first window hits {float(first.iloc[col]):.2f} against "
        f"{float(later.iloc[col]):.2f} on average in the second half: a cold cache warms up."
    )
    z = diff.to_numpy()
    if np.isfinite(z).any() and np.nanmax(np.abs(z)) > 0:
        i, j = np.unravel_index(np.nanargmax(np.abs(z)), z.shape)
        notes.append(
            f"{label(policy)} − {label(other)} is largest ({z[i, j]:+.2f}) in the window at "
            f"{diff.index[i]:,.0f} s and {labels[j]}; the heatmap shows whether a policy's lead is steady "
            "or comes from a few bursts."
        )
    else:
        notes.append(f"{label(policy)} and {label(other)} hit exactly alike in every window and capacity.")
    return notes


def paper_rows(prefix_total: int, block_total: int) -> list[dict[str, str]]:
    """LiteHit's worked case and the course notes' memory prices beside this page's numbers."""
    prices = Prices()
    return [
        paper.close(
            "Tair LiteHit worked case: prefix-hit blocks at 2 blocks, tail-first / head-first LRU",
            f"{LITEHIT_REPORTED['prefix']} / {LITEHIT_REPORTED['block']} (LiteHit's README, §10)",
            f"{prefix_total} / {block_total}",
            [(LITEHIT_REPORTED["prefix"], prefix_total), (LITEHIT_REPORTED["block"], block_total)],
            0.0,
        ),
        paper.given(
            "GPU-hour and secondary-storage TB-hour (memory prices)",
            "$2.00 / $0.15 (course notes: CMU 11-868 lecture 27 §1.3)",
            f"${prices.gpu_per_hour:.2f} / ${prices.storage_per_tb_hour:.2f}",
            "the Ledger page's prices",
        ),
    ]
