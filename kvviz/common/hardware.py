"""Models, GPUs and links: the numbers every KV ledger starts from, and a paper-GPU prefill model.

KV bytes per token follow the attention layout (lecture 9 §1.1; lecture 27 §1.2):
``layers × 2 (K and V) × kv_heads × head_dim × bytes`` for MHA/GQA, and ``layers × latent × bytes``
for MLA (DeepSeek-V3 §2.1.1: one compressed latent of ``kv_lora_rank + rope_dim`` = 576 values serves
both K and V). Prefill time is the lecture notes' "paper GPU" (lecture 9 §0.5, from lecture 1's
hw_model): matmul FLOPs ``2 · params · n`` plus causal attention FLOPs ``4 · layers · d_attn · (n·c +
n(n+1)/2)`` for ``n`` new tokens after ``c`` cached ones, at ``peak × MFU``. With MFU 0.735 on an H100
it gives the notes' 188 ms (Llama-3-8B, 8,000 tokens), 282 ms (11,400 tokens) and 351 ms
(Qwen2.5-14B, 8,000 tokens) within 0.5%.

Every preset is a plain frozen dataclass; users edit them as tables (``*_frame`` / ``*_from_frame``)
and every edited number is validated with a message naming the row and the column.

This module is the one home of KV bytes per token, parameter counts, FLOPs per token and GPU speeds.
Every page and simulation takes them from here: ``model(name).kv_bytes_per_token``,
``kv_bytes_per_token_layer(m)``, ``prefill_seconds(m, Compute(gpu(name), mfu, n_gpus), new, cached)``,
``prefill_layer_seconds`` (one layer's share) and ``prefill_coefficients(m, compute)`` (the same time
as ``a·(L − p) + b·(L² − p²)``, the form the Mooncake Conductor predicts with).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields, replace

import pandas as pd

from kvviz.common.errors import InputError, quote, require

GB = 1e9
TB = 1e12
KIB = 1024
ATTENTION_TYPES = ("MHA", "GQA", "MLA")
DEFAULT_MFU = 0.735
"""The lecture notes' own MFU, fitted to their three prefill times (module docstring): the default where a page
reproduces the notes' examples. A simulation of serving (the tiers, the cluster) assumes
``PUBLISHED_PREFILL_MFU`` instead, the one default from a published measurement."""


@dataclass(frozen=True)
class ModelSpec:
    """A decoder's KV layout and the compute one prompt token costs."""

    name: str
    layers: int
    kv_heads: int  # for MLA: 1 (one shared latent per layer)
    head_dim: int  # for MLA: the latent width (kv_lora_rank + rope dim)
    bytes_per_value: float  # 2 for BF16/FP16, 1 for FP8
    params_b: float  # matmul parameters per token, billions (total minus the input embedding)
    d_attn: int  # query heads × head dim: the width attention FLOPs scale with
    attention: str  # "MHA", "GQA" or "MLA"

    @property
    def kv_bytes_per_token(self) -> float:
        kv_factor = 1 if self.attention == "MLA" else 2
        return self.layers * kv_factor * self.kv_heads * self.head_dim * self.bytes_per_value


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator: dense BF16 peak, HBM bandwidth and capacity."""

    name: str
    peak_tflops: float
    hbm_tb_s: float
    hbm_gb: float


@dataclass(frozen=True)
class LinkSpec:
    """Where KV is loaded from: nominal bandwidth and the share of it a bulk copy achieves."""

    name: str
    gb_s: float  # nominal, GB/s (10^9 bytes per second)
    efficiency: float  # (0, 1]; the lecture notes use 0.8 for every link
    note: str = ""

    @property
    def effective_bytes_s(self) -> float:
        return self.gb_s * GB * self.efficiency


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec("llama-3-8b", 32, 8, 128, 2, 7.504924672, 4096, "GQA"),
        ModelSpec("llama-3.1-70b", 80, 8, 128, 2, 69.503033344, 8192, "GQA"),
        ModelSpec("qwen2.5-14b", 48, 8, 128, 2, 13.991465984, 5120, "GQA"),
        ModelSpec("mistral-7b", 32, 8, 128, 2, 7.110660096, 4096, "GQA"),
        ModelSpec("yi-34b", 60, 8, 128, 2, 33.930165248, 7168, "GQA"),
        ModelSpec("llama-2-7b", 32, 32, 128, 2, 6.607343616, 4096, "MHA"),
        ModelSpec("deepseek-r1", 61, 1, 576, 2, 36.07, 20480, "MLA"),
    )
}
MODEL_ALIASES = {
    "llama-3.1-8b": "llama-3-8b",
    "7b-mha": "llama-2-7b",
    "deepseek-v3": "deepseek-r1",
    "mla": "deepseek-r1",
}
MODEL_NOTES = {
    "llama-3-8b": "GQA 32 q / 8 KV heads (same layout as Llama-3.1-8B)",
    "llama-3.1-70b": "GQA 64 q / 8 KV heads",
    "qwen2.5-14b": "GQA 40 q / 8 KV heads",
    "mistral-7b": "GQA 32 q / 8 KV heads",
    "yi-34b": "GQA 56 q / 8 KV heads",
    "llama-2-7b": "the 7B multi-head model: 32 KV heads",
    "deepseek-r1": "MLA latent 512 + 64 RoPE dims; 37B of 671B params active (MoE)",
}

GPUS: dict[str, GPUSpec] = {
    g.name: g
    for g in (
        GPUSpec("h100", 989.4, 3.35, 80),
        GPUSpec("h200", 989.4, 4.8, 141),
        GPUSpec("a100", 312.0, 2.039, 80),
        GPUSpec("a40", 149.7, 0.696, 48),
        GPUSpec("gh200", 989.4, 4.0, 96),
        GPUSpec("mi300x", 1307.4, 5.3, 192),
    )
}

LINKS: dict[str, LinkSpec] = {
    k.name: k
    for k in (
        LinkSpec("hbm3", 3350, 0.8, "the GPU's own memory (H100)"),
        LinkSpec("nvlink-c2c", 384, 0.8, "GH200 CPU memory; LPDDR5X-bound per Strata §5.1 (C2C is 450 GB/s a way)"),
        LinkSpec("rdma-800g", 100, 0.8, "800 Gb/s RDMA, a node's NICs (Mooncake)"),
        LinkSpec("pcie5-x16", 64, 0.8, "CPU DRAM over PCIe 5.0 x16"),
        LinkSpec("rdma-400g", 50, 0.8, "400 Gb/s RDMA, one NIC per GPU"),
        LinkSpec("nvme", 7, 0.8, "one PCIe 4.0 x4 NVMe SSD (~5.6 GB/s effective)"),
        LinkSpec("cloud-10g", 1.25, 0.8, "10 Gb/s cloud link"),
        LinkSpec("cloud-3g", 0.375, 0.8, "3 Gb/s cloud link (CacheGen's setting)"),
    )
}

MODEL_TITLES: dict[str, str] = dict(
    zip(
        MODELS,
        ("Llama 3 8B", "Llama 3.1 70B", "Qwen2.5 14B", "Mistral 7B", "Yi 34B", "Llama 2 7B", "DeepSeek-R1"),
        strict=True,
    )
)
"""Each model preset as a page names it (the command line and the models' notes keep the ids)."""
GPU_TITLES: dict[str, str] = dict(zip(GPUS, ("H100", "H200", "A100", "A40", "GH200", "MI300X"), strict=True))
"""Each GPU preset as a page names it."""
LINK_TITLES: dict[str, str] = dict(
    zip(
        LINKS,
        (
            "HBM3",
            "NVLink-C2C",
            "RDMA 800 Gb/s",
            "PCIe 5.0 x16",
            "RDMA 400 Gb/s",
            "NVMe SSD",
            "Cloud 10 Gb/s",
            "Cloud 3 Gb/s",
        ),
        strict=True,
    )
)
"""Each link preset as a page names it."""


def _lookup(table: dict, name: str, kind: str, aliases: dict[str, str] | None = None):
    key = str(name).strip().lower()
    key = (aliases or {}).get(key, key)
    if key not in table:
        raise InputError(f"unknown {kind} '{quote(name)}'; known: {', '.join(table)}", field=kind)
    return table[key]


def model(name: str, table: dict[str, ModelSpec] | None = None) -> ModelSpec:
    """A model preset by name (case-insensitive; aliases like ``llama-3.1-8b`` accepted)."""
    return _lookup(table or MODELS, name, "model", MODEL_ALIASES)


def gpu(name: str, table: dict[str, GPUSpec] | None = None) -> GPUSpec:
    """A GPU preset by name (case-insensitive)."""
    return _lookup(table or GPUS, name, "gpu")


def link(name: str, table: dict[str, LinkSpec] | None = None) -> LinkSpec:
    """A link preset by name (case-insensitive)."""
    return _lookup(table or LINKS, name, "link")


@dataclass(frozen=True)
class Compute:
    """Who recomputes: ``n_gpus`` of one kind at a model FLOPs utilisation ``mfu``."""

    gpu: GPUSpec
    mfu: float = DEFAULT_MFU
    n_gpus: int = 1

    def __post_init__(self):
        require(0 < self.mfu <= 1, f"MFU must be in (0, 1], got {self.mfu}", field="mfu")
        require(
            self.n_gpus >= 1 and float(self.n_gpus).is_integer(),
            f"the number of GPUs must be a whole number ≥ 1, got {self.n_gpus}",
            field="n_gpus",
        )
        validate_gpu(self.gpu)

    @property
    def flops_per_s(self) -> float:
        return self.gpu.peak_tflops * 1e12 * self.mfu * self.n_gpus


def prefill_flops(m: ModelSpec, new_tokens: float, cached_tokens: float = 0) -> float:
    """FLOPs to prefill ``new_tokens`` after ``cached_tokens`` already in the KV cache (causal)."""
    n, c = float(new_tokens), float(cached_tokens)
    require(n >= 0 and c >= 0, "token counts must be ≥ 0", field="tokens")
    linear = 2.0 * m.params_b * 1e9 * n
    attention = 4.0 * m.layers * m.d_attn * (n * c + n * (n + 1) / 2)
    return linear + attention


def prefill_seconds(m: ModelSpec, compute: Compute, new_tokens: float, cached_tokens: float = 0) -> float:
    """Paper-GPU time to prefill ``new_tokens`` with ``cached_tokens`` of context already cached."""
    return prefill_flops(m, new_tokens, cached_tokens) / compute.flops_per_s


def prefill_coefficients(m: ModelSpec, compute: Compute) -> tuple[float, float]:
    """(a, b) with ``prefill_seconds(m, compute, L − p, p) = a·(L − p) + b·(L² − p²)`` for a prompt of
    ``L`` tokens whose first ``p`` are cached: the same cost model as a polynomial in the lengths
    (the form Mooncake's Conductor predicts TTFT with)."""
    attention = 2.0 * m.layers * m.d_attn
    return (2.0 * m.params_b * 1e9 + attention) / compute.flops_per_s, attention / compute.flops_per_s


@dataclass(frozen=True)
class Calibration:
    """A default that stands for a measurement, and the measurement it comes from."""

    value: float
    source: str


PUBLISHED_PREFILL_MFU = Calibration(
    0.6,
    "CacheBlend (EuroSys 2025), §5.1's loading-controller example: recomputing 15% of a 4K-token prompt of "
    "LLaMA-7B takes about 3 ms a layer on one A40, and LLaMA-70B on two A40s about 7 ms; this FLOPs model "
    "gives those times at MFU 0.6",
)
"""A prefill MFU from a published measurement (the lecture notes' 0.735 is a fit to their own examples)."""


def fit_mfu(m: ModelSpec, g: GPUSpec, n_gpus: int, tokens: float, seconds: float) -> float:
    """The MFU at which a prompt of ``tokens`` (nothing cached) prefills in ``seconds`` on ``n_gpus``
    GPUs ``g``: one TTFT an engineer measured on an idle server turned into this model's constant."""
    require(
        math.isfinite(tokens) and tokens >= 1, f"the measured prompt must be ≥ 1 token, got {tokens!r}", field="mfu"
    )
    require(math.isfinite(seconds) and seconds > 0, f"the measured TTFT must be > 0 s, got {seconds!r}", field="mfu")
    peak = g.peak_tflops * 1e12 * n_gpus
    mfu = prefill_flops(m, tokens) / (seconds * peak)
    require(
        mfu <= 1,
        f"{tokens:,.0f} tokens of {m.name} in {seconds:g} s would need {mfu:.0%} of {n_gpus} × {g.name}'s peak "
        "(more than all of it): check the prompt length, the time and the GPUs",
        field="mfu",
    )
    return mfu


def prefill_layer_seconds(m: ModelSpec, compute: Compute, new_tokens: float, cached_tokens: float = 0) -> float:
    """One layer's share of :func:`prefill_seconds` (layers cost alike on the paper GPU)."""
    return prefill_seconds(m, compute, new_tokens, cached_tokens) / m.layers


def kv_bytes_per_token_layer(m: ModelSpec) -> float:
    """KV bytes one token keeps in one layer."""
    return m.kv_bytes_per_token / m.layers


# ---- validation and editable tables -------------------------------------------------------------


def _positive(value, what: str, row: str, *, integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0
    if ok and integer:
        ok = float(value).is_integer()
    kind = "a whole number > 0" if integer else "a number > 0"
    require(ok, f"{row}: {what} must be {kind}, got {value!r}")  # the message names the row and column


def validate_model(m: ModelSpec) -> ModelSpec:
    row = f"model '{m.name}'"
    for f in ("layers", "kv_heads", "head_dim", "d_attn"):
        _positive(getattr(m, f), f, row, integer=True)
    for f in ("bytes_per_value", "params_b"):
        _positive(getattr(m, f), f, row)
    require(
        m.attention in ATTENTION_TYPES,
        f"{row}: attention must be one of {', '.join(ATTENTION_TYPES)}, got {m.attention!r}",
    )
    return m


def validate_gpu(g: GPUSpec) -> GPUSpec:
    for f in ("peak_tflops", "hbm_tb_s", "hbm_gb"):
        _positive(getattr(g, f), f, f"GPU '{g.name}'")
    return g


def validate_link(k: LinkSpec) -> LinkSpec:
    _positive(k.gb_s, "gb_s", f"link '{k.name}'")
    require(
        isinstance(k.efficiency, (int, float)) and 0 < k.efficiency <= 1,
        f"link '{k.name}': efficiency must be in (0, 1], got {k.efficiency!r}",
    )
    return k


NAME_LENGTH = 40
NAME = re.compile(rf"[a-z0-9][a-z0-9 .+_/()-]{{0,{NAME_LENGTH - 1}}}")
"""A preset's name as a reader may type it: the pages write it into their notes and tables as it is."""


def to_frame(table: dict) -> pd.DataFrame:
    """A preset table as a DataFrame, one row per entry, ``name`` first (for st.data_editor)."""
    return pd.DataFrame([asdict(v) for v in table.values()])


def _from_frame(df: pd.DataFrame, cls, validate) -> dict:
    out = {}
    kind = cls.__name__.removesuffix("Spec").lower()
    names = [f.name for f in fields(cls) if f.name != "name"]
    for _, row in df.iterrows():
        name = row.get("name")
        label = "" if name is None or (isinstance(name, float) and math.isnan(name)) else str(name).strip().lower()
        require(bool(label), f"{kind} table: every row needs a name", field="name")
        require(
            NAME.fullmatch(label) is not None,
            f"{kind} table: the name '{quote(label)}' is not usable: give letters, digits, spaces and . + - _ / ( ), "
            f"at most {NAME_LENGTH} characters",
            field="name",
        )
        require(label not in out, f"{kind} table: the name '{label}' appears twice", field="name")
        values = {}
        for f in names:
            v = row.get(f)
            if isinstance(v, str) and f not in ("attention", "note"):
                try:
                    v = float(v)
                except ValueError:
                    raise InputError(f"{kind} '{label}': {f} must be a number, got {v!r}", field=f) from None
            if f == "attention":
                v = str(v).strip().upper() if v is not None else v
            elif f == "note":
                v = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
            elif v is not None and hasattr(v, "item"):
                v = v.item()
            values[f] = v
        out[label] = validate(cls(name=label, **values))
    require(bool(out), f"{kind} table is empty: keep at least one row", field="name")
    return out


def models_from_frame(df: pd.DataFrame) -> dict[str, ModelSpec]:
    """Validated model specs from an edited table (rows named by the index)."""
    return _from_frame(df, ModelSpec, validate_model)


def gpus_from_frame(df: pd.DataFrame) -> dict[str, GPUSpec]:
    return _from_frame(df, GPUSpec, validate_gpu)


def links_from_frame(df: pd.DataFrame) -> dict[str, LinkSpec]:
    return _from_frame(df, LinkSpec, validate_link)


def with_variant(m: ModelSpec, **changes) -> ModelSpec:
    """A validated copy of a model with some numbers changed (e.g. FP8 KV: ``bytes_per_value=1``)."""
    return validate_model(replace(m, **changes))


# ---- prices ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """A default price and where it comes from: the page or filing (``url``) and the month it was read
    (every price is editable; the source says what to check)."""

    value: float
    unit: str
    source: str
    url: str = ""
    month: str = ""


RUNPOD, LAMBDA, DIGITALOCEAN = (
    "https://www.runpod.io/pricing",
    "https://lambda.ai/pricing",
    "https://www.digitalocean.com/pricing/gpu-droplets",
)
GPU_PRICES: dict[str, Price] = {
    "h100": Price(3.99, "$/GPU·h", "RunPod Secure Cloud, H100 SXM 80 GB on demand", RUNPOD, "Nov 2026"),
    "h200": Price(4.59, "$/GPU·h", "RunPod Secure Cloud, H200 141 GB on demand", RUNPOD, "Oct 2026"),
    "a100": Price(1.79, "$/GPU·h", "RunPod Secure Cloud, A100 SXM 80 GB on demand", RUNPOD, "Nov 2026"),
    "a40": Price(0.44, "$/GPU·h", "RunPod Secure Cloud, A40 48 GB on demand", RUNPOD, "Aug 2026"),
    "gh200": Price(2.29, "$/GPU·h", "Lambda, 1× GH200 96 GB on demand", LAMBDA, "Sep 2026"),
    "mi300x": Price(2.59, "$/GPU·h", "DigitalOcean, 1× MI300X 192 GB GPU Droplet on demand", DIGITALOCEAN, "Oct 2026"),
}
"""Dollars per GPU-hour, per device: an A40 does not cost what an H100 does. One provider's list
(RunPod's Secure Cloud) wherever it rents the GPU, so the GPUs compare at one provider's prices."""

# AWS EC2 on-demand, us-east-1, Linux: an instance with the extra device less the same instance without it.
EC2_PRICES = "https://aws.amazon.com/ec2/pricing/on-demand/"
_R7I_XLARGE, _C7I_XLARGE, _EXTRA_DRAM_GIB = 0.2646, 0.1785, 24  # 4 vCPUs each: 32 GiB and 8 GiB of memory
_I4I_XLARGE, _R6I_XLARGE, _NVME_GB = 0.343, 0.252, 937  # 4 vCPUs and 32 GiB each; i4i adds 937 GB of NVMe

DRAM_PRICE = Price(
    round((_R7I_XLARGE - _C7I_XLARGE) / (_EXTRA_DRAM_GIB * 2**30 / GB), 6),
    "$/GB·h",
    f"AWS EC2 on demand, us-east-1: r7i.xlarge (${_R7I_XLARGE}/h) less c7i.xlarge (${_C7I_XLARGE}/h) "
    f"for {_EXTRA_DRAM_GIB} GiB more memory",
    EC2_PRICES,
    "Apr 2026",
)
"""Host DRAM, priced as memory in a server (not as secondary storage)."""

SSD_PRICE = Price(
    round((_I4I_XLARGE - _R6I_XLARGE) / (_NVME_GB * GB / TB), 4),
    "$/TB·h",
    f"AWS EC2 on demand, us-east-1: i4i.xlarge (${_I4I_XLARGE}/h) less r6i.xlarge (${_R6I_XLARGE}/h) "
    f"for {_NVME_GB} GB of local NVMe",
    EC2_PRICES,
    "Sep 2026",
)
"""Local NVMe SSD."""

UNKNOWN_GPU_PRICE = Price(2.0, "$/GPU·h", "estimate: the course notes' round $2 per GPU-hour (no list price found)")


def cited(price: Price) -> str:
    """A price's source in words: what it is, the month it was read and the address."""
    month = f", as listed {price.month}" if price.month else ""
    return f"{price.source}{month}" + (f" ({price.url})" if price.url else "")


def gpu_price(g: GPUSpec) -> Price:
    """The default price of one GPU-hour of ``g`` (an edited or custom GPU gets the estimate of $2/h)."""
    return GPU_PRICES.get(g.name, UNKNOWN_GPU_PRICE)


@dataclass(frozen=True)
class DevicePrices:
    """Dollars per hour of each device a deployment uses: GPUs, host DRAM, SSD, a remote pool's DRAM.
    ``basis`` says where the hourly figures come from (rented by the hour, or bought and amortised)."""

    gpu_per_hour: float
    dram_per_gb_hour: float = DRAM_PRICE.value
    ssd_per_tb_hour: float = SSD_PRICE.value
    remote_per_gb_hour: float = DRAM_PRICE.value
    basis: str = "rented at hourly list prices"

    def __post_init__(self):
        for f in (f for f in fields(self) if f.name != "basis"):
            v = getattr(self, f.name)
            ok = isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
            require(ok, f"price {f.name} must be a number ≥ 0, got {v!r}", field=f.name)

    @classmethod
    def for_gpu(cls, g: GPUSpec) -> DevicePrices:
        """The default prices with ``g``'s GPU-hour."""
        return cls(gpu_price(g).value)

    def hbm_per_gib_hour(self, g: GPUSpec) -> float:
        """HBM priced as the share of the GPU-hour its memory is (the GPU's price ÷ its HBM in GiB)."""
        return self.gpu_per_hour / (g.hbm_gb * GB / 2**30)

    def dram_per_gib_hour(self) -> float:
        return self.dram_per_gb_hour * 2**30 / GB


# ---- buying instead of renting --------------------------------------------------------------------

HOURS_PER_YEAR = 24 * 365

GPU_PURCHASE: dict[str, Price] = {
    "h100": Price(
        317_000 / 8,
        "$/GPU",
        "Thinkmate's quotation for an 8× H100 SXM server with 8 × 400 Gb/s InfiniBand, $317,000, divided by its 8 GPUs",
        "https://web.archive.org/web/20240822233446/https://www.thinkmate.com/quotation-request?a=YToxOntzOjI6ImlkIjtpOjc0OTY2Mzt9",
        "Aug 2024",
    )
}
"""What one GPU costs to buy: its share of an 8-GPU server's price (CPUs, chassis and network included).
Only where a public quotation was found; any other GPU needs the price given."""

GPU_POWER: dict[str, Price] = {
    "h100": Price(
        10_200 / 8,
        "W/GPU",
        "NVIDIA DGX H100's maximum system power, 10.2 kW, divided by its 8 GPUs",
        "https://www.supercluster.blog/p/6-ai-supercluster-nvidia-dgx-h100",
        "Jan 2025",
    )
}
"""What one GPU draws: its share of its server's maximum power (the server's CPUs, fans and NICs included)."""

DRAM_PURCHASE = Price(
    round(76_999 / (16 * 256), 4),
    "$/GB",
    "NEMIX 4 TB server memory kit (16 × 256 GB DDR5-6400 ECC RDIMM) listed at $76,999",
    "https://www.tuttotech.net/news/2025/12/29/shortage-ram-ddr5-rdimm-aumento-prezzo.html",
    "Dec 2025",
)
"""Server DRAM bought by the module, during the 2025–26 memory shortage (so a high price, not a low one)."""

SSD_PURCHASE = Price(
    round(10_000 / 30, 2),
    "$/TB",
    "a 30 TB TLC enterprise NVMe SSD at $9,000 to $11,000 (the middle taken) in the first quarter of 2026",
    "https://www.oscoo.com/kr/news/enterprise-ssd-buying-guide-2026",
    "Mar 2026",
)
"""Enterprise NVMe flash bought by the drive, per TB."""

ELECTRICITY = Price(
    0.0895,
    "$/kWh",
    "U.S. EIA Electric Power Annual 2023: average commercial revenue per kWh in Virginia (8.95 cents), the "
    "largest data-centre market",
    "https://www.eia.gov/electricity/annual/secrev-map.php",
    "Oct 2024",
)

SERVER_LIFE = Price(
    5.0,
    "years",
    "Amazon's 2024 annual report (10-K): a subset of its servers' useful life shortened from six years to five",
    "https://deepquarry.substack.com/p/amazon-revises-server-lifespan-amid",
    "Feb 2025",
)
"""The years a bought server is written off over."""


@dataclass(frozen=True)
class Purchase:
    """Buying the hardware instead of renting it: purchase prices written off evenly over ``years``, plus
    the GPUs' electricity. The power of the DIMMs and drives added for KV is not counted (no source found)."""

    gpu_cost: float  # $ per GPU, its share of the server
    gpu_watts: float  # W per GPU, its share of the server's draw
    dram_per_gb: float = DRAM_PURCHASE.value  # $ per GB
    ssd_per_tb: float = SSD_PURCHASE.value  # $ per TB
    kwh: float = ELECTRICITY.value  # $ per kWh
    years: float = SERVER_LIFE.value

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            require(ok, f"{f.name} must be a number ≥ 0, got {v!r}", field=f.name)
        require(self.years > 0, f"years must be > 0, got {self.years!r}", field="years")

    @property
    def hours(self) -> float:
        return self.years * HOURS_PER_YEAR

    def hourly(self) -> DevicePrices:
        """The same hardware in dollars per hour: each purchase over the hours it is written off over, and
        the GPUs' power at the electricity price. A remote pool is DRAM in other servers, bought alike."""
        gpu = self.gpu_cost / self.hours + self.gpu_watts / 1000 * self.kwh
        dram = self.dram_per_gb / self.hours
        basis = f"bought: purchase prices over {self.years:g} years, plus the GPUs' power at ${self.kwh:g}/kWh"
        return DevicePrices(gpu, dram, self.ssd_per_tb / self.hours, dram, basis)


def purchase_defaults(g: GPUSpec) -> tuple[Price | None, Price | None]:
    """The GPU's sourced purchase price and power (None: no public source stored; the user gives it)."""
    return GPU_PURCHASE.get(g.name), GPU_POWER.get(g.name)
