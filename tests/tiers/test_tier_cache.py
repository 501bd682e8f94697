"""The compiled HiCache replay: its GPU tier is the prefix replay, its tiers add up, unbounded tiers
reach the ceiling, and its host tier agrees with a plain-Python two-tier cache written here (on top of
kvviz's node-level RadixCache, driven as SGLang's scheduler drives it)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.prefix_cache.replay import POLICY_NAMES, PrefixReplay, prepare, request_hits
from kvviz.radix.events import EventKind
from kvviz.radix.radix_cache import RadixCache
from kvviz.tiers.config import WRITE_POLICIES
from kvviz.tiers.replay import Capacities, tier_hits
from kvviz.traces import from_records
from kvviz.traces.workload import WorkloadConfig, generate


def chained(paths: list[list[int]], outputs: list[int] | None = None):
    """A block-size-1 trace whose ids are chained: a block's id names its whole path."""
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    out = np.full(len(reqs), 2) if outputs is None else np.asarray(outputs)
    return from_records(np.arange(len(reqs)), [len(r) for r in reqs], out, reqs, block_size=1)


class HostTier:
    """Host memory as HiCache keeps it, block by block: a write evicts one host-only leaf (a block not
    on the GPU with no child on the host), smallest policy key first, or fails when there is none."""

    def __init__(self, prepared: PrefixReplay, policy: str, capacity: int):
        self.parent, self.depth = prepared.parent, prepared.depth
        self.policy, self.capacity = policy, capacity
        self.held: set[int] = set()
        self.born: dict[int, int] = {}
        self.seen: dict[int, int] = {}
        self.freq: dict[int, int] = {}

    def key(self, b: int) -> tuple:
        seen, freq, born = self.seen[b], self.freq[b], self.born[b]
        first = {"lru": seen, "lfu": freq, "fifo": born, "mru": -seen, "filo": -born, "slru": int(freq >= 2)}
        return first[self.policy], seen, -int(self.depth[b])

    def write(self, b: int, now: int, on_gpu: set[int]) -> None:
        if b in self.held:
            return
        if len(self.held) >= self.capacity:
            parents = {int(self.parent[x]) for x in self.held}
            leaves = [x for x in self.held if x not in on_gpu and x not in parents]
            if not leaves:
                return
            self.held.remove(min(leaves, key=self.key))
        self.held.add(b)
        self.born[b] = now


def reference_tiers(prepared: PrefixReplay, policy: str, gpu: int, host: int, write_policy: str):
    """(GPU hits, host hits) per request: RadixCache for the GPU (match, lock, allocate the shortfall,
    insert once or twice, counting once: ``_insert_helper``'s ``inserted_len``), its evictions in the
    order it makes them, and a HostTier."""
    nodes, offsets = prepared.nodes, prepared.offsets
    cache = RadixCache(page_size=1, eviction_policy=policy, capacity=gpu)
    tier = HostTier(prepared, policy, host)
    threshold = {"write_through": 1, "write_through_selective": 2, "write_back": None}[write_policy]
    on_gpu: set[int] = set()
    count: dict[int, int] = {}
    out1, out2 = [], []
    for r, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        path = [int(b) for b in nodes[lo:hi]]
        found = cache.match_prefix(path)
        m = found.device_len
        run = m
        while run < len(path) and path[run] in tier.held:
            run += 1
        out1.append(m)
        out2.append(run - m)
        for b in path:
            tier.seen[b] = r
            tier.freq[b] = tier.freq.get(b, 0) + 1
        want = min(len(path) - m, gpu - m)
        cache.take_events()
        cache.inc_lock_ref(found.last_node)
        assert cache.alloc_device(max(want, 0))
        for event in cache.take_events():
            if event.kind == EventKind.EVICT:
                for b in reversed(event.key):
                    on_gpu.discard(b)
                    if threshold is None:
                        tier.write(b, r, on_gpu)
        for i, b in enumerate(path[: m + max(want, 0)]):  # a request counts each block once (SGLang 0.5.23)
            count[b] = count.get(b, 0) + 1 if i < m else 1
        on_gpu.update(path[: m + max(want, 0)])
        for b in path[: m + max(want, 0)]:
            if threshold is not None and count[b] >= threshold:
                tier.write(b, r, on_gpu)
        inserted = 0
        for _ in range(int(prepared.insert_counts[r])):
            cache.insert(path[: m + max(want, 0)], inserted_len=inserted)
            inserted = m + max(want, 0)
        cache.dec_lock_ref(found.last_node)
        cache.release_device(max(want, 0))
    return out1, out2


paths_strategy = st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=6), min_size=1, max_size=30)


