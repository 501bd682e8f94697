"""A trace served by N instances, each with its own radix cache, behind a router.

Requests arrive in trace order. At each arrival the router (:mod:`kvviz.cluster.routers`) sees the
cluster as it is then and picks an instance; the request is served by that instance's cache
(:class:`kvviz.prefix_cache.instance.InstanceCache`: its hits are the leading blocks that cache holds,
and its prompt is cached from then on, as in the hit-ratio replays) and queues for that instance's
prefill, first come first served:

- prefill time is Mooncake's f(len, prefix) (:class:`kvviz.mooncake.prefill.PrefillModel`) for the
  model on one GPU at the MFU, with no fixed overhead: the paper GPU's time to compute the prompt
  after its cached (or fetched) prefix; the last prompt token is always computed;
- TTFT = the wait for the instance's earlier prefills + the request's own fetch and prefill;
- a request is in flight from its arrival until its prefill ends plus ``decode_s_per_token`` per
  output token (an input: decode is not simulated, only how long a request holds its place in the
  routers' loads).

With a shared KV pool (``pool_blocks`` > 0: Mooncake Store, or an LMCache server every instance
uses as its remote backend), an instance looks a prompt up in the pool past what its own cache holds
(LMCache's lookup: the leading blocks the pool holds, hits touched) and loads those blocks over its
link at ``pool_gb_s`` instead of computing them; after prefill it puts every block of the prompt
there, so one instance's prefill is another's hit. The pool evicts its least recently used blocks
(:class:`kvviz.lmcache.store.LruBackend`, the one pool model both stacks use).

With host memory (``host_blocks`` > 0), an SGLang instance is SGLang 0.5.23's HiCache
(:class:`kvviz.tiers.instance.TieredInstance`, the step the tiered replay runs): GPU and host memory of
its own, and HiCache's storage under them, each instance's own disk or (``shared_storage``) one pool
every instance writes its host copies through to and prefetches from (Mooncake Store, 3FS), so one
instance's prefill is another's storage hit. A request loads what it found in host memory over PCIe
and what it found in storage over the instance's disk or its link to the pool (``pool_gb_s``), and
computes the rest. The routers read what they read without it (the GPU tree, or their own).

Load imbalance is the busiest instance's prefill seconds over the mean. One cache of N × C blocks
replaying the whole trace is the reference the instances would reach if they were one cache; no
router reaches it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from kvviz import vllm
from kvviz.cluster.engines import parse_engine
from kvviz.cluster.routers import MAX_INSTANCES, ROUTERS, Router, RouterKnobs, View, make_router, parse_router
from kvviz.common import budget
from kvviz.common import hardware as hw
from kvviz.common.errors import require
from kvviz.lmcache.stack import StackInstance
from kvviz.lmcache.store import BACKENDS, ChunkKeys, LMCacheConfig, LruBackend
from kvviz.mooncake.prefill import PrefillModel
from kvviz.prefix_cache.instance import InstanceCache, Nodes, numbered
from kvviz.prefix_cache.replay import PrefixReplay, parse_policy, prepare, request_hits
from kvviz.radix.hiradix_cache import WRITE_POLICIES
from kvviz.tiers.instance import Storage, TieredInstance
from kvviz.tiers.replay import Capacities, floors, tier_hits
from kvviz.traces import Trace

REFERENCE = "one shared cache (reference)"
SUMMARY_COLUMNS = (
    "router",
    "instances",
    "hits",
    "fetched",
    "pooled",
    "dram_hits",
    "storage_hits",
    "lmcache_cpu_tokens",
    "lmcache_disk_tokens",
    "lmcache_remote_tokens",
    "accesses",
    "hit_ratio",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "imbalance",
    "dollars_per_hour",
    "dollars_per_m_input_tokens",
)


@dataclass(frozen=True)
class ClusterConfig:
    """N instances of ``blocks`` GPU blocks each (one model replica over ``tp`` GPUs of ``gpu`` each,
    at ``gpu_price`` dollars per GPU-hour, default its list price), the cache's eviction policy, the
    model that sets prefill time, and the routers' knobs."""

    instances: int = 4
    blocks: int = 4096
    policy: str = "lru"
    model: str = "llama-3-8b"
    gpu: str = "h100"
    tp: int = 1
    gpu_price: float | None = None
    mfu: float = hw.PUBLISHED_PREFILL_MFU.value
    decode_s_per_token: float = 0.02
    fetch_gb_s: float = 100.0  # the Conductor's fetch between instances (800 Gbps RDMA)
    pool_blocks: float = 0.0  # a shared KV pool (0: none; math.inf: unbounded)
    pool_gb_s: float = 50.0  # each instance's link to the pool (400 Gbps RDMA)
    knobs: RouterKnobs = field(default_factory=RouterKnobs)
    engine: str = "sglang"
    lmcache: LMCacheConfig = field(default_factory=LMCacheConfig)  # vllm-lmcache: per instance; remote shared
    host_blocks: int = 0  # sglang: each instance's HiCache host memory (0: GPU only)
    storage_blocks: int = 0  # sglang with host memory: HiCache's storage, per instance or the shared pool's
    shared_storage: bool = False  # the storage is one pool for the cluster (Mooncake Store, 3FS)
    write_policy: str = "write_through"  # HiCache's backup of GPU blocks to host memory
    memory_per_hour: float = 0.0  # dollars per hour of the cluster's host memory and storage

    def validate(self) -> None:
        require(1 <= self.instances <= MAX_INSTANCES, f"instances must be in 1..{MAX_INSTANCES}", field="instances")
        require(self.blocks >= 1, "blocks per instance must be at least 1", field="blocks")
        require(0 < self.mfu <= 1, "MFU must be in (0, 1]", field="mfu")
        require(isinstance(self.tp, int) and self.tp >= 1, "tensor parallel must be a whole number ≥ 1", field="tp")
        price = self.gpu_price
        require(price is None or 0 <= price < math.inf, "the GPU price must be ≥ 0 $/h", field="gpu_price")
        require(self.decode_s_per_token >= 0, "decode seconds per token must be ≥ 0", field="decode_s_per_token")
        require(self.fetch_gb_s > 0, "the fetch bandwidth must be > 0 GB/s", field="fetch_gb_s")
        require(self.pool_blocks >= 0, "the shared pool's blocks must be ≥ 0", field="pool_blocks")
        require(self.pool_gb_s > 0, "the pool's link must be > 0 GB/s", field="pool_gb_s")
        require(self.host_blocks >= 0, "host blocks per instance must be ≥ 0", field="host_blocks")
        require(self.storage_blocks >= 0, "storage blocks must be ≥ 0", field="storage_blocks")
        require(
            self.host_blocks > 0 or self.storage_blocks == 0,
            "HiCache writes storage from host memory: give host blocks too",
            field="storage_blocks",
        )
        require(self.write_policy in WRITE_POLICIES, "unknown write policy", field="write_policy")
        require(self.memory_per_hour >= 0, "the memory's price must be ≥ 0 $/h", field="memory_per_hour")
        parse_policy(self.policy)
        self.check_engine()
        hw.model(self.model)
        hw.gpu(self.gpu)

    def check_engine(self) -> None:
        """The engine is known, and what applies only to the other engine is not given."""
        engine = parse_engine(self.engine)
        if engine == "sglang":
            require(
                not self.lmcache.capacities(),
                "LMCache's backends apply to the vllm-lmcache engine; SGLang's shared pool is pool blocks",
                field="lmcache",
            )
            require(
                not (self.tiered and self.pool_blocks > 0),
                "with host memory, SGLang's shared pool is HiCache's storage (shared storage), not pool blocks",
                field="pool_blocks",
            )
            return
        require(
            self.host_blocks == 0,
            "host blocks apply to SGLang's HiCache; vLLM's CPU memory is LMCache's CPU backend",
            field="host_blocks",
        )
        self.lmcache.validate()
        require(
            self.policy == "lru",
            "vLLM's block pool has no eviction policy to choose (it frees blocks in the order they were freed)",
            field="policy",
        )
        require(
            self.pool_blocks == 0,
            "with vllm-lmcache the shared pool is LMCache's remote backend, given in chunks, not pool blocks",
            field="pool_blocks",
        )

    @property
    def tiered(self) -> bool:
        """Whether each instance is HiCache (host memory under the GPU) rather than the GPU's radix cache."""
        return self.engine == "sglang" and self.host_blocks > 0

    @property
    def model_spec(self) -> hw.ModelSpec:
        return hw.model(self.model)

    @property
    def prefill(self) -> PrefillModel:
        compute = hw.Compute(hw.gpu(self.gpu), self.mfu, self.tp)
        return PrefillModel.for_hardware(self.model_spec, compute, overhead_s=0.0)

    def dollars_per_hour(self) -> float:
        price = hw.gpu_price(hw.gpu(self.gpu)).value if self.gpu_price is None else self.gpu_price
        return self.instances * self.tp * price + self.memory_per_hour

    def knobs_for(self, block_size: int) -> RouterKnobs:
        """The knobs with the Conductor's fetch cost from the link and the model's KV per block."""
        per_block = block_size * self.model_spec.kv_bytes_per_token / (self.fetch_gb_s * hw.GB)
        return replace(self.knobs, transfer_s_per_block=per_block)

    def pool_s_per_block(self, block_size: int) -> float:
        """Seconds to load one block from the shared pool."""
        return block_size * self.pool_s_per_token()

    def pool_s_per_token(self) -> float:
        return self.model_spec.kv_bytes_per_token / (self.pool_gb_s * hw.GB)

    def load_s_per_token(self) -> dict[str, float]:
        """Seconds to load one token's KV from each LMCache backend: local CPU memory over PCIe 5.0,
        local disk from one NVMe SSD, the remote (shared) backend over the pool's link."""
        per = self.model_spec.kv_bytes_per_token
        return {
            "cpu": per / hw.link("pcie5-x16").effective_bytes_s,
            "disk": per / hw.link("nvme").effective_bytes_s,
            "remote": self.pool_s_per_token(),
        }


