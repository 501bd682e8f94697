"""A tiered deployment: the hardware that serves a trace, the cache it runs and what it costs.

Capacity is asked in hardware terms. An **instance** is one serving engine: ``gpus`` GPUs of one
kind running ``gpus / tp`` replicas of the model at tensor-parallel size ``tp``. The HBM a server
gives to KV is the fraction it reserves for weights and KV (SGLang's ``mem_fraction_static``,
vLLM's ``gpu_memory_utilization``) of the GPUs' memory, minus the replicas' weights; ``hbm_gib``
overrides it. Host DRAM and SSD are per instance; a remote KV pool (Mooncake Store, an LMCache
server) is one pool for the cluster, reached at ``remote_gb_s`` per instance, and stands in for
the SSD as the storage tier (HiCache has one storage backend).

The ``instances`` act as one cache of their summed capacity, the way a prefix-affinity router
sends each prefix to the instance that holds it; they queue requests as ``servers`` replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from kvviz.common import hardware as hw
from kvviz.common.errors import require
from kvviz.radix.hiradix_cache import WRITE_POLICIES

GIB = 2**30
DEFAULT_KV_FRACTION = 0.9  # vLLM's default gpu_memory_utilization
POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "slru")
WRITE_ALIASES = {"through": "write_through", "selective": "write_through_selective", "back": "write_back"}
LOAD_MODES = ("load", "fastest")
"""What a request does with the hits below GPU memory: load them all, as SGLang's HiCache does, or take
whichever of loading and recomputing them is faster (what an engine could do, not what SGLang does)."""

WEIGHT_PARAMS_B = {
    "llama-3-8b": 8.03,
    "llama-3.1-70b": 70.55,
    "qwen2.5-14b": 14.77,
    "mistral-7b": 7.24,
    "yi-34b": 34.39,
    "llama-2-7b": 6.74,
    "deepseek-r1": 671.0,
}
"""Total parameters (billions) a replica keeps in HBM, from each model's card (embeddings included)."""
WEIGHT_BYTES = {"deepseek-r1": 1.0}
"""Bytes per weight where a model ships below BF16 (DeepSeek's FP8 checkpoints)."""

PCIE4 = hw.LinkSpec("pcie4-x16", 32, 0.8, "CPU DRAM over PCIe 4.0 x16 (A100, A40)")
HOST_LINKS = {"gh200": hw.LINKS["nvlink-c2c"], "a100": PCIE4, "a40": PCIE4}
"""How each GPU reads host DRAM; any other GPU: PCIe 5.0 x16."""
COPY_OVERHEAD_US = 3.6
"""A layer-first copy's fixed cost (Strata §3.1, fitted in ``kvviz.strata.io``): small pages pay it."""


def weight_bytes(m: hw.ModelSpec) -> float:
    """Bytes of one replica's weights (a custom model: its matmul parameters at its KV's bytes)."""
    params = WEIGHT_PARAMS_B.get(m.name, m.params_b)
    return params * 1e9 * WEIGHT_BYTES.get(m.name, 2.0)


def _whole(value: object, name: str, lo: int = 1) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and float(value).is_integer() and value >= lo
    require(ok, f"{name} must be a whole number ≥ {lo}, got {value!r}", field=name)


def _size(value: object, name: str) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (math.isfinite(value) or value == math.inf)
    require(ok and value >= 0, f"{name} must be a size ≥ 0 GiB, got {value!r}", field=name)


