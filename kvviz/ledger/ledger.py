"""The KV ledger: how big KV is, whether to load or recompute it, and what keeping it costs.

Follows lecture 9 §1 (size, storage tiers, the break-even bandwidth "KV bytes per token ÷ recompute
time per token", the 20-turn chat) and lecture 27 §1 (KV produced per GPU per day, the storage
economics of slide 9). Recompute times come from :func:`kvviz.common.hardware.prefill_seconds`; loading
from a tier takes ``bytes ÷ (nominal bandwidth × efficiency)``.

Memory is counted in binary units (KiB, GiB, TiB) and links in decimal GB/s, one system for the whole
page; the notes' decimal GB figures are converted where they are compared. Storage is priced as the
slide prices it, in dollars per decimal TB-hour (``Prices``); the page converts at its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import paper
from kvviz.common.budget import GIB
from kvviz.common.errors import require
from kvviz.common.hardware import DEFAULT_MFU, GB, TB, Compute, LinkSpec, ModelSpec, gpu, link, model, prefill_seconds
from kvviz.common.numbers import readable

TIB = 1024 * GIB
SECONDS_PER_DAY = 86_400
HOURS_PER_YEAR = 8_760


def _tokens(n, what: str = "tokens") -> int:
    require(
        isinstance(n, (int, float, np.integer)) and n >= 1 and float(n).is_integer(),
        f"{what} must be a whole number ≥ 1, got {n!r}",
        field=what,
    )
    return int(n)


# ---- size -----------------------------------------------------------------------------------------


def kv_bytes(m: ModelSpec, tokens: float) -> float:
    """Bytes of KV for ``tokens`` tokens."""
    return m.kv_bytes_per_token * tokens


def tokens_that_fit(m: ModelSpec, capacity_gib: float) -> int:
    """How many tokens of KV fit in ``capacity_gib`` GiB."""
    require(capacity_gib > 0, f"memory for KV must be > 0 GiB, got {capacity_gib}", field="capacity")
    return int(capacity_gib * GIB // m.kv_bytes_per_token)


def kv_per_day(m: ModelSpec, tokens_per_s: float) -> float:
    """Bytes of KV one GPU produces in a day at ``tokens_per_s`` tokens per second."""
    require(tokens_per_s > 0, f"throughput must be > 0 tokens/s, got {tokens_per_s}", field="tokens_per_s")
    return tokens_per_s * m.kv_bytes_per_token * SECONDS_PER_DAY


def size_table(models: Mapping[str, ModelSpec], context: int, capacity_gib: float) -> pd.DataFrame:
    """Per model: KV per token, per context of ``context`` tokens, and tokens that fit in the capacity."""
    context = _tokens(context, "context")
    rows = [
        {
            "model": m.name,
            "attention": m.attention,
            "bytes/token": int(m.kv_bytes_per_token),
            "KiB/token": m.kv_bytes_per_token / 1024,
            "GiB per context": kv_bytes(m, context) / GIB,
            "tokens in capacity": tokens_that_fit(m, capacity_gib),
        }
        for m in models.values()
    ]
    return pd.DataFrame(rows)


def size_curve(models: Iterable[ModelSpec], contexts: Iterable[int]) -> pd.DataFrame:
    """GiB of KV per model against context length (long form)."""
    return pd.DataFrame(
        [
            {"model": m.name, "attention": m.attention, "context": int(c), "GiB": kv_bytes(m, c) / GIB}
            for m in models
            for c in contexts
        ]
    )


# ---- load or recompute ----------------------------------------------------------------------------


def recompute_seconds_per_token(m: ModelSpec, compute: Compute, context: int) -> float:
    """Average prefill time per token of a ``context``-token prompt (attention makes it grow)."""
    context = _tokens(context, "context")
    return prefill_seconds(m, compute, context) / context


def breakeven_bytes_s(m: ModelSpec, compute: Compute, context: int) -> float:
    """Load bandwidth at which loading the KV takes as long as recomputing it (all GPUs together)."""
    return m.kv_bytes_per_token / recompute_seconds_per_token(m, compute, context)


def breakeven_table(models: Iterable[ModelSpec], compute: Compute, contexts: Iterable[int]) -> pd.DataFrame:
    """Break-even bandwidth per GPU against context length, one row per (model, context)."""
    rows = []
    for m in models:
        for c in contexts:
            bw = breakeven_bytes_s(m, compute, int(c))
            rows.append(
                {
                    "model": m.name,
                    "attention": m.attention,
                    "context": int(c),
                    "recompute µs/token": recompute_seconds_per_token(m, compute, int(c)) * 1e6,
                    "break-even GB/s per GPU": bw / compute.n_gpus / GB,
                }
            )
    return pd.DataFrame(rows)


def load_seconds(nbytes: float, ln: LinkSpec) -> float:
    return nbytes / ln.effective_bytes_s


def load_or_recompute(m: ModelSpec, compute: Compute, context: int, links: Mapping[str, LinkSpec]) -> pd.DataFrame:
    """For one context: time to load its KV over each link vs time to recompute it."""
    context = _tokens(context, "context")
    recompute = prefill_seconds(m, compute, context)
    nbytes = kv_bytes(m, context)
    rows = []
    for ln in links.values():
        load = load_seconds(nbytes, ln)
        rows.append(
            {
                "link": ln.name,
                "effective GB/s": ln.effective_bytes_s / GB,
                "load ms": load * 1e3,
                "recompute ms": recompute * 1e3,
                "load speed-up": recompute / load,
                "verdict": "load" if load < recompute else "recompute",
            }
        )
    return pd.DataFrame(rows).sort_values("load ms", ignore_index=True)


@dataclass(frozen=True)
class Chat:
    """A multi-turn chat: turn t's prompt is the system prompt, all earlier turns, and a new message."""

    turns: int = 20
    user_tokens: int = 230
    reply_tokens: int = 370
    system_tokens: int = 0

    def __post_init__(self):
        _tokens(self.turns, "turns")
        _tokens(self.user_tokens, "user_tokens")
        require(self.reply_tokens >= 0 and self.system_tokens >= 0, "token counts must be ≥ 0", field="reply_tokens")

    def cached(self, turn: int) -> int:
        """Tokens of history before turn ``turn``'s new message: what a cache can hold."""
        return self.system_tokens + (turn - 1) * (self.user_tokens + self.reply_tokens)

    def prompt(self, turn: int) -> int:
        return self.cached(turn) + self.user_tokens