DEFAULT = ClusterConfig()
"""Four instances of 4,096 blocks: llama-3-8b's 256 GiB of 512-token blocks each."""


@dataclass(frozen=True)
class ClusterRun:
    """One router's run: per request its instance, blocks hit in that instance's GPU cache, blocks
    fetched from another instance, blocks loaded from SGLang's shared pool, blocks found in HiCache's
    host memory and storage (``lower``: columns host, storage; SGLang with host memory only), tokens
    loaded from each LMCache backend (``loaded``: columns CPU, disk, remote; vllm-lmcache only), and
    TTFT; per instance its prefill seconds."""

    router: str
    instance: np.ndarray
    hits: np.ndarray
    fetched: np.ndarray
    pooled: np.ndarray
    lower: np.ndarray
    loaded: np.ndarray
    ttft_s: np.ndarray
    busy_s: np.ndarray
    accesses: int
    input_tokens: int
    span_s: float

    @property
    def hit_ratio(self) -> float:
        """Blocks found in the instance's GPU cache, host memory or storage over all blocks asked for."""
        found = float(self.hits.sum() + self.lower.sum())
        return found / self.accesses if self.accesses else 0.0

    def by_instance(self, instances: int) -> pd.DataFrame:
        """Per instance: requests served, blocks found on the GPU, in host memory and in storage."""
        found = {"requests": np.ones(len(self.hits)), "gpu": self.hits, "dram": self.lower[:, 0]}
        found["storage"] = self.lower[:, 1]
        table = {k: np.bincount(self.instance, v, minlength=instances) for k, v in found.items()}
        return pd.DataFrame(table).astype(np.int64).rename_axis("instance")

    @property
    def imbalance(self) -> float:
        """The busiest instance's prefill seconds over the mean (1 = even)."""
        mean = float(self.busy_s.mean())
        return float(self.busy_s.max()) / mean if mean > 0 else 1.0


