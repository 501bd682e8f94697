"""The Tiers page's sidebar and cached work: a deployment read from its controls, and the tiered
replay of the page's trace through it.

Every control is bound to the URL, so a copied link is the same deployment. The cached replay is
keyed on the trace's fingerprint and the deployment's plain values (``Deployment``), never on a
widget or an element.
"""

from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.common import hardware as hw
from kvviz.common.errors import InputError
from kvviz.radix.replay import POLICY_LABELS, WRITE_LABELS
from kvviz.tiers import latency
from kvviz.tiers.config import DEFAULT_KV_FRACTION, POLICIES, WRITE_POLICIES, TierConfig
from kvviz.tiers.replay import TierResult, replay
from kvviz.traces import Trace
from ui.kit import links
from ui.prefix_cache.views import prepared

Q = {"bind": "query-params"}
STORAGE = ("Local SSD", "Remote pool")
WORDED = {
    "tiers_model": hw.MODEL_TITLES,
    "tiers_gpu": hw.GPU_TITLES,
    "tiers_policy": {p: POLICY_LABELS[p] for p in POLICIES},
    "tiers_write": WRITE_LABELS,
}
"""The controls whose options are names for the model's ids and codes, the policies in the Radix page's
words (URL values are the names; ``links.worded`` opens a link written with the ids or codes)."""
WRITE_HELP = (
    "When a block gets a copy in host DRAM: as it enters GPU memory (write through), once it is hit a second "
    "time (selective write through), or only when GPU memory evicts it (write back). SGLang's "
    "hicache-write-policy."
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
    "years": "Written off over",
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
PRICING = ("Rent", "Buy")
BUY_LABELS = (
    "GPU, bought ($ per GPU)",
    "GPU power (W per GPU)",
    "Host DRAM, bought ($ per GB)",
    "SSD, bought ($ per TB)",
    "Electricity ($ per kWh)",
    "Written off over (years)",
)
"""Buying's inputs, in ``hw.Purchase``'s order (the GPU's price and power: its share of the server)."""


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
    mfu: float = hw.PUBLISHED_PREFILL_MFU.value
    load: str = "load"
    purchase: tuple[float | None, ...] | None = None  # bought instead of rented: BUY_LABELS' values

    def config(self, **sizes: float) -> TierConfig:
        """The deployment to replay (validated there: a bad mix is one message naming the setting)."""
        values = {**{k: v for k, v in self.__dict__.items() if k not in ("prices", "purchase")}, **sizes}
        prices = hw.DevicePrices(*self.prices) if self.purchase is None else bought(self.gpu, self.purchase)
        return TierConfig(**values, prices=prices)


def bought(gpu: str, purchase: tuple[float | None, ...]) -> hw.DevicePrices:
    """The hourly prices of hardware bought at ``purchase`` (``BUY_LABELS``' values); a GPU with no
    sourced purchase price or power needs them given, said in the control's words."""
    for what, label, value in zip(("purchase price", "power draw"), BUY_LABELS, purchase):
        if value is None:
            raise InputError(
                f"No published {what} is stored for {hw.GPU_TITLES[gpu]} servers: give “{label}” under Prices "
                "(per GPU, its share of the server), or rent it."
            )
    return hw.Purchase(*purchase).hourly()


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


def buy_defaults(gpu: str) -> tuple[hw.Price | None, ...]:
    """Buying's defaults, in ``BUY_LABELS`` order (None: no source stored for this GPU)."""
    return (*hw.purchase_defaults(hw.gpu(gpu)), hw.DRAM_PURCHASE, hw.SSD_PURCHASE, hw.ELECTRICITY, hw.SERVER_LIFE)


def _hardware() -> tuple[str, str, int, int, float]:
    st.header("Hardware")
    model = links.worded(
        st.selectbox, "Model", WORDED["tiers_model"], "tiers_model", help="Its weights and KV per token."
    )
    gpu = links.worded(st.selectbox, "GPU", WORDED["tiers_gpu"], "tiers_gpu")
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


def dram_warnings(hardware: tuple[str, str, int, int, float], dram: float) -> list[str]:
    """The deployment's warnings about its host memory (none when the hardware itself is refused: the
    page says why there)."""
    model, gpu, gpus, tp, kv_fraction = hardware
    try:
        return TierConfig(model, gpu, gpus=gpus, tp=tp, kv_fraction=kv_fraction, dram_gib=dram).warnings()
    except InputError:
        return []


def _memory(hardware: tuple[str, str, int, int, float]) -> tuple[float, float, float, float]:
    st.header("Memory per instance")
    dram = st.number_input("Host DRAM (GiB)", 0, 1 << 20, 256, 64, key="tiers_dram", **Q)
    with st.container():  # always drawn, so the controls below keep their places
        for warning in dram_warnings(hardware, float(dram)):
            st.warning(warning[0].upper() + warning[1:] + ".", icon=":material/memory:")
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


def _cache_and_serving() -> tuple[str, str, int, bool, float, float, str]:
    st.header("Cache and serving")
    policy = links.worded(st.selectbox, "Eviction policy", WORDED["tiers_policy"], "tiers_policy")
    write = links.worded(
        st.segmented_control, "Write policy", WORDED["tiers_write"], "tiers_write", default=WRITE_POLICIES[0],
        required=True, help=WRITE_HELP,
    )  # fmt: skip
    instances = st.number_input("Prefill instances", 1, 4096, 1, key="tiers_instances", **Q)
    overlap = st.toggle(
        "Overlap loading with compute", True, key="tiers_overlap", **Q,
        help="Load layer by layer while earlier layers compute, as SGLang loads host memory: the slower of the two "
        "sets the pace. Off: every layer is loaded before the compute starts.",
    )  # fmt: skip
    fastest = st.toggle(
        "Recompute hits when faster", False, key="tiers_load", **Q,
        help="Off (as SGLang serves): every hit in host DRAM or storage is loaded. On: a request recomputes its "
        "lower-tier hits when that is faster than loading them, which SGLang does not do.",
    )  # fmt: skip
    mfu = st.number_input(
        "Prefill MFU", 0.05, 1.0, hw.PUBLISHED_PREFILL_MFU.value, 0.05, key="tiers_mfu", **Q,
        help=f"Share of the GPUs' peak FLOPs a prefill achieves. Default: {hw.PUBLISHED_PREFILL_MFU.source}.",
    )  # fmt: skip
    slo = st.number_input(
        "TTFT target, p90 (s)", 0.01, 3600.0, 2.0, 0.1, key="tiers_slo", **Q,
        help="The cheapest mix below must keep 90% of first tokens within this.",
    )  # fmt: skip
    load = "fastest" if fastest else "load"
    return (policy, write or WRITE_POLICIES[0], int(instances), bool(overlap), float(slo), float(mfu), load)


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


def unused_purchases(dram: float, ssd: float, remote: float) -> dict[int, str]:
    """Why a purchase price changes nothing, by its place in ``BUY_LABELS`` (a remote pool is bought DRAM)."""
    why = {}
    if not (ssd and not remote):
        why[3] = "the storage tier is the remote pool, priced as DRAM" if remote else "this deployment has no SSD"
    if not (dram or remote):
        why[2] = "this deployment has no host DRAM"
    return {i: f"Not used here: {reason}." for i, reason in why.items()}


def _price_inputs(labels, defaults, unused: dict[int, str], stem: str) -> list[float | None]:
    """One input per price, each empty for its default (labelled with its source), None where no default."""
    chosen = []
    for i, (label, default) in enumerate(zip(labels, defaults)):
        source = f"Default: {hw.cited(default)}." if default else "No published figure is stored: give it."
        value = st.number_input(
            label, 0.0, 1e7, None, price_step(default.value if default else 1.0), key=f"{stem}_{i}", format="%g",
            **Q, placeholder=f"{default.value:g} (default)" if default else "required", disabled=i in unused,
            help="\n\n".join(filter(None, (unused.get(i), source))),
        )  # fmt: skip
        chosen.append(float(value) if value is not None else default.value if default else None)
    return chosen


def _prices(gpu: str, dram: float, ssd: float, remote: float) -> tuple[tuple, tuple | None]:
    """Rent (hourly list prices) or buy (purchase prices written off over years, plus power), switchable;
    every price editable, each empty for its default and labelled with its source. Shown with six
    significant digits (a DRAM price of $0.003341 is not rounded to 0.0033)."""
    with st.expander("Prices"):
        mode = st.segmented_control(
            "Rent or buy", PRICING, default=PRICING[0], required=True, key="tiers_pricing", **Q,
            help="Rent: each device's hourly list price. Buy: purchase prices written off evenly over the years, "
            "plus the GPUs' electricity.",
        )  # fmt: skip
        if mode == PRICING[1]:
            purchase = _price_inputs(BUY_LABELS, buy_defaults(gpu), unused_purchases(dram, ssd, remote), "tiers_buy")
            return tuple(d.value for d in default_prices(gpu)), tuple(purchase)
        rent = _price_inputs(PRICE_LABELS, default_prices(gpu), unused_prices(dram, ssd, remote), "tiers_price")
    return tuple(rent), None


def deployment() -> tuple[Deployment, float]:
    """The sidebar's deployment, and the TTFT target (p90, seconds)."""
    with st.sidebar:
        hardware = _hardware()
        model, gpu, gpus, tp, kv_fraction = hardware
        dram, ssd, remote, gb_s = _memory(hardware)
        policy, write, instances, overlap, slo, mfu, load = _cache_and_serving()
        prices, purchase = _prices(gpu, dram, ssd, remote)
    chosen = Deployment(
        model, gpu, gpus, tp, kv_fraction, dram, ssd, remote, gb_s, instances, policy, write, overlap, prices, mfu,
        load, purchase,
    )  # fmt: skip
    return chosen, slo


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Replaying the trace through the tiers…")
def tier_replay(key: str, chosen: tuple, _trace: Trace) -> TierResult:
    """The tiered replay of the trace (fingerprint ``key``) through the deployment ``astuple(chosen)``."""
    return replay(prepared(key, _trace), Deployment(*chosen).config())


def unpriced(chosen: Deployment) -> Deployment:
    """The deployment at its GPU's list prices, rented: what a replay reads of it, since no price
    changes what is served, only what it costs."""
    return replace(chosen, prices=tuple(p.value for p in default_prices(chosen.gpu)), purchase=None)


def replayed(key: str, chosen: Deployment, trace: Trace) -> TierResult:
    """The tiered replay through ``chosen``, priced at its prices: a changed price replays nothing again."""
    result = tier_replay(key, astuple(unpriced(chosen)), trace)
    return replace(result, config=deployed(chosen))


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
    parts = [f"Prices {p.basis}: {config.total_gpus} GPUs at ${p.gpu_per_hour:.4g}/h"]
    if config.dram_gib:
        parts.append(f"{n} × {config.dram_gib:g} GiB DRAM at ${p.dram_per_gb_hour:.4g}/GB·h")
    if config.ssd_gib:
        parts.append(f"{n} × {config.ssd_gib:g} GiB SSD at ${p.ssd_per_tb_hour:.4g}/TB·h")
    if config.remote_gib:
        parts.append(f"a {config.remote_gib:g} GiB remote pool at ${p.remote_per_gb_hour:.4g}/GB·h")
    return "; ".join(parts) + "."


def _storage_note(result: TierResult, storage: str) -> str | None:
    """How much of what storage held arrived in time: a request reads storage only while it waits, and
    starts with what has arrived (the rest is recomputed and is no hit)."""
    found, used = result.found_blocks[result.config.storage], result.hit_blocks[result.config.storage]
    if found == 0:
        return f"Nothing was found in {storage}, so its read speed changes nothing here."
    return (
        f"{used:,} of the {found:,} blocks found in {storage} were read into host memory while their request "
        "waited for a GPU and then loaded; the rest were recomputed, because their request started before they "
        "arrived (SGLang's default best-effort prefetch), and are not counted as hits."
    )


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
    notes.append(_storage_note(result, storage))
    if result.config.load == "load" and not latency.faster_to_recompute(result.config, block_size, result.requests):
        notes.append(
            "Every request that loaded KV loaded it faster than it could have recomputed it, so “Recompute hits "
            "when faster” changes nothing here."
        )
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
    why = "not read from storage in time" + (", or faster to recompute" if config.load == "fastest" else "")
    return [
        f"Of every 100 block accesses, {per_100[0]:.0f} hit GPU memory, {per_100[1]:.0f} host DRAM and "
        f"{per_100[2]:.0f} {storage}; an infinite cache would hit {100 * summary['ceiling_hit_ratio']:.0f}.",
        f"TTFT p90 is {tiers_s:.3g} s with these tiers, {gpu_s:.3g} s with GPU memory alone and {none_s:.3g} s "
        f"with no cache: the lower tiers {lower}.",
        f"{loaded:,} of {summary['requests']:,} requests loaded KV from a lower tier; "
        f"{summary['tokens']['recomputed_hits']:,} tokens found there were recomputed instead ({why}).",
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
        f"${summary['cost_per_million_input_tokens']:,.3f} per million input tokens at the trace's own rate "
        f"(${summary['cost_per_million_input_tokens_fully_busy']:,.3f} if every GPU were prefilling all the time)."
    )


def assumptions(config: TierConfig, target: float) -> list[str]:
    """Everything the page simulates, leaves out and assumes, in one list (read off the deployment)."""
    storage = "the network to the remote pool" if config.storage == "remote" else f"{config.ssd_drives} NVMe drive(s)"
    load = (
        "every hit in host DRAM or storage is loaded, as SGLang does"
        if config.load == "load"
        else "a request recomputes its lower-tier hits when that is faster than loading them (SGLang loads them)"
    )
    return [
        "**Simulated**: the trace's own requests through SGLang 0.5.23's hierarchical cache (GPU memory, host DRAM, "
        "storage) with the eviction and write policies chosen; each instance's replicas prefilling one request at "
        "a time, first come first served, at the trace's arrival times.",
        f"**Loading**: {load}; "
        + ("layer by layer under the compute" if config.overlap else "all layers before the compute")
        + f". Storage is read into host memory while a request waits, at the speed of {storage}, and a request takes "
        "what has arrived when it starts (SGLang's best-effort prefetch; only hits of 256 tokens or more).",
        f"**Compute**: the model's FLOPs at {config.mfu:g} of the GPUs' peak (MFU). The default "
        f"{hw.PUBLISHED_PREFILL_MFU.value:g} comes from {hw.PUBLISHED_PREFILL_MFU.source}.",
        "**Not simulated**: decode (so its memory and time), batching several prefills together, chunked prefill, "
        "the network between instances; the instances act as one cache, the way a router that sends each prefix "
        "to the instance holding it would make them.",
        f"**Target**: TTFT p90 within {target:g} s; p99 is shown but not required. Prices are {config.prices.basis} "
        "(under Prices, each with its source); the cost is for the whole cluster.",
    ]
