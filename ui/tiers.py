"""The Tiers page's sidebar and cached work: a deployment read from its controls, and the tiered
replay of the page's trace through it.

Every control is bound to the URL, so a copied link is the same deployment. The cached replay is
keyed on the trace's fingerprint and the deployment's plain values (``Deployment``), never on a
widget or an element.
"""

from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.common import hardware as hw
from kvviz.common.errors import InputError
from kvviz.tiers import latency
from kvviz.tiers.config import DEFAULT_KV_FRACTION, POLICIES, WRITE_POLICIES, TierConfig
from kvviz.tiers.replay import TierResult, replay
from kvviz.traces import Trace
from ui.prefix_views import prepared

Q = {"bind": "query-params"}
STORAGE = ("Local SSD", "Remote pool")
WRITE_LABELS = dict(zip(WRITE_POLICIES, ("write-through", "selective", "write-back")))
WRITE_HELP = (
    "When a block gets a copy in host DRAM: as it enters GPU memory (write-through), once it is hit a second "
    "time (selective), or only when GPU memory evicts it (write-back). SGLang's hicache-write-policy."
)
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)
QUANTILES = np.linspace(0, 1, 201)
STORAGE_NAMES = {"ssd": "SSD", "remote": "the remote pool"}
TOKEN_COLUMNS = {
    "source": st.column_config.TextColumn(
        "from",
        help="The last row is part of “computed”: tokens found in host DRAM or storage but recomputed, "
        "because that was faster than loading them.",
    ),
    "tokens": st.column_config.NumberColumn("tokens", format="localized"),
    "share": st.column_config.NumberColumn("share", format="percent", help="Of all the prompts' input tokens."),
}
"""The token table's columns: narrow, so the table reads in full at projector size."""
TTFT_COLUMNS = dict.fromkeys(("p50", "p90", "p99"), st.column_config.NumberColumn(format="%.3f"))
"""The TTFT table's quantiles, in seconds to the millisecond."""
TTFT_ROWS = {"these tiers": "ttft_s", "GPU memory only": "ttft_gpu_only_s", "no cache": "ttft_no_cache_s"}
CONTROL_NAMES = {
    "gpus": "GPUs per instance",
    "tp": "Tensor parallel",
    "kv_fraction": "HBM reserved for weights and KV",
    "dram_gib": "Host DRAM",
    "ssd_gib": "SSD",
    "remote_gib": "Remote pool",
    "remote_gb_s": "Network to the pool",
    "instances": "Prefill instances",
}
"""The deployment's settings by the name of the control that sets them (messages name the control)."""
_SETTING = re.compile(r"\b(" + "|".join(CONTROL_NAMES) + r")\b")
DRAM_PRICE, SSD_PRICE, REMOTE_PRICE = 1, 2, 3  # their places in PRICE_LABELS
PRICE_LABELS = (
    "GPU ($ per GPU-hour)",
    "Host DRAM ($ per GB-hour)",
    "SSD ($ per TB-hour)",
    "Remote pool ($ per GB-hour)",
)


@dataclass(frozen=True)
class Deployment:
    """The sidebar's values: plain and hashable, the key of the cached replay."""

    model: str
    gpu: str
    gpus: int
    tp: int
    kv_fraction: float
    dram_gib: float
    ssd_gib: float
    remote_gib: float
    remote_gb_s: float
    instances: int
    policy: str
    write_policy: str
    overlap: bool
    prices: tuple[float, float, float, float]  # GPU $/GPU·h, DRAM $/GB·h, SSD $/TB·h, remote $/GB·h

    def config(self, **sizes: float) -> TierConfig:
        """The deployment to replay (validated there: a bad mix is one message naming the setting)."""
        values = {**{k: v for k, v in self.__dict__.items() if k != "prices"}, **sizes}
        return TierConfig(**values, prices=hw.DevicePrices(*self.prices))


def deployed(chosen: Deployment) -> TierConfig:
    """The deployment to replay; a mix that cannot run is one message in the sidebar's words."""
    try:
        return chosen.config()
    except InputError as exc:
        text = str(exc).split(": ", 1)[1] if exc.field else str(exc)
        raise InputError(_SETTING.sub(lambda m: f"“{CONTROL_NAMES[m.group()]}”", text)) from None