PREFILLED, COMPLETED = 0, 1


@dataclass
class Serving:
    """The cluster while a trace is served: the routers' view, when each instance's prefill queue
    empties, the shared pool, and the prefills and requests still to end (a heap of events)."""

    view: View
    free_at: np.ndarray
    pool: LruBackend | None
    events: list[tuple[float, int, int, int]] = field(default_factory=list)

    def settle(self, now: float, rule: Router, lengths: np.ndarray, computed: np.ndarray) -> None:
        """Every prefill and request that ended by ``now`` leaves the loads the routers read."""
        view = self.view
        while self.events and self.events[0][0] <= now:
            _, kind, r, i = heapq.heappop(self.events)
            if kind == PREFILLED:
                view.prefill_tokens[i] -= computed[r]
                rule.prefilled(r, i)
            else:
                view.running[i] -= 1
                view.prompt_tokens[i] -= lengths[r]
                rule.completed(r, i)
        np.maximum(self.free_at - now, 0.0, out=view.queue_s)

    def start(self, r: int, i: int, now: float, service: float, computed: int, length: int, decode_s: float) -> float:
        """Request r joins instance i's prefill queue; returns when its prefill ends."""
        view = self.view
        end = max(now, self.free_at[i]) + service
        self.free_at[i] = end
        view.busy_s[i] += service
        view.running[i] += 1
        view.prompt_tokens[i] += length
        view.prefill_tokens[i] += computed
        heapq.heappush(self.events, (end, PREFILLED, r, i))
        heapq.heappush(self.events, (end + decode_s, COMPLETED, r, i))
        return end