def ttft_seconds(
    m: ModelSpec, compute: Compute, prompt: int, cached: int, ln: LinkSpec | None, overlap: bool = False
) -> float:
    """TTFT of one prompt whose first ``cached`` tokens' KV sits behind ``ln`` (None: already on the GPU).

    Without overlap the load finishes before the new tokens are computed (the notes' ledger); with
    layer-by-layer overlap only the first layer's load is exposed, or the whole load if it is longer.
    """
    compute_s = prefill_seconds(m, compute, prompt - cached, cached)
    if ln is None or cached == 0:
        return compute_s
    load = load_seconds(kv_bytes(m, cached), ln)
    if not overlap:
        return load + compute_s
    return max(load + compute_s / m.layers, load / m.layers + compute_s)


def multi_turn_ttft(
    m: ModelSpec, compute: Compute, chat: Chat, links: Mapping[str, LinkSpec], overlap: bool = False
) -> pd.DataFrame:
    """TTFT of every turn when the history is recomputed, on the GPU, or behind each link (long form)."""
    rows = []
    for t in range(1, chat.turns + 1):
        prompt, cached = chat.prompt(t), chat.cached(t)
        rows.append(
            {"turn": t, "tier": "no cache", "history tokens": cached, "TTFT s": prefill_seconds(m, compute, prompt)}
        )
        rows.append(
            {
                "turn": t,
                "tier": "GPU hit",
                "history tokens": cached,
                "TTFT s": ttft_seconds(m, compute, prompt, cached, None),
            }
        )
        for ln in links.values():
            rows.append(
                {
                    "turn": t,
                    "tier": ln.name,
                    "history tokens": cached,
                    "TTFT s": ttft_seconds(m, compute, prompt, cached, ln, overlap),
                }
            )
    return pd.DataFrame(rows)