def default_prices(gpu: str) -> tuple[hw.Price, ...]:
    """Each device's default price and where it comes from, in ``PRICE_LABELS`` order."""
    return (hw.gpu_price(hw.gpu(gpu)), hw.DRAM_PRICE, hw.SSD_PRICE, hw.DRAM_PRICE)


def _hardware() -> tuple[str, str, int, int, float]:
    st.header("Hardware")
    model = st.selectbox("Model", list(hw.MODELS), key="tiers_model", **Q, help="Its weights and KV per token.")
    gpu = st.selectbox("GPU", list(hw.GPUS), key="tiers_gpu", **Q)
    left, right = st.columns(2)
    gpus = left.number_input("GPUs per instance", 1, 64, 1, key="tiers_gpus", **Q)
    tp = right.selectbox("Tensor parallel", TP_SIZES, key="tiers_tp", **Q, help="GPUs per model replica.")
    kv_fraction = st.slider(
        "HBM reserved for weights and KV",
        0.5,
        0.98,
        DEFAULT_KV_FRACTION,
        0.01,
        key="tiers_kv_fraction",
        **Q,
        help="SGLang's mem_fraction_static, vLLM's gpu_memory_utilization: what is left after the weights holds KV.",
    )
    return model, gpu, int(gpus), int(tp), float(kv_fraction)


def _memory() -> tuple[float, float, float, float]:
    st.header("Memory per instance")
    dram = st.number_input("Host DRAM (GiB)", 0, 1 << 20, 256, 64, key="tiers_dram", **Q)
    storage = st.segmented_control(
        "Storage tier", STORAGE, default=STORAGE[0], required=True, key="tiers_storage", **Q,
        help="A local NVMe SSD per instance, or one remote KV pool (Mooncake Store, an LMCache server) for all.",
    )  # fmt: skip
    if storage == STORAGE[0]:
        ssd = st.number_input("SSD (GiB)", 0, 1 << 24, 2048, 256, key="tiers_ssd", **Q)
        return float(dram), float(ssd), 0.0, 50.0
    remote = st.number_input("Remote pool, whole cluster (GiB)", 1, 1 << 24, 4096, 256, key="tiers_remote", **Q)
    gb_s = st.number_input("Network to the pool (GB/s per instance)", 0.1, 1000.0, 50.0, key="tiers_remote_gb_s", **Q)
    return float(dram), 0.0, float(remote), float(gb_s)


def _cache_and_serving() -> tuple[str, str, int, bool, float]:
    st.header("Cache and serving")
    policy = st.selectbox("Eviction policy", POLICIES, key="tiers_policy", **Q)
    write = st.segmented_control(
        "Write policy", WRITE_POLICIES, format_func=WRITE_LABELS.get, default=WRITE_POLICIES[0], required=True,
        key="tiers_write", **Q, help=WRITE_HELP,
    )  # fmt: skip
    instances = st.number_input("Prefill instances", 1, 4096, 1, key="tiers_instances", **Q)
    overlap = st.toggle(
        "Overlap loading with compute", False, key="tiers_overlap", **Q,
        help="Load layer by layer while earlier layers compute (Strata, LMCache): the slower of the two sets the pace.",
    )  # fmt: skip
    slo = st.number_input(
        "TTFT target, p90 (s)", 0.01, 3600.0, 2.0, 0.1, key="tiers_slo", **Q,
        help="The cheapest mix below must keep 90% of first tokens within this.",
    )  # fmt: skip
    return policy, write or WRITE_POLICIES[0], int(instances), bool(overlap), float(slo)


def price_step(default: float) -> float:
    """A tenth of the default's leading digit (0.1 for $2.69, 0.0001 for $0.003341), so +/− moves it by
    a few percent whatever its scale."""
    return 10.0 ** (math.floor(math.log10(default)) - 1) if default > 0 else 0.01


def unused_prices(dram: float, ssd: float, remote: float) -> dict[int, str]:
    """Why a price changes nothing, by its place in ``PRICE_LABELS``: its device is not in this deployment."""
    why = {REMOTE_PRICE: "the storage tier is a local SSD, not a remote pool"}
    if remote:
        why = {SSD_PRICE: "the storage tier is the remote pool, not a local SSD"}
    elif not ssd:
        why[SSD_PRICE] = "this deployment has no SSD"
    if not dram:
        why[DRAM_PRICE] = "this deployment has no host DRAM"
    return {i: f"Not used here: {reason}." for i, reason in why.items()}


