"""Where a request's prefill runs: the four placements of the Conductor over the instances' caches.

Each prefill instance keeps its own cache of KV blocks: the cluster's instance cache
(:class:`kvviz.prefix_cache.instance.TimedCache`, SGLang's radix cache as the cluster's routers and the tiered
replay see it), so a request's reusable prefix on an instance is its longest run of leading blocks
cached there.

* ``random``: any instance; it still reuses whatever prefix it happens to hold;
* ``balance``: the instance with the shortest queue (load balancing);
* ``cache``: min over instances of T_queue + f(len, local prefix) (local cache-aware);
* ``kvcentric``: Algorithm 1. For each instance, if best_prefix / prefix >= the balancing
  threshold it may fetch the longer prefix from ``best_matched_instance``:
  TTFT = T_transfer + T_queue + f(len, best_prefix); otherwise TTFT = T_queue + f(len, prefix).
  The smallest TTFT wins, and fetched blocks are kept on the chosen instance (hot-prefix
  replication).

KV is causal: a request's blocks enter its instance's cache when it is dispatched (the room is
taken) but exist only when its prefill finishes. A later request on the same instance queues
behind that prefill, so its local prefix is always there when it starts; a fetch from another
instance must first wait for the blocks to exist. While the best prefix does not exist yet,
Algorithm 1's fetch branch includes the wait, and the instance computes from its own prefix instead
when that is sooner. Evicting, the cache frees whole leaves of its radix tree, so the tail of a prefix
goes before its head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.mooncake.prefill import PrefillModel

SCHEDULERS: tuple[str, ...] = ("random", "balance", "cache", "kvcentric")


@dataclass(frozen=True)
class Choice:
    """Where Algorithm 1 puts one request, and what it predicts."""

    instance: int
    ttft_s: float
    prefix_blocks: int  # blocks not recomputed (local or fetched)
    fetched_blocks: int  # blocks copied from ``fetch_from`` (0 if none)
    fetch_from: int | None
    waited_s: float = 0.0  # idle time beyond the queue, waiting for the fetched KV to exist
    queue_s: float = 0.0  # the chosen instance's queue when the request arrived

    @property
    def work_s(self) -> float:
        """Seconds the chosen instance spends on this request: its transfer and its prefill."""
        return self.ttft_s - self.queue_s - self.waited_s


def prefix_tokens(blocks: int, input_length: int, block_size: int) -> int:
    """Tokens covered by ``blocks`` matched blocks; at least one token is always computed."""
    return max(0, min(blocks * block_size, input_length - 1))


def argmin(values: list[float], tiebreak: list[float] | None) -> int:
    """Index of the smallest value; equal values go to the smallest ``tiebreak`` (work done so far)."""
    best = 0
    for i in range(1, len(values)):
        v, b = values[i], values[best]
        if v < b or (v == b and tiebreak is not None and tiebreak[i] < tiebreak[best]):
            best = i
    return best


def _prefill_times(prefix_blocks: list[int], input_length: int, block_size: int, model: PrefillModel) -> dict:
    """f(len, prefix) for each distinct prefix length in ``prefix_blocks`` (most are equal)."""
    return {p: model.time(input_length, prefix_tokens(p, input_length, block_size)) for p in set(prefix_blocks)}


def kvcentric_choice(
    prefix_blocks: list[int],
    queue_s: list[float],
    input_length: int,
    block_size: int,
    model: PrefillModel,
    threshold: float,
    transfer_s_per_block: float,
    transfer_latency_s: float = 0.0,
    tiebreak: list[float] | None = None,
    ready_in_s: list[float] | None = None,
) -> Choice:
    """Algorithm 1 for one request, given each instance's local prefix (blocks) and queue time.

    Each instance is costed on one branch only, as in the paper: with a prefix ratio at or over
    ``threshold`` it fetches the best prefix, otherwise it computes from its own. ``ready_in_s``
    says how long until each instance's prefix exists (its prefill is still running; None: all
    there). A fetch waits for it, and while it waits the instance may compute from its own prefix
    instead: it takes whichever is sooner.
    """
    ready = ready_in_s or [0.0] * len(prefix_blocks)
    best_len = max(prefix_blocks)
    best = min((i for i, p in enumerate(prefix_blocks) if p == best_len), key=lambda i: ready[i])
    wait = ready[best]
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    options = []  # per instance: (ttft, blocks used, blocks fetched, waited)
    for own, queue in zip(prefix_blocks, queue_s):
        local = (queue + f[own], own, 0, 0.0)
        if best_len == 0 or (own > 0 and best_len < threshold * own):
            options.append(local)
            continue
        n = best_len - own
        start = max(queue, wait)
        fetch = (
            start + n * transfer_s_per_block + (transfer_latency_s if n else 0.0) + f[best_len],
            best_len,
            n,
            start - queue,
        )
        options.append(local if wait > 0 and local[0] < fetch[0] else fetch)
    i = argmin([o[0] for o in options], tiebreak)
    ttft, used, fetched, waited = options[i]
    return Choice(i, ttft, used, fetched, best if fetched else None, waited, queue_s[i])


def cache_aware_choice(
    prefix_blocks: list[int],
    queue_s: list[float],
    input_length: int,
    block_size: int,
    model: PrefillModel,
    tiebreak: list[float] | None = None,
) -> Choice:
    """Local cache-aware: min over instances of T_queue + f(len, local prefix); no fetching."""
    f = _prefill_times(prefix_blocks, input_length, block_size, model)
    times = [q + f[p] for p, q in zip(prefix_blocks, queue_s)]
    i = argmin(times, tiebreak)
    return Choice(i, times[i], prefix_blocks[i], 0, None, queue_s=queue_s[i])


def partial_ratios(prefix_blocks: list[int]) -> list[float]:
    """best / own for each instance holding part of the longest prefix (0 < own < best): the only
    ones whose branch in Algorithm 1 depends on the balancing threshold."""
    best = max(prefix_blocks)
    return [best / own for own in prefix_blocks if 0 < own < best]


@dataclass(frozen=True)
class Fetching:
    """What a fetch costs and when Algorithm 1 takes one (KVCache-centric only)."""

    threshold: float
    s_per_block: float
    latency_s: float


class Placer:
    """One scheduler's placements over a run: the instances' caches and the work each has done.

    ``caches`` are the instances' caches (:class:`kvviz.prefix_cache.instance.TimedCache`: the cluster's
    radix caches, which also know when a block's KV exists). ``choose`` costs a request on every
    instance (or picks one, for random and load balancing) without changing anything, so an admission
    check may still refuse it; ``commit`` dispatches it.
    """

    def __init__(
        self, scheduler: str, caches: list, block_size: int, model: PrefillModel, fetching: Fetching, picks: list[int]
    ):
        self.scheduler, self.block_size, self.model, self.fetching = scheduler, block_size, model, fetching
        self.caches = caches
        self.busy = [0.0] * len(caches)
        self.picks = picks  # the random scheduler's instance for each request
        self.ratios: list[float] = []  # every prefix ratio the balancing threshold decided
        self.decided = 0  # requests with at least one such ratio

    def choose(self, r: int, length: int, t: float, queue: list[float]) -> Choice:
        """Where request ``r`` (``length`` tokens, arriving at ``t``) would go."""
        bs, model = self.block_size, self.model
        if self.scheduler in ("random", "balance"):
            i = self.picks[r] if self.scheduler == "random" else argmin(queue, self.busy)
            own = self.caches[i].match(r)[0]
            return Choice(i, queue[i] + model.time(length, prefix_tokens(own, length, bs)), own, 0, None, 0.0, queue[i])
        matches = [cache.match(r) for cache in self.caches]
        prefixes = [n for n, _ in matches]
        if self.scheduler == "cache":
            return cache_aware_choice(prefixes, queue, length, bs, model, self.busy)
        partial = partial_ratios(prefixes)
        self.ratios += partial
        self.decided += bool(partial)
        f = self.fetching
        ready = [max(at - t, 0.0) for _, at in matches]
        return kvcentric_choice(
            prefixes, queue, length, bs, model, f.threshold, f.s_per_block, f.latency_s, self.busy, ready
        )

    def commit(self, c: Choice, r: int, t: float) -> None:
        """Dispatch: request r's blocks join the chosen instance's cache, existing once its prefill ends."""
        self.caches[c.instance].store(r, t + c.ttft_s)
        self.busy[c.instance] += c.work_s

    def threshold_ratios(self) -> np.ndarray:
        return np.asarray(self.ratios, np.float64)