@settings(max_examples=50)
@given(
    paths=paths_strategy,
    outputs=st.lists(st.integers(0, 3), min_size=30, max_size=30),
    gpu=st.integers(1, 12),
    host=st.integers(0, 20),
    policy=st.sampled_from(POLICY_NAMES),
    write_policy=st.sampled_from(WRITE_POLICIES),
)
def test_two_tiers_equal_a_plain_reference(paths, outputs, gpu, host, policy, write_policy):
    prepared = prepare(chained(paths, outputs[: len(paths)]))
    g, d, s, _ = tier_hits(prepared, Capacities(gpu, host, 0), policy, write_policy)
    ref_gpu, ref_host = reference_tiers(prepared, policy, gpu, host, write_policy)
    assert g.tolist() == ref_gpu
    assert d.tolist() == ref_host
    assert not s.any()


@pytest.fixture(scope="module")
def synthetic() -> PrefixReplay:
    return prepare(generate(WorkloadConfig(requests=300, seed=5, documents=20)))


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
@pytest.mark.parametrize("policy", ("lru", "lfu", "slru", "fifo"))
def test_without_lower_tiers_the_gpu_is_the_prefix_replay(synthetic, policy, write_policy):
    """DRAM and storage at zero: GPU hits equal ``hitcurve --cache prefix`` at the same capacity."""
    for capacity in (0, 5, 60, 400):
        g, d, s, counters = tier_hits(synthetic, Capacities(capacity, 0, 0), policy, write_policy)
        assert (g == request_hits(synthetic, policy, capacity)).all(), capacity
        assert not d.any() and not s.any()
        assert counters["l2_writes"] == 0


def test_unbounded_tiers_reach_the_ceiling(synthetic):
    """Every tier unbounded: every block but its prefix's first use hits, as in an infinite cache."""
    n = synthetic.n_nodes
    for caps in (Capacities(n, 0, 0), Capacities(50, n, 0), Capacities(50, n, n)):
        g, d, s, _ = tier_hits(synthetic, caps, "lru", "write_through")
        assert g.sum() + d.sum() + s.sum() == synthetic.seen_before.sum()


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
def test_the_tier_split_sums_to_the_total(synthetic, write_policy):
    """A request's hits by tier are a prefix of it; the split adds up and never exceeds an infinite cache.
    The host is small enough that selective write-through, which backs up only blocks a later request
    reuses on the GPU, still fills it and spills to storage."""
    g, d, s, counters = tier_hits(synthetic, Capacities(40, 10, 300), "lru", write_policy)
    total = g + d + s
    assert (total <= np.diff(synthetic.offsets)).all()
    assert total.sum() <= synthetic.seen_before.sum()
    assert d.sum() > 0 and s.sum() > 0
    assert counters["l3_writes"] <= counters["l2_writes"]


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
def test_the_gpu_tier_is_the_prefix_replay_whatever_lies_below(synthetic, write_policy):
    """The tiers below never change the GPU's: its hits equal the prefix replay's (the GPU-only baseline)."""
    for policy in ("lru", "mru"):
        g, d, s, _ = tier_hits(synthetic, Capacities(60, 80, 300), policy, write_policy)
        assert (g == request_hits(synthetic, policy, 60)).all()
        assert d.sum() + s.sum() > 0


def test_storage_is_asked_only_past_a_host_copy_or_the_root():
    """SGLang 0.5.23's prefetch gate (``Scheduler._prefetch_kvcache``: ``is_backuped(last_host_node)
    or is_root(last_host_node)``), write-back, LRU, 4 GPU / 1 host / 10 storage blocks. [K,L]'s leaf L
    is written back when [Q] needs room and then pushed off the host by [M,N]'s write-back, so L is
    only in storage while K stays on the GPU with no host copy: [K,L] matches K and asks storage
    nothing. [A] alone, written back and pushed off the host the same way, matches nothing, so
    storage is asked (at the root) and holds it."""
    paths = [[1], [1, 2], [3, 4], [1], [5], [6], [1, 2]]
    g, d, s, _ = tier_hits(prepare(chained(paths)), Capacities(4, 1, 10), "lru", "write_back")
    assert (g.tolist(), d.tolist(), s.tolist()) == ([0, 1, 0, 1, 0, 0, 1], [0] * 7, [0] * 7)
    paths = [[1], [2], [3], [1]]
    g, d, s, _ = tier_hits(prepare(chained(paths)), Capacities(1, 1, 10), "lru", "write_back")
    assert (g.tolist(), d.tolist(), s.tolist()) == ([0, 0, 0, 0], [0] * 4, [0, 0, 0, 1])
