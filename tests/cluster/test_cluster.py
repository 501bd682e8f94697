"""The cluster over its instances' own caches: round-robin is exactly N independent SGLang replays, the
routers' choices follow their sources' rules on small hand-made traces, and on Mooncake's conversation trace
SGLang's cache-aware router hits more than round-robin and less than one shared cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvviz.cluster import REFERENCE, ROUTERS, ClusterConfig, RouterKnobs, compare, parse_router, run
from kvviz.common.errors import InputError
from kvviz.prefix_cache import prepare, request_hits
from kvviz.traces import Trace, from_records, load_trace

CONVERSATION = Path(__file__).parent / "data" / "conversation_trace.jsonl.zst"
"""Mooncake's FAST'25 conversation trace (12,031 requests, 288,500 block accesses), as released."""


def sub_trace(trace: Trace, rows: np.ndarray) -> Trace:
    """The requests ``rows`` of a trace, in order, as a trace of their own."""
    req = trace.requests.iloc[rows]
    return from_records(
        req["timestamp"],
        req["input_length"],
        req["output_length"],
        [trace.hash_ids(int(r)).tolist() for r in rows],
        block_size=trace.block_size,
    )


def independent_hits(trace: Trace, instances: int, blocks: int, policy: str = "lru") -> int:
    """Round-robin's sub-traces, each through SGLang's radix cache on its own."""
    rows = np.arange(trace.n_requests)
    return sum(
        int(request_hits(prepare(sub_trace(trace, rows[rows % instances == k])), policy, blocks).sum())
        for k in range(instances)
        if (rows % instances == k).any()
    )


def trace_of(requests: list[tuple[int, int, int, list[int]]], block_size: int = 16) -> Trace:
    """(timestamp ms, input tokens, output tokens, block ids) per request."""
    ts, inp, out, ids = zip(*requests)
    return from_records(ts, inp, out, [list(x) for x in ids], block_size=block_size)


@pytest.fixture(scope="module")
def conversation() -> Trace:
    return load_trace(CONVERSATION)


def test_round_robin_is_four_independent_replays_and_cache_aware_hits_more(conversation):
    config = ClusterConfig(instances=4, blocks=4096)
    robin = run(conversation, "round-robin", config)
    assert int(robin.hits.sum()) == independent_hits(conversation, 4, 4096) == 32_048
    aware = run(conversation, "cache-aware", config)
    assert robin.hits.sum() < aware.hits.sum() < 75_668  # one shared cache of 16,384 blocks hits 75,668


requests_strategy = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 5), st.integers(1, 3)), min_size=1, max_size=40
)


@given(requests_strategy, st.integers(1, 4), st.integers(1, 12), st.sampled_from(["lru", "lfu", "fifo", "slru"]))
def test_round_robin_equals_independent_replays_on_any_trace(shape, instances, blocks, policy):
    """Prompts from a few shared stems (ids chained on the stem), any output length."""
    reqs, fresh = [], 100
    for k, (stem, extra, out) in enumerate(shape):
        ids = [stem * 10 + j for j in range(2)] + list(range(fresh, fresh + extra))
        fresh += extra if k % 3 else 0  # every third request repeats the previous one's tail
        reqs.append((k * 10, 16 * len(ids), out, ids))
    trace = trace_of(reqs)
    result = run(trace, "round-robin", ClusterConfig(instances=instances, blocks=blocks, policy=policy))
    assert int(result.hits.sum()) == independent_hits(trace, instances, blocks, policy)
    assert result.instance.tolist() == [r % instances for r in range(len(reqs))]


def test_the_reference_row_is_one_cache_of_all_the_blocks():
    trace = trace_of([(0, 32, 2, [1, 2]), (10, 32, 2, [1, 2]), (20, 32, 2, [3, 4]), (30, 32, 2, [3, 4])])
    table = compare(trace, ["round-robin"], ClusterConfig(instances=2, blocks=2))
    assert table["router"].tolist() == ["round-robin", REFERENCE]
    assert table["hits"].tolist() == [0, 4]  # each repeat meets the other instance; one cache of 4 holds both
    assert np.isnan(table["ttft_p50_s"].iloc[1])


# ---- each router against its source's rule ---------------------------------------------------------


def busy(lengths: list[int], ids: list[list[int]], output: int = 1000, block_size: int = 16) -> Trace:
    """Requests arriving together and decoding long, so each stays in flight for the rest of the trace."""
    return trace_of([(0, n, output, x) for n, x in zip(lengths, ids)], block_size)


def test_least_load_takes_the_fewest_prompt_tokens_in_flight_first_of_equals():
    """sgl-model-gateway least_load.rs: load += the request's length when routed, the first minimum wins."""
    lengths = [160, 32, 48, 16, 64]
    trace = busy(lengths, [[10 + k] for k in range(5)])
    chosen = run(trace, "least-load", ClusterConfig(instances=3)).instance.tolist()
    loads, expected = [0, 0, 0], []
    for n in lengths:
        i = loads.index(min(loads))
        expected.append(i)
        loads[i] += n
    assert chosen == expected == [0, 1, 2, 1, 1]  # 48 against 48: the first