@dataclass(frozen=True)
class TierConfig:
    """One deployment and its cache. Sizes are GiB per instance; ``math.inf`` is an unbounded tier."""

    model: hw.ModelSpec | str = "llama-3-8b"
    gpu: hw.GPUSpec | str = "h100"
    gpus: int = 1
    tp: int = 1
    kv_fraction: float = DEFAULT_KV_FRACTION
    hbm_gib: float | None = None
    dram_gib: float = 0.0
    ssd_gib: float = 0.0
    ssd_drives: int = 1
    remote_gib: float = 0.0
    remote_gb_s: float = 50.0
    instances: int = 1
    policy: str = "lru"
    write_policy: str = "write_through"
    overlap: bool = True
    mfu: float = hw.PUBLISHED_PREFILL_MFU.value
    load: str = "load"
    prices: hw.DevicePrices | None = field(default=None)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(
            self,
            "model",
            hw.validate_model(self.model) if isinstance(self.model, hw.ModelSpec) else hw.model(self.model),
        )
        set_(self, "gpu", hw.validate_gpu(self.gpu) if isinstance(self.gpu, hw.GPUSpec) else hw.gpu(self.gpu))
        for name in ("gpus", "tp", "instances", "ssd_drives"):
            _whole(getattr(self, name), name)
        require(self.gpus % self.tp == 0, f"tp ({self.tp}) must divide the GPUs per instance ({self.gpus})", field="tp")
        require(
            0 < self.kv_fraction <= 1, f"kv_fraction must be in (0, 1], got {self.kv_fraction!r}", field="kv_fraction"
        )
        for name in ("dram_gib", "ssd_gib", "remote_gib"):
            _size(getattr(self, name), name)
        if self.hbm_gib is not None:
            _size(self.hbm_gib, "hbm_gib")
        require(
            not (self.ssd_gib > 0 and self.remote_gib > 0),
            "the storage tier is either the SSD or a remote pool: give ssd_gib or remote_gib, not both",
            field="remote_gib",
        )
        require(
            self.dram_gib > 0 or (self.ssd_gib == 0 and self.remote_gib == 0),
            "the storage tier is written from host memory (HiCache backs host copies up to storage): give DRAM too",
            field="dram_gib",
        )
        require(
            math.isfinite(self.remote_gb_s) and self.remote_gb_s > 0,
            f"remote_gb_s must be a bandwidth > 0 GB/s, got {self.remote_gb_s!r}",
            field="remote_gb_s",
        )
        set_(self, "policy", _choice(self.policy, POLICIES, "policy"))
        set_(
            self,
            "write_policy",
            _choice(WRITE_ALIASES.get(self.write_policy, self.write_policy), WRITE_POLICIES, "write_policy"),
        )
        set_(self, "load", _choice(self.load, LOAD_MODES, "load"))
        hw.Compute(self.gpu, self.mfu, self.tp)  # validates the MFU
        if self.prices is None:
            set_(self, "prices", hw.DevicePrices.for_gpu(self.gpu))
        require(isinstance(self.prices, hw.DevicePrices), "prices must be DevicePrices", field="prices")
        require(self.hbm_gib is not None or self.derived_hbm_gib > 0, self._no_room(), field="kv_fraction")

    def _no_room(self) -> str:
        weights = weight_bytes(self.model) * self.replicas / GIB
        return (
            f"no HBM is left for KV: {self.gpus} × {self.gpu.name} at kv_fraction {self.kv_fraction:g} reserve "
            f"{self.gpus * self.gpu.hbm_gb * 1e9 * self.kv_fraction / GIB:,.0f} GiB, and {self.replicas} replica(s) of "
            f"{self.model.name}'s weights take {weights:,.0f} GiB; add GPUs, raise tp or kv_fraction"
        )

    @property
    def replicas(self) -> int:
        """Model replicas per instance (data parallel): ``gpus / tp``."""
        return self.gpus // self.tp

    @property
    def servers(self) -> int:
        """Replicas in the cluster: each prefills one request at a time."""
        return self.instances * self.replicas

    @property
    def storage(self) -> str:
        """What the storage tier (L3) is: ``"ssd"`` or ``"remote"``."""
        return "remote" if self.remote_gib > 0 else "ssd"

    @property
    def derived_hbm_gib(self) -> float:
        """KV HBM per instance from the hardware: reserved fraction of HBM minus the replicas' weights."""
        reserved = self.gpus * self.gpu.hbm_gb * 1e9 * self.kv_fraction
        return (reserved - self.replicas * weight_bytes(self.model)) / GIB

    @property
    def hbm_for_kv_gib(self) -> float:
        return self.derived_hbm_gib if self.hbm_gib is None else self.hbm_gib

    @property
    def total_gpus(self) -> int:
        return self.instances * self.gpus

    @property
    def compute(self) -> hw.Compute:
        """One replica's compute: ``tp`` GPUs at the MFU."""
        return hw.Compute(self.gpu, self.mfu, self.tp)

    def with_sizes(self, **sizes: float) -> TierConfig:
        """The same deployment with other tier sizes (``hbm_gib``, ``dram_gib``, ``ssd_gib``, ``remote_gib``)."""
        return replace(self, **sizes)

    def cost_per_hour(self) -> float:
        """Dollars per hour: the GPUs, each instance's DRAM and SSD, and the remote pool."""
        p = self.prices
        per_instance = self.gpus * p.gpu_per_hour + self.dram_gib * GIB / 1e9 * p.dram_per_gb_hour
        per_instance += self.ssd_gib * GIB / 1e12 * p.ssd_per_tb_hour
        return self.instances * per_instance + self.remote_gib * GIB / 1e9 * p.remote_per_gb_hour

    def warnings(self) -> list[str]:
        """What the deployment itself gets wrong, in words: host DRAM not larger than the GPU memory for KV.

        SGLang 0.5.23 warns the same at start-up (``HostKVCache._allocate_host_buffer``,
        mem_cache/pool_host/base.py: a host pool not larger than the device pool reduces L2's effectiveness)."""
        hbm = self.hbm_for_kv_gib
        if not 0 < self.dram_gib <= hbm:
            return []
        return [
            f"host DRAM ({self.dram_gib:,.4g} GiB per instance) is not larger than the GPU memory for KV "
            f"({hbm:,.4g} GiB): host memory keeps copies of what GPU memory holds, so it adds little beyond it; "
            "SGLang warns the same when it starts (give host memory more than GPU memory)"
        ]

    def describe(self) -> dict[str, object]:
        """The deployment as plain values (for JSON and tables), its hourly prices and their basis among them."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("model", "gpu", "prices")}
        out.update(model=self.model.name, gpu=self.gpu.name, hbm_gib=self.hbm_for_kv_gib, storage=self.storage)
        out["prices"] = {f.name: getattr(self.prices, f.name) for f in fields(self.prices)}
        return out


def _choice(value: object, options: tuple[str, ...], name: str) -> str:
    key = str(value).strip().lower()
    require(key in options, f"{name} must be one of {', '.join(options)}, got {str(value)[:40]!r}", field=name)
    return key
