"""RadixAttention scheduling: SGLang's orders on hand-checked queues, the in-batch rule, and conservation laws."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.radix.radix_cache import RadixCache
from kvviz.radix.schedule_policy import (
    INTERLEAVED,
    Order,
    ScheduleConfig,
    _dfs,
    compare,
    lpm_order,
    order_notes,
    schedule,
    trace_queue,
)
from kvviz.traces.workload import WorkloadConfig, generate

ONE_AT_A_TIME = ScheduleConfig(capacity=5, budget=5, block_size=16)  # room for one 4-block prefix + a tail


def test_interleaved_prefixes_fcfs_thrashes_lpm_and_dfs_group_them():
    table = compare(list(INTERLEAVED), ONE_AT_A_TIME).set_index("order")
    assert table.loc["FCFS", "hits"] == 0 and table.loc["FCFS", "rounds"] == 9
    assert table.loc["LPM", "hits"] == table.loc["DFS-weight", "hits"] == 24  # 6 requests × 4 prefix blocks
    assert (table["hits"] + table["recomputed"] == 45).all()
    notes = order_notes(table.reset_index(), 16)
    assert notes[0].startswith("**LPM** and **DFS-weight** hit most") and "384 tokens" in notes[0]


def test_dfs_weight_visits_the_heavier_subtree_first_and_a_node_after_its_children():
    cache = RadixCache(page_size=1)
    cache.insert([1, 2, 3])
    cache.insert([7, 8])
    queue = {0: [7, 8, 9], 1: [1, 2, 3, 4], 2: [1, 2, 5], 3: [1, 2, 3, 6], 4: [50]}
    found = {r: cache.match_prefix(k) for r, k in queue.items()}
    order = _dfs(list(queue), {r: f.last_node for r, f in found.items()}, cache)
    # [1,2] holds requests 1, 2, 3 (weight 3) before [7,8] (weight 1); [1,2,3]'s two requests before [1,2]'s own
    assert order == [1, 3, 2, 0, 4]


def test_lpm_holds_back_duplicates_of_a_cold_prefix():
    """radix_spec.md S7: R2 shares 64 cold tokens with R1 and goes last; R4 shares only 20 and stays."""
    p = list(range(1, 65))
    requests = [
        tuple(p + [1001]),
        tuple(p + [1002]),
        tuple(list(range(201, 265)) + [1003]),
        tuple(list(range(1, 21)) + list(range(2001, 2041))),
    ]
    order = lpm_order([0, 1, 2, 3], {r: 0 for r in range(4)}, requests, ScheduleConfig(1000, 1000, block_size=1))
    assert order == [0, 2, 3, 1]
    cache = RadixCache(page_size=1)
    cache.insert(requests[0])  # next round, after R1's prefill
    rest = [1, 2, 3]
    matched = {r: cache.match_prefix(requests[r]).device_len for r in rest}
    assert matched == {1: 64, 2: 0, 3: 20}
    assert lpm_order(rest, matched, requests, ScheduleConfig(1000, 1000, block_size=1)) == [1, 3, 2]  # none held back


queues = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=14)


@settings(max_examples=25)
@given(paths=queues, capacity=st.integers(1, 20), budget=st.integers(1, 20), order=st.sampled_from(list(Order)))
def test_every_request_runs_once_and_blocks_are_conserved(paths, capacity, budget, order):
    ids: dict[tuple, int] = {}
    requests = [tuple(ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))) for p in paths]
    s = schedule(requests, order, ScheduleConfig(capacity, budget, block_size=1))
    assert sorted(s.admissions["request"]) == list(range(len(requests)))
    assert (s.admissions["hits"] + s.admissions["recomputed"] == s.admissions["blocks"]).all()
    assert (s.admissions["hits"] <= capacity).all()
    assert s.admissions.groupby("round").size().min() >= 1


def test_a_trace_window_with_warm_up():
    trace = generate(WorkloadConfig(requests=200, seed=4))
    queue, warm = trace_queue(trace, 100, 30, 50)
    assert len(queue) == 30 and len(warm) == 50
    cold = compare(queue, ScheduleConfig(2000, 64))
    hot = compare(queue, ScheduleConfig(2000, 64), warm)
    assert (hot["hits"] >= cold["hits"]).all()
