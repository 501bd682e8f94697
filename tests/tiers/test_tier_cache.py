"""The compiled HiCache replay: it equals SGLang 0.5.23's HiCache ported rule by rule to plain Python
(``hicache_reference``) request for request, its tiers add up, unbounded tiers reach the ceiling, and
with nothing below the GPU it is the prefix replay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.prefix_cache.replay import POLICY_NAMES, PrefixReplay, parse_policy, prepare, request_hits
from kvviz.tiers.cache import STATS, tiered_replay
from kvviz.tiers.config import WRITE_POLICIES
from kvviz.tiers.replay import Capacities, floors, tier_hits
from kvviz.traces import from_records
from kvviz.traces.model import read_only
from kvviz.traces.workload import WorkloadConfig, generate
from tests.tiers.hicache_reference import reference


def chained(paths: list[list[int]]):
    """A block-size-1 trace whose ids are chained: a block's id names its whole path."""
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    return from_records(np.arange(len(reqs)), [len(r) for r in reqs], np.full(len(reqs), 2), reqs, block_size=1)


paths_strategy = st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=6), min_size=1, max_size=30)


def compiled(prepared: PrefixReplay, policy: str, caps: Capacities, write_policy: str, floor: tuple[int, int]):
    arrays = (prepared.nodes, prepared.offsets, prepared.parent, prepared.depth)
    g, d, s, stats = tiered_replay(  # the kind of arrays the replay hands it: no second compile of the kernel
        *map(read_only, arrays),
        caps.gpu,
        caps.dram,
        caps.storage,
        parse_policy(policy).value,
        WRITE_POLICIES.index(write_policy),
        *floor,
    )
    return g.tolist(), d.tolist(), s.tolist(), dict(zip(STATS, map(int, stats)))


@settings(max_examples=80)
@given(
    paths=paths_strategy,
    gpu=st.integers(0, 12),
    host=st.integers(0, 20),
    storage=st.sampled_from((0, 3, 8, 30)),
    policy=st.sampled_from(POLICY_NAMES),
    write_policy=st.sampled_from(WRITE_POLICIES),
    floor=st.tuples(st.integers(1, 3), st.integers(1, 3)),
)
def test_the_replay_equals_a_plain_port_of_the_release(paths, gpu, host, storage, policy, write_policy, floor):
    """Per request: blocks found on the GPU, the host and storage; and every tier counter."""
    prepared = prepare(chained(paths))
    caps = Capacities(gpu, host, storage)
    assert compiled(prepared, policy, caps, write_policy, floor) == reference(
        prepared, policy, caps, write_policy, floor
    )


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_a_generated_workload_equals_the_port(synthetic, policy, write_policy):
    """A few hundred requests over shared documents, every tier evicting."""
    for caps in (Capacities(40, 10, 300), Capacities(40, 80, 30)):
        got = compiled(synthetic, policy, caps, write_policy, (1, 1))
        assert got == reference(synthetic, policy, caps, write_policy, (1, 1)), caps


@pytest.fixture(scope="module")
def synthetic() -> PrefixReplay:
    return prepare(generate(WorkloadConfig(requests=300, seed=5, documents=20)))


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_without_lower_tiers_the_gpu_is_the_prefix_replay(synthetic, policy, write_policy):
    """DRAM and storage at zero: GPU hits equal ``hitcurve --cache prefix`` at the same capacity; under
    write-back, which counts no hits (``_inc_hit_count_and_check`` returns first), LFU and SLRU are LRU."""
    same = "lru" if write_policy == "write_back" and policy in ("lfu", "slru") else policy
    for capacity in (0, 5, 60, 400):
        g, d, s, counters = tier_hits(synthetic, Capacities(capacity, 0, 0), policy, write_policy)
        assert (g == request_hits(synthetic, same, capacity)).all(), capacity
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


def hits(paths: list[list[int]], caps: Capacities, write_policy: str, floor: tuple[int, int] = (1, 1)):
    return compiled(prepare(chained(paths)), "lru", caps, write_policy, floor)