def run(
    source: Trace | PrefixReplay, router: str, config: ClusterConfig = DEFAULT, *, trace: Trace | None = None
) -> ClusterRun:
    """Serve the trace over ``config.instances`` caches behind ``router``. When ``source`` is a prepared
    replay, ``trace`` gives the output lengths (without it a request leaves at its first token)."""
    config.validate()
    name = parse_router(router)
    replay = source if isinstance(source, PrefixReplay) else prepare(source)
    check_memory(replay, config)
    shape = numbered(replay)
    n, bs, model = config.instances, replay.block_size, config.prefill
    lengths = replay.input_lengths
    decode_s = _outputs(source if isinstance(source, Trace) else trace, replay) * config.decode_s_per_token
    caches = make_caches(config, shape, lengths, bs)
    lmcache = config.engine != "sglang"
    load_s = np.array(list(config.load_s_per_token().values()))
    lower_s = np.array([load_s[0], load_s[2] if config.shared_storage else load_s[1]]) * bs
    rule = make_router(
        name, shape=shape, lengths=lengths, block_size=bs, instances=n, knobs=config.knobs_for(bs), model=model
    )
    view = View(caches, *(np.zeros(n, t) for t in (np.int64, np.int64, np.int64, float, float)))
    cluster = Serving(view, np.zeros(n), LruBackend("pool", config.pool_blocks) if config.pool_blocks > 0 else None)
    pool_s = config.pool_s_per_block(bs)
    arrivals = replay.timestamps_ms / 1000.0
    out = {k: np.zeros(replay.n_requests, np.int64) for k in "ihfpc"}
    loaded = np.zeros((replay.n_requests, len(BACKENDS)), np.int64)
    lower = np.zeros((replay.n_requests, 2), np.int64)
    ttft = np.zeros(replay.n_requests)
    for r in range(replay.n_requests):
        now, length = float(arrivals[r]), int(lengths[r])
        cluster.settle(now, rule, lengths, out["c"])
        route = rule.choose(r, view)
        i = route.instance
        hit = caches[i].serve(r)
        if config.tiered:
            hit, lower[r] = hit.gpu, (hit.host, hit.storage)
        have = hit + route.fetched
        pooled, extra, load = 0, 0, 0.0
        if config.tiered:
            have = hit + max(route.fetched, int(lower[r].sum()))
            load = float(lower[r] @ lower_s)
        elif lmcache:
            for backend, tokens in caches[i].load(r, min(have * bs, length)).items():
                loaded[r, BACKENDS.index(backend)] = tokens
            extra, load = int(loaded[r].sum()), float(loaded[r] @ load_s)
        elif cluster.pool is not None:
            pooled = _from_pool(cluster.pool, shape.blocks(r).tolist(), have)
            load = pooled * pool_s
        cached = max(0, min((have + pooled) * bs + extra, length - 1))
        service = route.transfer_s + load + model.time(length, cached)
        end = cluster.start(r, i, now, service, length - cached, length, float(decode_s[r]))
        out["i"][r], out["h"][r], out["f"][r], out["p"][r], out["c"][r] = i, hit, route.fetched, pooled, length - cached
        ttft[r] = end - now
    span = float(cluster.free_at.max() - arrivals[0]) if replay.n_requests else 0.0
    return ClusterRun(
        name,
        out["i"],
        out["h"],
        out["f"],
        out["p"],
        lower,
        loaded,
        ttft,
        view.busy_s.copy(),
        replay.accesses,
        int(lengths.sum()),
        span,
    )