# ---- economics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    """Slide 9's prices: a GPU-hour and a TB-hour of secondary storage, in dollars."""

    gpu_per_hour: float = 2.0
    storage_per_tb_hour: float = 0.15

    def __post_init__(self):
        require(self.gpu_per_hour > 0, f"GPU price must be > 0 $/h, got {self.gpu_per_hour}", field="gpu_per_hour")
        require(
            self.storage_per_tb_hour > 0,
            f"storage price must be > 0 $/TB·h, got {self.storage_per_tb_hour}",
            field="storage_per_tb_hour",
        )


def context_economics(m: ModelSpec, compute: Compute, context: int, prices: Prices) -> dict[str, float]:
    """Keeping one context's KV for an hour vs the GPU time one hit saves (lecture 27 §1.3)."""
    context = _tokens(context, "context")
    nbytes = kv_bytes(m, context)
    storage = nbytes / TB * prices.storage_per_tb_hour
    recompute = prefill_seconds(m, compute, context)
    saved = recompute / 3600 * compute.n_gpus * prices.gpu_per_hour
    return {
        "context": context,
        "KV GiB": nbytes / GIB,
        "storage $/h": storage,
        "recompute s": recompute,
        "GPU $ saved per hit": saved,
        "break-even hits/h": storage / saved,
    }


def economics_curve(
    models: Iterable[ModelSpec], compute: Compute, contexts: Iterable[int], prices: Prices
) -> pd.DataFrame:
    rows = [{"model": m.name, **context_economics(m, compute, int(c), prices)} for m in models for c in contexts]
    return pd.DataFrame(rows)


def node_breakeven_hit_rate(gpus_per_node: int, storage_tb: float, prices: Prices, prefill_share: float = 1.0) -> float:
    """Share of work that must hit the cache for the saved GPU time to pay a node's storage bill.

    ``prefill_share`` is the share of the node's GPU time a hit could save (1 = all of it is prefill).
    """
    _tokens(gpus_per_node, "gpus_per_node")
    require(storage_tb > 0, f"storage must be > 0 TB, got {storage_tb}", field="storage_tb")
    require(0 < prefill_share <= 1, f"prefill share must be in (0, 1], got {prefill_share}", field="prefill_share")
    return storage_tb * prices.storage_per_tb_hour / (gpus_per_node * prices.gpu_per_hour * prefill_share)


def fleet_savings(
    nodes: int,
    years: float,
    hit_rate: float,
    gpus_per_node: int,
    storage_tb: float,
    prices: Prices,
    prefill_share: float = 1.0,
) -> dict[str, float]:
    """Dollars a fleet saves at ``hit_rate`` over ``years``: GPU time saved, storage paid, net."""
    _tokens(nodes, "nodes")
    require(years > 0, f"years must be > 0, got {years}", field="years")
    require(0 <= hit_rate <= 1, f"hit rate must be in [0, 1], got {hit_rate}", field="hit_rate")
    hours = years * HOURS_PER_YEAR * nodes
    gross = hit_rate * prefill_share * gpus_per_node * prices.gpu_per_hour * hours
    storage = storage_tb * prices.storage_per_tb_hour * hours
    return {"GPU $ saved": gross, "storage $": storage, "net $": gross - storage}


# ---- what the page shows ---------------------------------------------------------------------------

DEFAULT_LINKS = ("pcie5-x16", "rdma-400g", "nvme", "cloud-10g", "cloud-3g")
BREAKEVEN_MODELS = ("llama-3-8b", "llama-3.1-70b", "qwen2.5-14b", "llama-2-7b", "deepseek-r1")
ECONOMICS_MODELS = ("llama-3-8b", "qwen2.5-14b", "llama-3.1-70b", "deepseek-r1")


SIZE_FORMATS = {
    "bytes/token": "localized",
    "tokens in capacity": "localized",
    "KiB/token": "%.1f",
    "GiB per context": "%.2f",
}
ECONOMICS_FORMATS = {
    "storage $/h": "$%.5f",
    "GPU $ saved per hit": "$%.5f",
    "KV GiB": "%.2f",
    "break-even hits/h": "%.3f",
}


