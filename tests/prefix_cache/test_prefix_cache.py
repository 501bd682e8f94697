"""Prefix-cache replay: hit for hit equal to SGLang's RadixCache (kvviz.radix.radix_cache) driven as SGLang's
scheduler drives it, equal to a plain tree written here, and the laws that hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.eviction.grid import INFINITE
from kvviz.prefix_cache import (
    POLICY_NAMES,
    PrefixReplay,
    cached_tokens,
    final_state,
    parse_policies,
    prefix_nodes,
    prepare,
    reaches,
    request_hits,
    sweep,
)
from kvviz.radix.radix_cache import RadixCache
from kvviz.traces import from_records
from kvviz.traces.workload import WorkloadConfig, generate


def reference_hits(
    replay: PrefixReplay, policy: str, capacity: int, page: int = 1, cached: set | None = None
) -> np.ndarray:
    """Each request through RadixCache as SGLang's scheduler serves it: match, lock, allocate the shortfall,
    insert after prefill, insert again at finish (only when the output has two tokens or more) counting
    only past what the first inserted, unlock.

    A block is ``page`` tokens (block id × page + k), the tree's page size is ``page`` and the
    capacity is in blocks; a prompt caches at most what fits after its matched prefix. ``cached``
    receives the tokens the tree holds at the end.
    """
    nodes, offsets = replay.nodes, replay.offsets
    cache = RadixCache(page_size=page, eviction_policy=policy, capacity=capacity * page)
    out = []
    for r, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        key = [int(b) * page + k for b in nodes[lo:hi] for k in range(page)]
        found = cache.match_prefix(key)
        m = found.device_len // page
        want = min(hi - lo - m, capacity - m)
        cache.inc_lock_ref(found.last_node)
        assert cache.alloc_device(want * page)
        inserted = 0
        for _ in range(int(replay.insert_counts[r])):
            cache.insert(key[: (m + want) * page], inserted_len=inserted)
            inserted = (m + want) * page
        cache.dec_lock_ref(found.last_node)
        cache.release_device(want * page)
        out.append(m)
    if cached is not None:
        cached.update(t for node in cache.nodes() if node.value is not None for t in node.key)
    return np.array(out, dtype=np.int64)


class Node:
    """A node of the plain tree: its blocks, children by first block, SGLang's three stamps."""

    def __init__(self, key: tuple, parent, now: int):
        self.key, self.parent, self.children = key, parent, {}
        self.last = self.created = now
        self.hits = 0


KEYS = {
    "lru": lambda n: (n.last,),
    "lfu": lambda n: (n.hits, n.last),
    "fifo": lambda n: (n.created, n.last),
    "mru": lambda n: (-n.last, n.last),
    "filo": lambda n: (-n.created, n.last),
    "slru": lambda n: (n.hits >= 2, n.last),
}


def plain_hits(
    paths: list[list[int]], inserts: list[int], policy: str, capacity: int, *, once: bool = True
) -> list[int]:
    """SGLang's serving flow written out plainly: a tree of edges, the smallest-keyed unlocked leaf
    evicted whole until the prompt fits, then ``inserts`` inserts of the prompt. With ``once``
    (SGLang 0.5.23, ``RadixCache._insert_helper``) an insert counts a node only when its end lies
    past ``inserted_len``, what the request inserted before (``_insert_cache`` sets
    ``req.kv.cache_inserted_len``); without, every insert counts (0.5.20-0.5.21)."""
    clock = iter(range(10**9))
    root = Node((), None, next(clock))
    used, out = 0, []

    def walk(key: tuple, count: bool, inserted_len: int = 0) -> tuple[Node, int]:
        node, i, now = root, 0, next(clock)
        while i < len(key) and key[i] in node.children:
            child = node.children[key[i]]
            n = 0
            while n < len(child.key) and i + n < len(key) and child.key[n] == key[i + n]:
                n += 1
            if n < len(child.key):  # split: the shared front becomes a new node
                front = Node(child.key[:n], node, now)
                front.hits, front.last = child.hits, next(clock)
                front.children = {child.key[n]: child}
                node.children[key[i]] = front
                child.key, child.parent = child.key[n:], front
                child.last = now
                child = front
            else:
                child.last = now
            child.hits += count and i + n > inserted_len
            node, i = child, i + n
        return node, i

    def leaves(locked: set) -> list[Node]:
        stack, found = list(root.children.values()), []
        while stack:
            n = stack.pop()
            stack.extend(n.children.values())
            if not n.children and id(n) not in locked:
                found.append(n)
        return found

    for path, times in zip(paths, inserts):
        key = tuple(path)
        deepest, m = walk(key, False)
        locked = set()
        n = deepest
        while n is not root:
            locked.add(id(n))
            n = n.parent
        want = min(len(key) - m, capacity - m)
        while capacity - used < want:
            victim = min(leaves(locked), key=KEYS[policy])
            del victim.parent.children[victim.key[0]]
            used -= len(victim.key)
        inserted = 0
        for _ in range(times):
            node, i = walk(key[: m + want], True, inserted)
            if i < m + want:
                leaf = Node(key[i : m + want], node, next(clock))
                leaf.hits = 1
                node.children[key[i]] = leaf
                used += m + want - i
            if once:
                inserted = m + want
        out.append(m)
    return out