def make_caches(config: ClusterConfig, shape: Nodes, lengths: np.ndarray, block_size: int) -> list:
    """Each instance's cache: SGLang's radix cache, or vLLM's block pool with LMCache behind it (its
    CPU and disk backends its own, the remote backend one for the cluster)."""
    n = config.instances
    if config.tiered:
        shared = Storage(shape, config.storage_blocks) if config.shared_storage else None
        return [
            TieredInstance(
                shape,
                config.blocks,
                config.host_blocks,
                floors(block_size),
                config.policy,
                config.write_policy,
                shared if shared is not None else Storage(shape, config.storage_blocks),
            )
            for _ in range(n)
        ]
    if config.engine == "sglang":
        return [InstanceCache(shape, config.blocks, config.policy) for _ in range(n)]
    lm = config.lmcache
    keys = ChunkKeys(shape.nodes, shape.offsets, lengths, block_size, lm)
    shared = LruBackend("remote", lm.remote_chunks) if lm.remote_chunks > 0 else None
    return [StackInstance(keys, shape.n_nodes, config.blocks, lm, shared) for _ in range(n)]


ROUTER_BYTES_PER_PREFIX = 8
"""A router's tree: one word per prefix of the trace (SGLang's router: which instances it sent it to)."""
RADIX_BYTES = (4, 2 * 68)
"""An SGLang instance: per prefix of the trace, its number there (4 bytes); per block it has seen, its radix
cache's arrays (68), with room to grow as much again."""
TIERED_BYTES = (4, 2 * 148)
"""An SGLang instance with host memory (HiCache): per prefix of the trace, its number there; per block it has
seen, its tree, both heaps, the duplicates' queue and its shape (148), with room to grow as much again."""
STORAGE_BYTES = 8 * 8 + 2 * 16
"""A HiCache storage tier: per prefix of the trace, its record (eight words) and at most two heap entries."""
POOL_BYTES = (24, 20)
"""A vLLM instance: per prefix of the trace, its holders' queue (24 bytes); per block of its pool, 20."""
MEMORY_LIMIT_GIB = 6.0