def size_metrics(m: ModelSpec, context: int, capacity_gib: float, tokens_per_s: float) -> list[tuple[str, str, str]]:
    """The size view's cards, as (label, value, help): KV per token, per context, what fits, per GPU-day."""
    return [
        ("KV per token", f"{m.kv_bytes_per_token / 1024:,.1f} KiB", m.name),
        (f"per {context:,} tokens", f"{kv_bytes(m, context) / GIB:,.2f} GiB", ""),
        (f"tokens in {readable(capacity_gib)} GiB", f"{tokens_that_fit(m, capacity_gib):,}", ""),
        ("per GPU-day", f"{kv_per_day(m, tokens_per_s) / TIB:,.1f} TiB", f"at {tokens_per_s:,.0f} tokens/s"),
    ]


def economics_metrics(gpus_per_node: int, storage_tb: float, prices: Prices) -> list[tuple[str, str, str]]:
    """The economics view's cards, as (label, value, help): the node's break-even hit rate, a fleet's saving."""
    rate = node_breakeven_hit_rate(gpus_per_node, storage_tb, prices)
    fleet = fleet_savings(1000, 3, 0.10, gpus_per_node, storage_tb, prices)
    return [
        (
            "Break-even hit rate for the node",
            f"{rate:.2%}",
            "Storage $/h ÷ GPU $/h: the share of the node's work that must come from cache to pay for it.",
        ),
        (
            "1,000 nodes, 3 years, 10% hits: net saving",
            f"${fleet['net $'] / 1e6:,.1f} M",
            f"GPU time saved ${fleet['GPU $ saved'] / 1e6:,.1f} M minus storage ${fleet['storage $'] / 1e6:,.1f} M.",
        ),
    ]


def present(names: Iterable[str], table: Mapping[str, object]) -> list[str]:
    """The names that are (still) in ``table``, in order: a preset the viewer deleted drops out."""
    return [n for n in names if n in table]


def breakeven_pivot(be: pd.DataFrame, contexts: Iterable[int] = (1024, 4096, 8192, 32768, 131072)) -> pd.DataFrame:
    """Break-even GB/s per GPU at a few contexts: one row per context, one column per model."""
    shown = be[be["context"].isin(list(contexts))]
    return shown.pivot(index="context", columns="model", values="break-even GB/s per GPU").round(2).reset_index()


def last_turn(mt: pd.DataFrame, turns: int) -> pd.DataFrame:
    """The last turn of the chat per place the history lives, TTFT in ms."""
    last = mt[mt["turn"] == turns]
    return last.assign(**{"TTFT ms": last["TTFT s"] * 1e3})[["tier", "history tokens", "TTFT ms"]].round(1)


def economics_table(econ: pd.DataFrame, contexts: Iterable[int] = (1024, 8192, 65536)) -> pd.DataFrame:
    """The economics curve at a few contexts, with the columns a reader compares."""
    return econ[econ["context"].isin(list(contexts))][
        ["model", "context", "KV GiB", "storage $/h", "GPU $ saved per hit", "break-even hits/h"]
    ]


# ---- the lecture notes' numbers beside this ledger's ------------------------------------------------


def _pick(models: Mapping[str, ModelSpec], name: str) -> ModelSpec:
    return models.get(name) or model(name)