def _prices(gpu: str, dram: float, ssd: float, remote: float) -> tuple[float, float, float, float]:
    """Editable prices, each empty for its default; the default and its source are labelled. Shown
    with six significant digits (a DRAM price of $0.003341 is not rounded to 0.0033)."""
    chosen, unused = [], unused_prices(dram, ssd, remote)
    with st.expander("Prices"):
        for i, (label, default) in enumerate(zip(PRICE_LABELS, default_prices(gpu))):
            value = st.number_input(
                label, 0.0, 1000.0, None, price_step(default.value), key=f"tiers_price_{i}", format="%g", **Q,
                placeholder=f"{default.value:g} (default)", disabled=i in unused,
                help="\n\n".join(filter(None, (unused.get(i), f"Default: {default.source}."))),
            )  # fmt: skip
            chosen.append(default.value if value is None else float(value))
    return tuple(chosen)


def deployment() -> tuple[Deployment, float]:
    """The sidebar's deployment, and the TTFT target (p90, seconds)."""
    with st.sidebar:
        model, gpu, gpus, tp, kv_fraction = _hardware()
        dram, ssd, remote, gb_s = _memory()
        policy, write, instances, overlap, slo = _cache_and_serving()
        prices = _prices(gpu, dram, ssd, remote)
    chosen = Deployment(
        model, gpu, gpus, tp, kv_fraction, dram, ssd, remote, gb_s, instances, policy, write, overlap, prices
    )
    return chosen, slo


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Replaying the trace through the tiers…")
def tier_replay(key: str, chosen: tuple, _trace: Trace) -> TierResult:
    """The tiered replay of the trace (fingerprint ``key``) through the deployment ``astuple(chosen)``."""
    return replay(prepared(key, _trace), Deployment(*chosen).config())


def replayed(key: str, chosen: Deployment, trace: Trace) -> TierResult:
    return tier_replay(key, astuple(chosen), trace)


def ttft_quantiles(result: TierResult) -> dict[str, np.ndarray]:
    """TTFT at 201 quantiles for the tiers, GPU memory alone and no cache: a CDF any trace size draws at once."""
    r = result.requests
    return {label: np.quantile(r[column].to_numpy(), QUANTILES) for label, column in TTFT_ROWS.items()}


def ttft_table(summary: dict) -> pd.DataFrame:
    """p50/p90/p99 TTFT (seconds) of the tiers beside GPU memory alone and no cache."""
    return pd.DataFrame({label: summary[column] for label, column in TTFT_ROWS.items()}).T


def token_table(result: TierResult, storage: str) -> pd.DataFrame:
    """Where the prompts' tokens came from: reused in GPU memory, loaded from each lower tier, computed."""
    tokens, total = result.tokens(), result.input_tokens
    loaded = [v for k, v in tokens.items() if k.startswith("loaded_")]
    rows = {
        "reused in GPU memory": total - sum(loaded) - tokens["computed"],
        "loaded from host DRAM": loaded[0],
        f"loaded from {storage}": loaded[1],
        "computed": tokens["computed"],
        "of which cached lower": tokens["recomputed_hits"],
    }
    share = [v / max(total, 1) for v in rows.values()]
    return pd.DataFrame({"source": list(rows), "tokens": list(rows.values()), "share": share})


def cost_help(config: TierConfig) -> str:
    """What the hourly cost is made of, device by device."""
    p, n = config.prices, config.instances
    parts = [f"{config.total_gpus} GPUs at ${p.gpu_per_hour:g}/h"]
    if config.dram_gib:
        parts.append(f"{n} × {config.dram_gib:g} GiB DRAM at ${p.dram_per_gb_hour:g}/GB·h")
    if config.ssd_gib:
        parts.append(f"{n} × {config.ssd_gib:g} GiB SSD at ${p.ssd_per_tb_hour:g}/TB·h")
    if config.remote_gib:
        parts.append(f"a {config.remote_gib:g} GiB remote pool at ${p.remote_per_gb_hour:g}/GB·h")
    return "; ".join(parts) + "."