def memory_gib(replay: PrefixReplay, config: ClusterConfig) -> float:
    """At most the memory the instances and the router take over this trace. An SGLang instance grows with
    the blocks it sees, and all of them together see at most one block per access."""
    n, many = replay.n_nodes, config.instances
    storage = 0
    if config.tiered:
        per_prefix, per_block = TIERED_BYTES
        blocks = min(many * n, replay.accesses)
        storage = (1 if config.shared_storage else many) * n * STORAGE_BYTES if config.storage_blocks else 0
    elif config.engine == "sglang":
        per_prefix, per_block = RADIX_BYTES
        blocks = min(many * n, replay.accesses)
    else:
        per_prefix, per_block = POOL_BYTES
        blocks = many * min(config.blocks, n)
    return (n * (ROUTER_BYTES_PER_PREFIX + many * per_prefix) + blocks * per_block + storage) / 2**30


def check_memory(replay: PrefixReplay, config: ClusterConfig) -> None:
    """Refuse, before allocating, instances whose caches would take more than ``MEMORY_LIMIT_GIB``."""
    gib = memory_gib(replay, config)
    require(
        gib <= MEMORY_LIMIT_GIB,
        f"{config.instances} instances over this trace's {replay.n_nodes:,} prefixes would take {gib:,.1f} GiB, "
        f"over the limit of {MEMORY_LIMIT_GIB:.0f} GiB; use fewer instances or a shorter trace",
        field="instances",
    )


def _from_pool(pool: LruBackend, blocks: list[int], have: int) -> int:
    """Look the prompt up in the shared pool (hits touched), put it there after prefill; returns the
    blocks the pool holds past the ``have`` the instance already has."""
    found = pool.leading(blocks)
    pool.touch(blocks[:found])
    pool.put(blocks)
    return max(0, found - have)


def _outputs(trace: Trace | None, replay: PrefixReplay) -> np.ndarray:
    if trace is not None:
        return trace.requests["output_length"].to_numpy(np.int64)
    return np.zeros(replay.n_requests, np.int64)


def shared_hits(replay: PrefixReplay, config: ClusterConfig) -> tuple[int, int, int]:
    """Blocks one cache of instances × blocks (the engine's; with host memory, HiCache of instances × its
    GPU and host blocks over the storage, whole or summed) finds replaying the whole trace (the reference):
    on the GPU, in host memory, in storage."""
    capacity = config.instances * config.blocks
    if config.tiered:
        many = 1 if config.shared_storage else config.instances
        caps = Capacities(capacity, config.instances * config.host_blocks, many * config.storage_blocks)
        gpu, host, storage, _ = tier_hits(replay, caps, config.policy, config.write_policy)
        return int(gpu.sum()), int(host.sum()), int(storage.sum())
    if config.engine == "sglang":
        return int(request_hits(replay, config.policy, capacity).sum()), 0, 0
    return int(vllm.request_hits(replay, capacity).sum()), 0, 0


def summary_row(result: ClusterRun, config: ClusterConfig) -> dict:
    p50, p90, p99 = np.percentile(result.ttft_s, [50, 90, 99]) if len(result.ttft_s) else (np.nan,) * 3
    per_hour = config.dollars_per_hour()
    dollars = per_hour * result.span_s / 3600
    return {
        "router": result.router,
        "instances": config.instances,
        "hits": int(result.hits.sum()),
        "fetched": int(result.fetched.sum()),
        "pooled": int(result.pooled.sum()),
        "dram_hits": int(result.lower[:, 0].sum()),
        "storage_hits": int(result.lower[:, 1].sum()),
        **{f"lmcache_{name}_tokens": int(result.loaded[:, k].sum()) for k, name in enumerate(BACKENDS)},
        "accesses": result.accesses,
        "hit_ratio": result.hit_ratio,
        "ttft_p50_s": float(p50),
        "ttft_p90_s": float(p90),
        "ttft_p99_s": float(p99),
        "imbalance": result.imbalance,
        "dollars_per_hour": per_hour,
        "dollars_per_m_input_tokens": dollars / (result.input_tokens / 1e6) if result.input_tokens else np.nan,
    }