def test_prefix_hash_keeps_a_prefix_on_one_instance_until_it_is_loaded_past_the_bound():
    """prefix_hash.rs: ring owner unless load > (total + 1) / n × 1.25, then the least loaded under it."""
    trace = busy([1024] * 8, [[7, 100 + k] for k in range(8)], block_size=512)  # 256 tokens: the first block
    chosen = run(trace, "prefix-hash", ClusterConfig(instances=4)).instance.tolist()
    owner = chosen[0]
    loads, expected = [0, 0, 0, 0], []
    for _ in range(8):
        total = sum(loads)
        bound = (total + 1) / 4 * 1.25
        i = owner
        if total and loads[i] > bound:
            ok = [j for j in range(4) if loads[j] <= bound]
            i = min(ok, key=lambda j: (loads[j], j)) if ok else owner
        expected.append(i)
        loads[i] += 1
    assert chosen == expected
    assert chosen.count(owner) > 2 and len(set(chosen)) == 4  # back to the owner whenever it is under the bound


def reference_cache_aware(trace: Trace, n: int, knobs: RouterKnobs) -> list[int]:
    """sgl-router's CacheAwarePolicy::select_worker over tree.rs, with every request in flight for the
    whole trace: load = requests routed so far; the tree's longest prefix over all tenants, its first
    tenant (here: lowest-numbered) when the match rate is over the threshold, else the smallest tenant."""
    sent: list[set] = [set() for _ in range(n)]  # prefixes (as tuples) each tenant's tree holds
    loads, out = [0] * n, []
    for r in range(trace.n_requests):
        ids = tuple(trace.hash_ids(r).tolist())
        hi, lo = max(loads), min(loads)
        if hi - lo > knobs.balance_abs_threshold and hi > lo * knobs.balance_rel_threshold:
            i = loads.index(lo)
        else:
            m = max((k for k in range(1, len(ids) + 1) if any(ids[:k] in s for s in sent)), default=0)
            if m / len(ids) > knobs.cache_threshold:
                i = next(t for t in range(n) if ids[:m] in sent[t])
            else:
                sizes = [len(s) for s in sent]
                i = sizes.index(min(sizes))
        sent[i].update(ids[:k] for k in range(1, len(ids) + 1))
        loads[i] += 1
        out.append(i)
    return out


@pytest.mark.parametrize("abs_threshold", [64, 2])
def test_cache_aware_follows_sgl_routers_rule(abs_threshold):
    rng = np.random.default_rng(3)
    ids = []
    for _ in range(40):
        stem = int(rng.integers(0, 4))
        ids.append(
            [stem] + [1000 + stem * 10 + j for j in range(int(rng.integers(0, 4)))] + [int(rng.integers(50, 60))]
        )
    trace = busy([16 * len(x) for x in ids], ids)
    knobs = RouterKnobs(balance_abs_threshold=abs_threshold)
    chosen = run(trace, "cache-aware", ClusterConfig(instances=3, knobs=knobs)).instance.tolist()
    assert chosen == reference_cache_aware(trace, 3, knobs)


def test_kv_aware_takes_the_smallest_overlap_weighted_cost():
    """Dynamo's DefaultWorkerSelector: logit = prefill blocks (uncached prompt + prefills still running)
    + decode blocks (distinct blocks in flight + the request's new ones); ties to the smaller cache.
    Requests arrive a second apart, so each prefill is done before the next arrives."""
    ids = [[1, 2, 3, 4], [5, 6], [1, 2, 3, 9], [5, 6, 7], [8]]
    trace = trace_of([(1000 * k, 16 * len(x), 1000, x) for k, x in enumerate(ids)])
    chosen = run(trace, "kv-aware", ClusterConfig(instances=2)).instance.tolist()
    cached: list[set] = [set(), set()]
    active: list[list] = [[], []]
    expected = []
    for x in ids:
        logits = []
        for i in range(2):
            overlap = next((k for k in range(len(x)) if x[k] not in cached[i]), len(x))
            flying = set(b for req in active[i] for b in req)
            logits.append((16 * len(x) - 16 * overlap) / 16 + len(flying | set(x)))
        best = [i for i in range(2) if logits[i] == min(logits)]
        i = min(best, key=lambda j: (len(cached[j]), j))
        expected.append(i)
        cached[i].update(x)
        active[i].append(x)
    assert chosen == expected == [0, 1, 0, 1, 1]  # [8]: 1 + 6 distinct blocks on 0, 1 + 4 on 1