def size_rows(models: Mapping[str, ModelSpec]) -> list[dict[str, str]]:
    """Lecture 9 §1.1 and lecture 27 §1.2 against the current model table."""
    l8, q14, l70, ds = (_pick(models, n) for n in ("llama-3-8b", "qwen2.5-14b", "llama-3.1-70b", "deepseek-r1"))
    fit40 = tokens_that_fit(l8, 40 * GB / GIB)
    day = kv_per_day(ds, 2625) / TIB
    return [
        paper.close(
            "Llama-3-8B KV per token",
            "128 KiB",
            f"{l8.kv_bytes_per_token / 1024:,.1f} KiB",
            (131072, l8.kv_bytes_per_token),
            0,
        ),
        paper.close(
            "Qwen2.5-14B KV per token",
            "196,608 B",
            f"{q14.kv_bytes_per_token:,.0f} B",
            (196608, q14.kv_bytes_per_token),
            0,
        ),
        paper.close(
            "Llama-3.1-70B KV per token",
            "320 KiB",
            f"{l70.kv_bytes_per_token / 1024:,.1f} KiB",
            (327680, l70.kv_bytes_per_token),
            0,
        ),
        paper.close(
            "Llama-3-8B: an 8,000-token context",
            "1.05 GB = 0.98 GiB",
            f"{kv_bytes(l8, 8000) / GIB:.2f} GiB",
            (1.05 * GB / GIB, kv_bytes(l8, 8000) / GIB),
            0.01,
        ),
        paper.close("Llama-3-8B tokens in 40 GB (37.3 GiB)", "≈ 0.3 M", f"{fit40 / 1e6:.2f} M", (3e5, fit40), 0.05),
        paper.close(
            "Llama-3.1-70B: a 32K context (lecture 27, exercise 1)",
            "≈ 10.7 GB = 9.97 GiB",
            f"{kv_bytes(l70, 32768) / GIB:.2f} GiB",
            (10.7 * GB / GIB, kv_bytes(l70, 32768) / GIB),
            0.01,
        ),
        paper.close(
            "DeepSeek-R1 on one MI300X at 2,625 tok/s",
            "68.6 KiB/token, 15.9 TB/day = 14.5 TiB/day",
            f"{ds.kv_bytes_per_token / 1024:.1f} KiB/token, {day:.1f} TiB/day",
            [(68.6, ds.kv_bytes_per_token / 1024), (15.9 * TB / TIB, day)],
            0.01,
        ),
    ]


def recompute_rows(
    models: Mapping[str, ModelSpec], h100: Compute, links: Mapping[str, LinkSpec], chat: Chat | None = None
) -> list[dict[str, str]]:
    """Lecture 9 §1.2 (and lecture 9, exercise 1) on one H100 at the current MFU.

    At the default MFU the 188 ms row is a calibration: DEFAULT_MFU is fitted to it (and to 282 ms
    and 351 ms); at any other MFU it is a comparison.
    """
    l8, q14, l70, mha, gqa = (
        _pick(models, n) for n in ("llama-3-8b", "qwen2.5-14b", "llama-3.1-70b", "llama-2-7b", "mistral-7b")
    )
    t8 = prefill_seconds(l8, h100, 8000)
    be = {m.name: breakeven_bytes_s(m, h100, 8000) / GB for m in (l8, q14, l70, mha, gqa)}
    ln = {k: links.get(k) or link(k) for k in ("pcie5-x16", "rdma-400g", "nvme", "cloud-3g")}
    speed = {k: t8 / load_seconds(kv_bytes(l8, 8000), v) for k, v in ln.items()}
    chat = chat or Chat()
    p, c = chat.prompt(chat.turns), chat.cached(chat.turns)
    ttft = [
        prefill_seconds(l8, h100, p),
        ttft_seconds(l8, h100, p, c, None),
        ttft_seconds(l8, h100, p, c, ln["pcie5-x16"]),
        ttft_seconds(l8, h100, p, c, ln["cloud-3g"]),
    ]
    t8_row = ("Llama-3-8B: recompute 8,000 tokens on an H100", "188 ms", f"{t8 * 1e3:.0f} ms")
    return [
        paper.calibrated(*t8_row, f"MFU {DEFAULT_MFU} is fitted to this time, 282 ms and 351 ms")
        if h100.mfu == DEFAULT_MFU and h100.gpu == gpu("h100")
        else paper.close(*t8_row, (0.188, t8), 0.03),
        paper.close(
            "Qwen2.5-14B break-even, 351 ms per 8,000 tokens (lecture 9, exercise 1)",
            "≈ 4.5 GB/s",
            f"{be['qwen2.5-14b']:.2f} GB/s",
            (4.5, be["qwen2.5-14b"]),
            0.05,
        ),
        paper.close(
            "Llama-3-8B break-even per GPU",
            "≈ 6 GB/s",
            f"{be['llama-3-8b']:.1f} GB/s at 8K tokens",
            (6, be["llama-3-8b"]),
            0.1,
        ),
        paper.close(
            "Llama-3.1-70B break-even per GPU",
            "≈ 1.6 GB/s",
            f"{be['llama-3.1-70b']:.2f} GB/s at 8K tokens",
            (1.6, be["llama-3.1-70b"]),
            0.05,
        ),
        paper.close(
            "GQA break-even ÷ MHA break-even",
            "≈ 1/4",
            f"1/{be['llama-2-7b'] / be['mistral-7b']:.1f} (Mistral-7B vs Llama-2-7B)",
            (0.25, be["mistral-7b"] / be["llama-2-7b"]),
            0.15,
        ),
        paper.check(
            "Load 8K tokens from CPU DRAM / remote memory",
            "7–9× faster than recompute",
            f"{speed['pcie5-x16']:.1f}× (PCIe 5.0) / {speed['rdma-400g']:.1f}× (400 Gb/s RDMA)",
            6.5 <= speed["rdma-400g"] and speed["pcie5-x16"] <= 9.5,
            "both within 6.5–9.5×",
        ),
        paper.close("Load 8K tokens from an NVMe SSD", "about even", f"{speed['nvme']:.2f}×", (1, speed["nvme"]), 0.1),
        paper.close(
            "Load 8K tokens over 3 Gb/s",
            "18× slower",
            f"{1 / speed['cloud-3g']:.1f}× slower",
            (18, 1 / speed["cloud-3g"]),
            0.05,
        ),
        paper.close(
            f"Turn {chat.turns} of a chat ({c:,} tokens of history): no cache / GPU hit / CPU / 3 Gb/s",
            "282 ms / 6.7 ms / 35.9 ms / 4.99 s",
            f"{ttft[0] * 1e3:.0f} ms / {ttft[1] * 1e3:.1f} ms / {ttft[2] * 1e3:.1f} ms / {ttft[3]:.2f} s",
            list(zip((0.282, 0.0067, 0.0359, 4.99), ttft, strict=True)),
            0.05,
        ),
    ]