def _pool_note(result: TierResult, block_size: int, storage: str) -> str | None:
    """Why the storage tier's link changes nothing: nothing was found there, or every hit there was
    recomputed because loading it lost (and, for a remote pool, from which bandwidth loading wins)."""
    config, r = result.config, result.requests
    remote = config.storage == "remote"
    if result.hit_blocks[config.storage] == 0:
        return "Nothing was found in the remote pool, so the network to it changes nothing here." if remote else None
    if r["loaded_storage_tokens"].sum() > 0:
        return None
    if not remote:
        drives = f"{config.ssd_drives} NVMe drive(s)"
        return f"Every hit in the SSD was recomputed: from {drives}, loading it is slower than recomputing it."
    blocks = tuple(r[f"{tier}_blocks"].to_numpy() for tier in ("gpu", "dram", "storage"))
    wins = latency.pool_wins_from_gb_s(config, block_size, r["input_tokens"].to_numpy(), blocks)
    lost = (
        f"Every hit in the remote pool was recomputed: at {config.remote_gb_s:g} GB/s per instance, loading it "
        "is slower than recomputing it."
    )
    if wins is None:
        return f"{lost} Loading would not win at any network bandwidth."
    return f"{lost} Loading starts to win from about {wins:,.3g} GB/s: any slower network gives the same result."


def unchanged_notes(result: TierResult, n_blocks: int, block_size: int, storage: str) -> list[str]:
    """Which settings change nothing on this replay, and why (read off the replay, not assumed)."""
    notes = []
    if result.capacity.gpu >= n_blocks:
        notes.append(
            f"GPU memory holds all {n_blocks:,} blocks this trace uses, so nothing is evicted at these sizes: "
            "the eviction policy decides only when a tier is full, so here it moves only the smaller sizes under "
            "What to buy. Nothing is read from host DRAM or storage either: the write policy and the overlap of "
            "loading change nothing here, and those tiers' sizes only the cost."
        )
        return notes
    notes.append(_pool_note(result, block_size, storage))
    if (result.requests["choice"] == 0).all():
        notes.append("No request loads KV from a lower tier, so overlapping loading with compute changes nothing.")
    return [n for n in notes if n]


def notice(summary: dict, config: TierConfig, storage: str) -> list[str]:
    """ "What to notice" read off this replay's numbers."""
    hits, accesses = summary["hit_blocks"], summary["accesses"]
    per_100 = [100 * hits[t] / accesses for t in ("gpu", "dram", config.storage)]
    ttft = {label: summary[column]["p90"] for label, column in TTFT_ROWS.items()}
    tiers_s, gpu_s, none_s = ttft.values()
    lower = "cut it by " + f"{1 - tiers_s / gpu_s:.0%}" if tiers_s < 0.95 * gpu_s else "barely change it"
    starts = summary["requests_by_start"]
    loaded = summary["requests"] - starts["recompute"]
    return [
        f"Of every 100 block accesses, {per_100[0]:.0f} hit GPU memory, {per_100[1]:.0f} host DRAM and "
        f"{per_100[2]:.0f} {storage}; an infinite cache would hit {100 * summary['ceiling_hit_ratio']:.0f}.",
        f"TTFT p90 is {tiers_s:.3g} s with these tiers, {gpu_s:.3g} s with GPU memory alone and {none_s:.3g} s "
        f"with no cache: the lower tiers {lower}.",
        f"{loaded:,} of {summary['requests']:,} requests loaded KV from a lower tier; "
        f"{summary['tokens']['recomputed_hits']:,} tokens found there were recomputed because that was faster.",
        _cost_note(summary, config),
    ]


def _cost_note(summary: dict, config: TierConfig) -> str:
    """The GPUs' share of the hourly cost and the price of prefill, or that every price is zero."""
    per_hour = summary["cost_per_hour"]
    if per_hour <= 0:
        return "Every price is set to zero, so this setup costs nothing per hour as priced here."
    gpu_cost = config.total_gpus * config.prices.gpu_per_hour / per_hour
    return (
        f"The GPUs are {gpu_cost:.0%} of the ${per_hour:,.2f} per hour; prefill costs "
        f"${summary['cost_per_million_input_tokens']:,.3f} per million input tokens at this hit ratio."
    )