def chained(paths: list[list[int]], outputs: list[int] | None = None):
    """A block-size-1 trace whose ids are chained: a block's id names its whole path. ``outputs``: each
    request's output tokens (default 2, so every prompt is inserted twice)."""
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    n = len(reqs)
    out = np.full(n, 2) if outputs is None else np.asarray(outputs)
    return from_records(np.arange(n), [len(r) for r in reqs], out, reqs, block_size=1)


paths_strategy = st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=7), min_size=1, max_size=40)
outputs_strategy = st.lists(st.integers(0, 3), min_size=40, max_size=40)


@settings(max_examples=40)
@given(
    paths=paths_strategy, outputs=outputs_strategy, capacity=st.integers(1, 25), policy=st.sampled_from(POLICY_NAMES)
)
def test_equals_radix_cache_and_a_plain_tree_on_random_trees(paths, outputs, capacity, policy):
    """Requests with outputs of 0–3 tokens: one insert or two, as SGLang's scheduler does them. The
    compiled replay and the object model the Radix page steps through agree on every request's hits
    and on what the tree holds at the end."""
    trace = chained(paths, outputs[: len(paths)])
    replay = prepare(trace)
    ours, held = final_state(replay, policy, capacity)
    cached: set = set()
    assert (ours == reference_hits(replay, policy, capacity, cached=cached)).all()
    assert set(np.flatnonzero(held).tolist()) == cached
    plain = plain_hits(
        [trace.hash_ids(i).tolist() for i in range(trace.n_requests)], replay.insert_counts.tolist(), policy, capacity
    )
    assert ours.tolist() == plain


def test_sglang_0_5_23_counts_a_request_once():
    """The repro: when every insert counted (0.5.20-0.5.21) the first prompt reached SLRU's protected
    segment after one reuse and the third request's prompt was protected too, so the fourth evicted the
    first and the fifth hit. Since 0.5.22 a request counts each node once, however many times it
    inserts, so the third's prompt is still probationary and goes: as with one insert per request."""
    paths = [[1, 2, 3], [1, 2, 3], [4, 5, 6], [7, 8, 9], [4, 5, 6]]
    assert request_hits(prepare(chained(paths)), "slru", 6).tolist() == [0, 3, 0, 0, 0]
    assert request_hits(prepare(chained(paths, [1] * 5)), "slru", 6).tolist() == [0, 3, 0, 0, 0]
    assert plain_hits(paths, [2] * 5, "slru", 6) == [0, 3, 0, 0, 0]
    assert plain_hits(paths, [2] * 5, "slru", 6, once=False) == [0, 3, 0, 0, 3]


def test_lfu_counts_a_two_insert_request_once():
    """[4] finishes after two tokens (two inserts), [2] and [1] at their first (one insert each), through
    two blocks. [1] must evict one of [4] and [2]: both were counted once, so the older [4] goes and its
    return misses. Counting every insert, [4] would hold 2 against 1 and stay."""
    paths, outputs = [[4], [2], [1], [4]], [2, 1, 1, 2]
    ours = request_hits(prepare(chained(paths, outputs)), "lfu", 2).tolist()
    assert ours == plain_hits(paths, [2, 1, 1, 2], "lfu", 2) == [0, 0, 0, 0]
    assert plain_hits(paths, [2, 1, 1, 2], "lfu", 2, once=False) == [0, 0, 0, 1]


def test_inserts_follow_the_output_length():
    replay = prepare(chained([[0], [1], [2], [3]], [0, 1, 2, 500]))
    assert replay.insert_counts.tolist() == [1, 1, 2, 2]


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_equals_radix_cache_on_a_synthetic_trace_at_every_capacity(policy):
    replay = prepare(generate(WorkloadConfig(requests=120, seed=3, documents=15)))
    for capacity in (1, 2, 7, 30, 100, 300, 1000):
        ours = request_hits(replay, policy, capacity)
        assert (ours == reference_hits(replay, policy, capacity)).all(), capacity