def economics_rows(
    models: Mapping[str, ModelSpec], node: Compute, prices: Prices, storage_tb: float = 1.0, prefill_share: float = 1.0
) -> list[dict[str, str]]:
    """Lecture 27 §1.3 (slide 9 and code 01 part 3) against this ledger."""
    rate = node_breakeven_hit_rate(node.n_gpus, storage_tb, prices, prefill_share)
    fleet = fleet_savings(1000, 3, 0.10, node.n_gpus, storage_tb, prices, prefill_share)
    e = context_economics(_pick(models, "llama-3.1-70b"), node, 10_000, prices)
    return [
        paper.close(
            "Break-even hit rate (8-GPU node, $2/GPU·h, 1 TB (0.91 TiB) at $0.15/h)",
            "1.06%",
            f"{rate:.2%}",
            (0.0106, rate),
            0.03,
        ),
        paper.close(
            "10% hits, 1,000 nodes, 3 years: GPU $ saved / storage $",
            "≈ $33 M / ≈ $4 M",
            f"${fleet['GPU $ saved'] / 1e6:.0f} M / ${fleet['storage $'] / 1e6:.1f} M",
            [(33e6, fleet["GPU $ saved"]), (4e6, fleet["storage $"])],
            0.1,
        ),
        paper.close(
            "Llama-3.1-70B, 10K-token context: KV / keep for an hour",
            "3.3 GB = 3.07 GiB / $0.0005",
            f"{e['KV GiB']:.2f} GiB / ${e['storage $/h']:.4f}",
            [(3.3 * GB / GIB, e["KV GiB"]), (0.0005, e["storage $/h"])],
            0.05,
        ),
        paper.close(
            f"…one hit saves (recompute on {node.n_gpus}× {node.gpu.name}, MFU {readable(node.mfu)})",
            "$0.0026 (≈ 0.58 s)",
            f"${e['GPU $ saved per hit']:.4f} ({e['recompute s']:.2f} s)",
            (0.0026, e["GPU $ saved per hit"]),
            0.05,
        ),
        paper.close(
            "…break-even reuse",
            "0.19 hits/h",
            f"{e['break-even hits/h']:.2f} hits/h",
            (0.19, e["break-even hits/h"]),
            0.06,
        ),
    ]