def compare(
    trace: Trace,
    routers: Sequence[str] = ROUTERS,
    config: ClusterConfig = DEFAULT,
    *,
    instance_counts: Sequence[int] | None = None,
    target_p90_s: float | None = None,
    progress: Callable[[float], None] | None = None,
) -> pd.DataFrame:
    """One row per router (``SUMMARY_COLUMNS``) and then the shared cache's row, labelled as the
    reference, for each number of instances (default: ``config.instances``). With a TTFT target, two
    more columns: whether a row's p90 TTFT meets it, and the cheapest row that does (ties: more hits)."""
    counts = list(instance_counts or [config.instances])
    for n in counts:
        replace(config, instances=n).validate()
    names = [parse_router(r) for r in routers]
    require(bool(names), "no router given; choose from " + ", ".join(ROUTERS), field="router")
    replay = prepare(trace)
    budget.check(cost(replay, len(names) * len(counts), config))
    rows, runs = [], len(names) * len(counts)
    for n in counts:
        cfg = replace(config, instances=n)
        for name in names:
            rows.append(summary_row(run(replay, name, cfg, trace=trace), cfg))
            if progress is not None:
                progress(len(rows) / runs)
        rows.append(reference_row(replay, cfg))
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return table if target_p90_s is None else with_target(table, target_p90_s)


def reference_row(replay: PrefixReplay, config: ClusterConfig) -> dict:
    """The shared cache's row: hits only (it is no deployment, so no time or cost)."""
    hits, *lower = shared_hits(replay, config)
    return {
        "router": REFERENCE,
        "instances": config.instances,
        "hits": hits,
        "fetched": 0,
        "pooled": 0,
        "dram_hits": lower[0],
        "storage_hits": lower[1],
        **{f"lmcache_{name}_tokens": 0 for name in BACKENDS},
        "accesses": replay.accesses,
        "hit_ratio": (hits + sum(lower)) / replay.accesses,
    }


def with_target(table: pd.DataFrame, target_p90_s: float) -> pd.DataFrame:
    """``meets_target`` (p90 TTFT ≤ the target) and ``cheapest`` (the lowest cost per hour that meets it,
    then the most hits) for each row."""
    meets = (table["ttft_p90_s"] <= target_p90_s) & (table["router"] != REFERENCE)
    cheapest = pd.Series(False, index=table.index)
    if meets.any():
        best = table[meets].sort_values(["dollars_per_hour", "hits"], ascending=[True, False], kind="stable")
        cheapest[best.index[0]] = True
    return table.assign(meets_target=meets, cheapest=cheapest)


SERVED_ACCESSES_PER_S = 0.5e6
"""Block accesses the cluster serves per CPU second, routing included (bench.bench_routers: 16.5M accesses
behind cache-aware over 8 instances in 25 CPU s, rounded down)."""


LMCACHE_ACCESSES_PER_S = 0.2e6
"""The same with LMCache's backends on, whose chunk keys and lookups run in Python (bench.bench_routers
--engine vllm-lmcache --remote-chunks inf: 3.3M accesses over 8 instances in 12.9 CPU s, rounded down)."""


TIERED_ACCESSES_PER_S = 0.3e6
"""The same with SGLang's host memory (HiCache) on each instance (bench.bench_routers: 16.5M accesses over 8
instances in 36.7 CPU s with 400,000 host blocks each, 45.6 CPU s with 20,000 GPU and 200,000 host blocks
each over a shared storage pool; rounded down)."""


def cost(replay: PrefixReplay, runs: int, config: ClusterConfig | None = None) -> budget.Cost:
    """The work of ``runs`` cluster runs of this trace (of ``config``'s engine), before it starts."""
    lmcache = config is not None and config.engine != "sglang" and bool(config.lmcache.capacities())
    rate = LMCACHE_ACCESSES_PER_S if lmcache else SERVED_ACCESSES_PER_S
    if config is not None and config.tiered:
        rate = TIERED_ACCESSES_PER_S
    return budget.cost("cluster replay", replay.accesses * runs, "block accesses", rate, "the number of routers")