def test_the_conductor_fetches_a_long_prefix_rather_than_wait_behind_its_holder():
    """Algorithm 1: instance 0 holds the prefix but is busy prefilling; instance 1 fetches it and starts now."""
    long = list(range(1, 61))
    reqs = [(0, 512 * 60, 1, long), (1, 512 * 61, 1, long + [99])]
    trace = trace_of(reqs, block_size=512)
    result = run(trace, "conductor", ClusterConfig(instances=2))
    assert result.instance.tolist() == [0, 1]
    assert result.hits.tolist() == [0, 0] and result.fetched.tolist() == [0, 60]
    assert result.ttft_s[1] < result.ttft_s[0]


def test_routers_and_settings_are_checked():
    assert parse_router("Cache_Aware") == "cache-aware"
    with pytest.raises(InputError, match="unknown router 'random'; choose from round-robin"):
        parse_router("random")
    with pytest.raises(InputError, match="instances must be in 1..63"):
        run(trace_of([(0, 16, 1, [1])]), "round-robin", ClusterConfig(instances=64))
    assert len(ROUTERS) == 6


# ---- a shared KV pool ------------------------------------------------------------------------------


def test_one_instances_prefill_is_anothers_hit_through_the_shared_pool():
    trace = trace_of([(0, 48, 2, [1, 2, 3]), (1000, 64, 2, [1, 2, 3, 4])])
    alone = run(trace, "round-robin", ClusterConfig(instances=2))
    pooled = run(trace, "round-robin", ClusterConfig(instances=2, pool_blocks=8))
    assert alone.pooled.tolist() == [0, 0] and pooled.pooled.tolist() == [0, 3]
    assert pooled.hits.tolist() == [0, 0] and pooled.ttft_s[1] < alone.ttft_s[1]


@pytest.mark.parametrize("router", ROUTERS)
def test_an_unbounded_pool_tops_every_router_up_to_the_traces_ceiling(router):
    trace = load_trace(CONVERSATION).head(400)
    result = run(trace, router, ClusterConfig(instances=3, blocks=64, pool_blocks=float("inf")))
    ceiling = request_hits(prepare(trace), "lru", float("inf"))
    assert np.array_equal(result.hits + result.fetched + result.pooled, ceiling)


def test_kv_aware_counts_the_prefills_still_running_on_an_instance():
    """Both arrive at once: on instance 0 the second request's 10 cached blocks are offset by the first
    request's 160 tokens still being computed (16 + 160 tokens = 11 blocks, + 11 decode blocks), the same
    cost as computing everything on the empty instance 1, which wins the tie by its smaller cache."""
    first = list(range(1, 11))
    trace = trace_of([(0, 160, 50, first), (0, 176, 50, first + [11])])
    assert run(trace, "kv-aware", ClusterConfig(instances=2)).instance.tolist() == [0, 1]


def test_loads_fall_when_requests_complete():
    """least-load: the first request (long prompt) has completed when the third arrives: instance 0 is empty again."""
    trace = trace_of([(0, 160, 1, [1]), (1, 32, 1000, [2]), (60_000, 48, 1, [3])])
    assert run(trace, "least-load", ClusterConfig(instances=2)).instance.tolist() == [0, 1, 0]


def test_memory_is_bounded_before_it_is_spent(monkeypatch):
    from kvviz.cluster import simulate

    monkeypatch.setattr(simulate, "MEMORY_LIMIT_GIB", 1e-9)
    with pytest.raises(
        InputError, match=r"2 instances over this trace's 2 prefixes would take 0.0 GiB, over the limit"
    ):
        run(trace_of([(0, 32, 1, [1, 2])]), "round-robin", ClusterConfig(instances=2))


def test_an_instance_keeps_room_only_for_the_blocks_it_meets():
    """Half the requests of 3,000 distinct blocks: the instance numbers the 1,500 it meets, its arrays
    doubling from 1,024, and hits what the prefix replay of its sub-trace hits (checked above)."""
    from kvviz.prefix_cache.instance import InstanceCache, numbered

    shape = numbered(prepare(trace_of([(k, 32, 1, [2 * k, 2 * k + 1]) for k in range(1500)])))
    cache = InstanceCache(shape, 64)
    for r in range(0, 1500, 2):
        cache.serve(r)
    assert (cache.count, cache.room, shape.n_nodes) == (1500, 2048, 3000)
    assert cache.used == 64 and cache.match(0) == 0 and cache.match(1498) == 2