def test_page_size_is_the_block_size():
    """Blocks of 4 tokens in a page-4 RadixCache give the same matches as one token per block."""
    replay = prepare(chained([[0, 1, 2], [0, 1, 0], [0, 2], [0, 1, 2, 1], [1], [0, 1, 0, 2]]))
    for policy in ("lru", "fifo"):
        for capacity in (2, 3, 5):
            assert (request_hits(replay, policy, capacity) == reference_hits(replay, policy, capacity, page=4)).all()


def test_textbook_case_lru_keeps_the_shared_prefix():
    """Two requests share a 3-block prefix; a 4-block cache evicts the first one's private tail, not the head."""
    trace = chained([[0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 3]])
    hits = request_hits(prepare(trace), "lru", 4)
    assert hits.tolist() == [0, 3, 3]


@settings(max_examples=30)
@given(paths=paths_strategy, policy=st.sampled_from(POLICY_NAMES))
def test_laws_zero_infinite_and_bounds(paths, policy):
    replay = prepare(chained(paths))
    blocks = np.diff(replay.offsets)
    assert request_hits(replay, policy, 0).sum() == 0
    infinite = request_hits(replay, policy, INFINITE)
    assert infinite.sum() == replay.seen_before.sum()
    assert (request_hits(replay, policy, replay.n_nodes) == infinite).all()
    for capacity in (1, 3, 9):
        hits = request_hits(replay, policy, capacity)
        assert (hits <= blocks).all() and (hits <= infinite).all()


def test_lru_is_not_a_stack_algorithm_here():
    """Whole-edge eviction overshoots, so more capacity can lose hits (unlike block LRU): a known anomaly."""
    rng = np.random.default_rng(1)
    found = False
    for _ in range(50):
        paths = [list(rng.integers(0, 3, rng.integers(1, 7))) for _ in range(30)]
        replay = prepare(chained(paths))
        hits = [request_hits(replay, "lru", c).sum() for c in range(1, replay.n_nodes + 1)]
        found = found or bool((np.diff(hits) < 0).any())
    assert found


def test_per_block_hashes_are_rechained_on_their_prefix():
    """Equal ids under different prefixes are different nodes (a Bailian-style per-block hash)."""
    nodes, parent, depth = prefix_nodes(np.array([5, 7, 6, 7, 5, 7]), np.array([0, 2, 4, 6]))
    assert nodes[1] != nodes[3] and nodes[1] == nodes[5] and nodes[0] == nodes[4]
    assert parent[nodes[3]] == nodes[2] and depth[nodes[3]] == 1


def test_sweep_frame_cached_tokens_and_reaches():
    trace = generate(WorkloadConfig(requests=200, seed=1))
    replay = prepare(trace)
    frame = sweep(replay, ["lru", "lfu"], [10, 100, 1000, INFINITE])
    assert list(frame.columns) == ["policy", "capacity", "hits", "accesses", "hit_ratio"]
    assert frame["hits"].iloc[3] == replay.seen_before.sum() == frame["hits"].iloc[7]
    tokens = cached_tokens(replay, request_hits(replay, "lru", INFINITE))
    assert (tokens <= replay.input_lengths).all() and tokens.sum() > 0
    ceiling = float(frame["hit_ratio"].iloc[3])
    got = reaches(frame, ceiling, (0.5, 1.0))
    assert [r.policy for r in got] == ["lru", "lru", "lfu", "lfu"]
    assert all(r.capacity is None or r.hit_ratio >= r.share * ceiling - 1e-12 for r in got)


def test_bad_input_names_the_field():
    with pytest.raises(InputError, match="unknown prefix-cache policy 'lfru'"):
        parse_policies("lru,lfru")
    with pytest.raises(InputError, match="no block ids"):
        prepare(from_records([0], [10], [1], None, block_size=4))


def test_a_share_label_near_its_panels_right_edge_turns_left():
    from kvviz.prefix_cache.figures import _inward

    capacities = [100, 1_000, 10_000, 100_000]
    assert _inward("bottom right", 50_000, capacities) == "bottom left"  # 90% of the way along the log axis
    assert _inward("bottom right", 1_000, capacities) == "bottom right"
    assert _inward("top left", 50_000, capacities) == "top left"


def test_a_replay_sent_to_a_worker_keeps_the_kernels_array_kind():
    """A process pool or Ray pickles the prepared replay; numpy unpickles arrays writable, a kind no kernel
    was compiled for. The replay comes back read-only int64, as prepared."""
    import pickle

    replay = pickle.loads(pickle.dumps(prepare(chained([[1, 2, 3], [1, 2, 4]], [2, 2]))))
    for name in ("nodes", "parent", "depth", "offsets", "inserts"):
        array = getattr(replay, name)
        assert array.dtype == np.int64 and not array.flags.writeable, name
