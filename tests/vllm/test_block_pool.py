"""vLLM's block pool: equal, hit for hit, to a plain free queue written here from vLLM's four moves, on
hypothesis traces and on the bundled example; and the laws that hold."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.common.jit import frozen
from kvviz.eviction.grid import INFINITE
from kvviz.prefix_cache import prepare
from kvviz.traces import from_records, load_trace
from kvviz.vllm import block_pool as vllm

EXAMPLE = "assets/example_trace.jsonl"


def plain_pool(requests: list[list[int]], capacity: int) -> tuple[list[int], dict[int, list[int]]]:
    """vLLM's pool written out plainly: block hashes are the (chained) ids, the free queue an ordered dict
    (front = head), each hash its blocks in caching order. Returns each request's hits and the final map."""
    free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(capacity))
    holds: dict[int, int] = {}  # block -> hash
    cached: dict[int, list[int]] = {}  # hash -> blocks, first cached first
    out = []
    for hashes in requests:
        hit = []
        for h in hashes:  # lookup: stop at the first hash no block holds
            if not cached.get(h):
                break
            hit.append(cached[h][0])
        for b in hit:  # touch
            del free[b]
        fresh = []
        for h in hashes[len(hit) : len(hit) + min(len(hashes) - len(hit), capacity - len(hit))]:
            b, _ = free.popitem(last=False)  # allocate from the head, dropping the hash it held
            if b in holds:
                cached[holds[b]].remove(b)
            holds[b] = h
            cached.setdefault(h, []).append(b)
            fresh.append(b)
        for b in reversed(hit + fresh):  # free at finish: tail first, to the tail of the queue
            free[b] = None
        out.append(len(hit))
    return out, {h: bs for h, bs in cached.items() if bs}


def chained(paths: list[list[int]]):
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    n = len(reqs)
    return from_records(np.arange(n), [len(r) for r in reqs], np.full(n, 2), reqs, block_size=1)


def requests_of(replay) -> list[list[int]]:
    return [replay.nodes[lo:hi].tolist() for lo, hi in zip(replay.offsets[:-1], replay.offsets[1:])]


paths_strategy = st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=7), min_size=1, max_size=40)


@settings(max_examples=50)
@given(paths=paths_strategy, capacity=st.integers(0, 25))
def test_equals_a_plain_free_queue(paths, capacity):
    replay = prepare(chained(paths))
    hits, _ = plain_pool(requests_of(replay), min(capacity, replay.n_nodes))
    assert vllm.request_hits(replay, capacity).tolist() == hits


def test_duplicate_hashes_are_kept():
    """Hashes not chained on a prefix (a hand-made request list): hash 2 after the miss on 3 is cached a
    second time and both copies stay (vLLM does not de-duplicate); the pool equals the plain queue."""
    requests = [[1, 2], [3, 2], [2], [1, 2]]
    nodes = frozen([h for r in requests for h in r], np.int64)  # the kind of arrays the replay hands the kernel
    offsets = frozen(np.cumsum([0] + [len(r) for r in requests]), np.int64)
    hits, held = vllm.pool_replay(nodes, offsets, 4, 4)
    plain, cached = plain_pool(requests, 4)
    assert hits.tolist() == plain == [0, 0, 1, 2]
    assert sorted(held.tolist()) == [1, 2, 2, 3] and cached[2] == [1, 3]


def test_bundled_example_exact_counts():
    replay = prepare(load_trace(EXAMPLE))
    got = {c: int(vllm.request_hits(replay, c).sum()) for c in (100, 300, 1000, 3000)}
    assert got == {100: 2714, 300: 5202, 1000: 8231, 3000: 11059}
    plain, _ = plain_pool(requests_of(replay), 300)
    assert sum(plain) == 5202


@settings(max_examples=30)
@given(paths=paths_strategy)
def test_laws_zero_infinite_bounds_and_no_orphans(paths):
    """No cache, no hits; a pool as large as the trace hits every prefix seen before; served one at a
    time, a block is freed after its children, so no cached tail ever loses its head."""
    replay = prepare(chained(paths))
    assert vllm.request_hits(replay, 0).sum() == 0
    infinite = vllm.request_hits(replay, INFINITE)
    assert infinite.sum() == replay.seen_before.sum()
    for capacity in (1, 3, 9):
        state = vllm.final_state(replay, capacity)
        assert (state.hits <= infinite).all() and state.cached.sum() <= capacity
        assert state.orphans == 0


def test_vllm_keeps_a_tail_block_sglang_drops_with_its_edge():
    """[A,B,C] then [A,D] in three blocks: SGLang evicts the edge B·C whole, vLLM only C (freed first), so
    [A,B,C] again hits A·B in vLLM and A alone in SGLang."""
    from kvviz.prefix_cache import request_hits

    replay = prepare(chained([[0, 1, 2], [0, 3], [0, 1, 2]]))
    assert vllm.request_hits(replay, 3).tolist() == [0, 1, 2]
    assert request_hits(replay, "lru", 3).tolist() == [0, 1, 1]


def test_sweep_and_bad_capacity():
    replay = prepare(chained([[0, 1], [0, 1], [0, 2]]))
    frame = vllm.sweep(replay, [1, 2, INFINITE])
    assert frame["policy"].tolist() == ["vllm"] * 3
    assert frame["hits"].tolist() == [2, 3, 3] and (frame["accesses"] == 6).all()
    with pytest.raises(InputError, match="capacit"):
        vllm.sweep(replay, ["-5"])
