"""The routers: which instance serves each request, each as its source decides.

A router sees the cluster as a request arrives (:class:`View`: every instance's requests in flight,
their prompt tokens, the prefill tokens not yet computed, the wait before a new prefill starts, and
each instance's cache) and names an instance. Each rule follows the code it is named after:

- ``round-robin``: request k goes to instance k mod N (SGLang's model gateway,
  ``sgl-model-gateway/src/policies/round_robin.rs``).
- ``least-load``: the instance with the fewest prompt tokens in flight: a request adds its prompt's
  length when it is routed and takes it away when it completes; the first of equals wins
  (``policies/least_load.rs``, ``LeastLoadPolicy::select_worker``, which counts the request text).
- ``prefix-hash``: the first 256 tokens' blocks hashed onto a consistent-hash ring of 160 points
  per instance; when that instance has more requests in flight than 1.25 × the mean (counting the
  new one), the least loaded instance under that bound, or the ring's choice if none is
  (``policies/prefix_hash.rs``, ``find_worker_with_load_balance``; the prefix grouping of llm-d's
  prefix scorer and vLLM production stack's prefix-aware router).
- ``cache-aware``: SGLang's router (``policies/cache_aware.rs``, ``CacheAwarePolicy::select_worker``,
  over ``policies/tree.rs``): when the loads (requests in flight) are imbalanced — max − min > 64
  and max > 1.5 × min — the least loaded instance; otherwise the longest prefix the router has sent
  anywhere (an approximate tree of what it routed, not what the caches hold), to an instance holding
  it when it is more than 0.3 of the prompt, else to the instance whose tree is smallest. Either way
  the prompt joins the chosen instance's tree. The router counts characters; here a prompt is its
  blocks. Its trees are never trimmed (the default cap, 2^26 characters, is beyond these traces), and
  where the source takes "the first" of several instances (a hash map's order) the lowest-numbered wins.
- ``kv-aware``: NVIDIA Dynamo's KV router (``lib/llm/src/kv_router/scheduler.rs``,
  ``DefaultWorkerSelector::select_worker``, with ``sequence.rs``'s active sequences): for each
  instance, the blocks its cache really holds (Dynamo hears every cache event), then
  ``logit = 1.0 × prefill_blocks + decode_blocks`` where prefill_blocks = (uncached prompt tokens +
  tokens of prefills still running there) / block size and decode_blocks = the distinct blocks of
  the requests in flight there plus the request's blocks not among them; the smallest logit wins
  (temperature 0), ties to the smallest cache, then the lowest-numbered (the source draws at random).
- ``conductor``: Mooncake's Algorithm 1 (:func:`kvviz.mooncake.placement.kvcentric_choice`) over these
  caches: each instance's TTFT is its queue plus the prefill after its own prefix, or, when the best
  prefix anywhere is at least 1.25 × its own, after fetching the rest of that prefix; the smallest
  TTFT wins.

What each router sees of an instance's cache: round-robin, least-load and prefix-hash none; cache-aware
only its own tree of what it routed; kv-aware and the Conductor the blocks held on the GPU (``match``).
With host memory (SGLang's HiCache, :class:`kvviz.tiers.instance.TieredInstance`) that stays the GPU
tree: a block only in host memory or storage is not counted by any router (SGLang 0.5.23 does publish
host-memory events, ``unified_tree_core.py`` with ``StorageMedium.CPU``; kvviz's kv-aware reads the
GPU's only).
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from kvviz.common.errors import InputError, quote
from kvviz.common.jit import kernel
from kvviz.mooncake.placement import kvcentric_choice
from kvviz.mooncake.prefill import PrefillModel
from kvviz.prefix_cache.instance import InstanceCache, Nodes
from kvviz.tiers.instance import TieredInstance

ROUTERS: tuple[str, ...] = ("round-robin", "least-load", "prefix-hash", "cache-aware", "kv-aware", "conductor")
ROUTER_RULES: dict[str, str] = {
    "round-robin": "each instance in turn",
    "least-load": "the instance with the fewest prompt tokens in flight",
    "prefix-hash": "a hash of the prompt's first tokens, moved off an instance loaded past 1.25 × the mean",
    "cache-aware": "SGLang's router: the instance it last sent the longest prefix to, unless loads are imbalanced",
    "kv-aware": "Dynamo's KV router: fewest blocks to prefill plus blocks in flight",
    "conductor": "Mooncake's Conductor: shortest predicted time to first token, fetching a longer prefix if it pays",
}
MAX_INSTANCES = 63
"""The most instances a cluster has (SGLang's router tree keeps one bit per instance)."""


def parse_router(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-")
    if key not in ROUTERS:
        raise InputError(
            f"unknown router '{quote(str(name).strip())}'; choose from {', '.join(ROUTERS)}", field="router"
        )
    return key


@dataclass(frozen=True)
class RouterKnobs:
    """Each router's settings, at their sources' defaults."""

    cache_threshold: float = 0.3  # sgl-router --cache-threshold
    balance_abs_threshold: int = 64  # sgl-router --balance-abs-threshold
    balance_rel_threshold: float = 1.5  # sgl-router --balance-rel-threshold
    prefix_token_count: int = 256  # sgl-model-gateway --prefix-token-count
    prefix_hash_load_factor: float = 1.25  # sgl-model-gateway --prefix-hash-load-factor
    virtual_nodes: int = 160  # points per instance on the consistent-hash ring
    overlap_score_weight: float = 1.0  # Dynamo --kv-overlap-score-weight
    balancing_threshold: float = 1.25  # Mooncake's kvcache_balancing_threshold (no published value)
    transfer_s_per_block: float = 0.0  # the Conductor's fetch: seconds per block
    transfer_latency_s: float = 0.001  # and per fetch


@dataclass
class View:
    """The cluster as a request arrives: per instance, requests and prompt tokens in flight, prefill
    tokens not yet computed, seconds until its prefill queue is empty, and its cache."""

    caches: list[InstanceCache | TieredInstance]
    running: np.ndarray
    prompt_tokens: np.ndarray
    prefill_tokens: np.ndarray
    queue_s: np.ndarray
    busy_s: np.ndarray


@dataclass(frozen=True)
class Route:
    """Where a request goes; ``fetched`` blocks beyond the instance's own prefix come from another
    instance (the Conductor) at ``transfer_s``."""

    instance: int
    fetched: int = 0
    transfer_s: float = 0.0


def first_min(values) -> int:
    """The index of the smallest value, the first of equals."""
    return int(np.argmin(np.asarray(values)))


@dataclass
class Router:
    """A routing rule and the state it keeps. ``choose`` names the instance for request ``r``;
    ``prefilled`` and ``completed`` tell it when a request's first token is out and when it ends."""

    shape: Nodes
    lengths: np.ndarray
    block_size: int
    instances: int
    knobs: RouterKnobs = field(default_factory=RouterKnobs)
    model: PrefillModel = field(default_factory=PrefillModel)

    def __post_init__(self) -> None:
        """The state a rule keeps (none by default)."""

    def choose(self, r: int, view: View) -> Route:
        raise NotImplementedError

    def prefilled(self, r: int, i: int) -> None:
        """Request r's prefill on instance i is done."""

    def completed(self, r: int, i: int) -> None:
        """Request r on instance i is done."""


class RoundRobin(Router):
    def __post_init__(self):
        self.count = 0

    def choose(self, r: int, view: View) -> Route:
        i = self.count % self.instances
        self.count += 1
        return Route(i)


class LeastLoad(Router):
    def choose(self, r: int, view: View) -> Route:
        return Route(first_min(view.prompt_tokens))


def _hash64(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


class PrefixHash(Router):
    def __post_init__(self):
        points = sorted(
            (_hash64(f"{i}-{v}".encode()), i) for i in range(self.instances) for v in range(self.knobs.virtual_nodes)
        )
        self.points = [p for p, _ in points]
        self.owners = [i for _, i in points]
        self.prefix = max(1, math.ceil(self.knobs.prefix_token_count / self.block_size))

    def ring_owner(self, r: int) -> int:
        """The instance the ring gives request r's first blocks."""
        key = _hash64(np.ascontiguousarray(self.shape.blocks(r)[: self.prefix], np.int64).tobytes())
        return self.owners[bisect_left(self.points, key) % len(self.points)]

    def choose(self, r: int, view: View) -> Route:
        i = self.ring_owner(r)
        loads = view.running
        total = int(loads.sum())
        bound = (total + 1) / self.instances * self.knobs.prefix_hash_load_factor
        if total == 0 or loads[i] <= bound:
            return Route(i)
        ok = np.flatnonzero(loads <= bound)
        return Route(int(ok[first_min(loads[ok])]) if len(ok) else i)


@kernel
def _tree_match(tenants: np.ndarray, nodes: np.ndarray, lo: int, hi: int) -> int:
    m = 0
    while lo + m < hi and tenants[nodes[lo + m]] != 0:
        m += 1
    return m


@kernel
def _tree_insert(tenants: np.ndarray, sizes: np.ndarray, nodes: np.ndarray, lo: int, hi: int, i: int) -> None:
    bit = np.int64(1) << i
    for k in range(lo, hi):
        b = nodes[k]
        if tenants[b] & bit == 0:
            tenants[b] |= bit
            sizes[i] += 1


def lowest_bit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


class CacheAware(Router):
    def __post_init__(self):
        self.tenants = np.zeros(self.shape.n_nodes, np.int64)  # which instances the router sent each block to
        self.sizes = np.zeros(self.instances, np.int64)  # blocks in each instance's tree

    def imbalanced(self, loads: np.ndarray) -> bool:
        hi, lo = int(loads.max()), int(loads.min())
        k = self.knobs
        return hi - lo > k.balance_abs_threshold and hi > lo * k.balance_rel_threshold

    def pick(self, r: int, view: View) -> int:
        if self.imbalanced(view.running):
            return first_min(view.running)
        s = self.shape
        lo, hi = s.offsets[r], s.offsets[r + 1]
        m = int(_tree_match(self.tenants, s.nodes, lo, hi))
        rate = m / (hi - lo) if hi > lo else 0.0
        if rate > self.knobs.cache_threshold:
            return lowest_bit(int(self.tenants[s.nodes[lo + m - 1]]))
        return first_min(self.sizes)

    def choose(self, r: int, view: View) -> Route:
        i = self.pick(r, view)
        s = self.shape
        _tree_insert(self.tenants, self.sizes, s.nodes, s.offsets[r], s.offsets[r + 1], i)
        return Route(i)


class KvAware(Router):
    def __post_init__(self):
        self.active: list[dict[int, int]] = [{} for _ in range(self.instances)]  # block -> requests holding it

    def logits(self, r: int, view: View) -> np.ndarray:
        blocks = self.shape.blocks(r).tolist()
        length, bs = int(self.lengths[r]), self.block_size
        out = np.empty(self.instances)
        for i, cache in enumerate(view.caches):
            new_tokens = max(0, length - cache.match(r) * bs)
            prefill_blocks = (new_tokens + view.prefill_tokens[i]) / bs
            active = self.active[i]
            decode_blocks = len(active) + sum(1 for b in blocks if b not in active)
            out[i] = self.knobs.overlap_score_weight * prefill_blocks + decode_blocks
        return out

    def choose(self, r: int, view: View) -> Route:
        logits = self.logits(r, view)
        best = np.flatnonzero(logits == logits.min())
        i = int(best[first_min([view.caches[j].used for j in best])])
        active = self.active[i]
        for b in self.shape.blocks(r).tolist():
            active[b] = active.get(b, 0) + 1
        return Route(i)

    def completed(self, r: int, i: int) -> None:
        active = self.active[i]
        for b in self.shape.blocks(r).tolist():
            if active[b] == 1:
                del active[b]
            else:
                active[b] -= 1


class Conductor(Router):
    def choose(self, r: int, view: View) -> Route:
        k = self.knobs
        prefixes = [cache.match(r) for cache in view.caches]
        c = kvcentric_choice(
            prefixes,
            view.queue_s.tolist(),
            int(self.lengths[r]),
            self.block_size,
            self.model,
            k.balancing_threshold,
            k.transfer_s_per_block,
            k.transfer_latency_s,
            view.busy_s.tolist(),
        )
        transfer = c.fetched_blocks * k.transfer_s_per_block + (k.transfer_latency_s if c.fetched_blocks else 0.0)
        return Route(c.instance, c.fetched_blocks, transfer)


KINDS: dict[str, type[Router]] = {
    "round-robin": RoundRobin,
    "least-load": LeastLoad,
    "prefix-hash": PrefixHash,
    "cache-aware": CacheAware,
    "kv-aware": KvAware,
    "conductor": Conductor,
}


def make_router(name: str, **kwargs) -> Router:
    return KINDS[parse_router(name)](**kwargs)