def test_host_memory_frees_whole_leaves_and_only_the_shortfall():
    """``drive_host_eviction``, LRU, write-through. GPU 3 / host 3: [1,2,3] is one node backed up whole;
    [4] pushes it off the GPU, and its one-block backup evicts the whole host-only node (3 blocks), so the
    last request finds nothing. GPU 1 / host 3: [1], [2], [3] each pushed to the host; [4]'s backup needs
    one block and evicts only the oldest leaf [1], so [2] is still found on the host."""
    g, d, _, counters = hits([[1, 2, 3], [4], [5], [6], [1, 2, 3]], Capacities(3, 3, 0), "write_through")
    assert (g, d, counters["l2_writes"], counters["l2_evictions"]) == ([0] * 5, [0] * 5, 9, 6)
    g, d, _, counters = hits([[1], [2], [3], [4], [2]], Capacities(1, 3, 0), "write_through")
    assert (g, d, counters["l2_evictions"]) == ([0] * 5, [0, 0, 0, 0, 1], 1)


def test_a_split_stamps_the_suffix():
    """``_split_node`` stamps the suffix it keeps: [1,5] splits [1,2,3] and [2,3] is then newer than [9],
    so the GPU (4 blocks) evicts [9] for [5] and [1,2,3] is found whole."""
    g, *_ = hits([[1, 2, 3], [9], [1, 5], [1, 2, 3]], Capacities(4, 0, 0), "write_through")
    assert g == [0, 0, 1, 3]


def test_write_back_backs_up_only_the_evicted_node():
    """GPU 3 / host 4: [1,3] splits [1,2] into [1] and [2]; [4] evicts the suffix [2] (stamped by the split,
    before [3] was created), and only [2] is written to the host, not its parent [1]; [1,2] then finds [1]
    on the GPU and [2] on the host, whose load evicts [3], the second write."""
    g, d, _, counters = hits([[1, 2], [1, 3], [4], [1, 2]], Capacities(3, 4, 0), "write_back")
    assert (g, d, counters["l2_writes"]) == ([0, 1, 0, 1], [0, 0, 0, 1], 2)


def test_write_back_reclaims_host_duplicates_first():
    """``_reclaim_full_host_duplicates``, GPU 2 / host 2: [1] and [2] are written back as [3] and [1] need
    room, so [1] is on both tiers after its load; [4]'s eviction writes [3] back into a full host, which
    drops [1]'s duplicate copy (a device leaf, taken on the second pass) rather than the host-only [2],
    found there by the last request."""
    g, d, *_ = hits([[1], [2], [3], [1], [4], [2]], Capacities(2, 2, 0), "write_back")
    assert (g, d) == ([0] * 6, [0, 0, 0, 1, 0, 1])


def test_a_storage_hit_gets_what_host_memory_can_give_above_the_floor():
    """``allocate_storage_hit``, GPU 3 / host 3 / storage 10: [1,2,3] reaches storage, then leaves the host
    for [4]'s copy; asked again, storage holds 3 blocks, the host has 2 free (the GPU-resident [4] cannot go),
    so a floor of 2 prefetches 2 blocks and a floor of 3 none; a floor above the rest of the prompt asks
    nothing."""
    paths = [[1, 2, 3], [4], [1, 2, 3]]
    for floor, stored in ((2, 2), (3, 0), (4, 0)):
        assert hits(paths, Capacities(3, 3, 10), "write_through", (floor, 1))[2] == [0, 0, stored]


def test_the_floors_in_blocks():
    """256 tokens (at least a page) before a prefetch, 10 tokens before a load back."""
    assert floors(512) == (1, 1)
    assert floors(16) == (16, 1)
    assert floors(1) == (256, 10)
    assert floors(300) == (1, 1)


def test_storage_is_asked_only_past_a_host_copy_or_the_root():
    """SGLang 0.5.23's prefetch gate (``Scheduler._prefetch_kvcache``: ``is_backuped(last_host_node)
    or is_root(last_host_node)``), write-back, LRU, 4 GPU / 1 host / 10 storage blocks. [K,L]'s leaf L
    is written back when [Q] needs room and then pushed off the host by [M,N]'s write-back (two blocks
    for a one-block host: it fails, and [M,N] is dropped), so L is only in storage while K stays on the
    GPU with no host copy: [K,L] matches K and asks storage nothing. [A] alone, written back and pushed
    off the host the same way, matches nothing, so storage is asked (at the root) and holds it."""
    g, d, s, _ = hits([[1], [1, 2], [3, 4], [1], [5], [6], [1, 2]], Capacities(4, 1, 10), "write_back")
    assert (g, d, s) == ([0, 1, 0, 1, 0, 0, 1], [0] * 7, [0] * 7)
    g, d, s, _ = hits([[1], [2], [3], [1]], Capacities(1, 1, 10), "write_back")
    assert (g, d, s) == ([0, 0, 0, 0], [0] * 4, [0, 0, 0, 1])
