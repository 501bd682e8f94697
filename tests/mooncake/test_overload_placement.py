"""The overload view's cache-aware placement: Algorithm 1 places prefills, the admission policies reject."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.mooncake.overload import POLICIES, Arrivals, ClusterConfig, cost, simulate, trace_arrivals
from kvviz.traces import from_records
from tests.mooncake.test_overload import ONE_SLOT as ONE_PREFILL_ONE_SLOT

BS = 1000
ONE_SLOT = replace(ONE_PREFILL_ONE_SLOT, prefill_instances=2)  # 1 s per 1,000-token block


def _arrivals(times, ids, outputs) -> Arrivals:
    offsets = np.cumsum([0] + [len(x) for x in ids])
    blocks = np.asarray([b for x in ids for b in x], np.int64)
    lengths = np.asarray([len(x) * BS for x in ids], np.int64)
    return Arrivals(np.asarray(times, float), lengths, np.asarray(outputs, np.int64), "test", blocks, offsets, BS)


def test_kvcentric_placement_reuses_a_prefix_and_wastes_only_the_prefill_it_ran():
    # r0 (blocks 1-4) prefills 0-4 s on instance 0 and decodes 4-14 s in the only slot. r1 at 5 s
    # shares r0's four blocks: on instance 0 it computes one block (1 s); load balancing sends it to
    # the idle instance 1, which computes all five (5 s). Its decode slot is taken either way.
    arr = _arrivals([0.0, 5.0], [[1, 2, 3, 4], [1, 2, 3, 4, 5]], [100, 10])
    balance = simulate(arr, ONE_SLOT, "baseline").totals
    kvcentric = simulate(arr, replace(ONE_SLOT, placement="kvcentric"), "baseline").totals
    assert (balance["prefill_busy_s"], balance["wasted_prefill_s"]) == (9.0, 5.0)
    assert (kvcentric["prefill_busy_s"], kvcentric["wasted_prefill_s"]) == (5.0, 1.0)
    assert kvcentric["placement"] == "kvcentric" and kvcentric["rejected_after_prefill"] == 1
    early = simulate(arr, replace(ONE_SLOT, placement="kvcentric"), "early").totals
    assert (early["rejected_early"], early["wasted_prefill_s"]) == (1, 0.0)


def test_kvcentric_placement_without_block_ids_is_refused_with_a_message():
    arr = Arrivals(np.array([0.0]), np.array([10]), np.array([1]))
    with pytest.raises(InputError, match="KVCache-centric placement needs block ids"):
        simulate(arr, replace(ONE_SLOT, placement="kvcentric"), "early")
    with pytest.raises(InputError, match="unknown placement"):
        replace(ONE_SLOT, placement="nearest").validate()


def test_a_traces_block_ids_reach_the_arrivals_and_the_cost():
    trace = from_records([0, 1000], [2 * BS, 3 * BS], [1, 1], [[7, 8], [7, 8, 9]], block_size=BS)
    arr = trace_arrivals(trace, 1.0)
    assert (arr.blocks.tolist(), arr.offsets.tolist(), arr.block_size, arr.n_blocks) == (
        [7, 8, 7, 8, 9],
        [0, 2, 5],
        BS,
        5,
    )
    config = replace(ONE_SLOT, placement="kvcentric")
    assert cost(2, 1.0, config, blocks=5).seconds > cost(2, 1.0, ONE_SLOT, blocks=5).seconds


def test_the_tbt_slo_caps_the_batch_whatever_the_limit():
    # TBT(b) = 20 ms + 5 ms b reaches the 100 ms SLO at b = 16: a limit of 64 decodes 16 at once.
    assert ClusterConfig().tbt_batch() == 16
    assert ClusterConfig(batch_limit=64).max_batch() == 16
    assert ClusterConfig(batch_limit=64, tbt_slo_s=0.2).max_batch() == 36
    assert ClusterConfig(batch_limit=8).max_batch() == 8


_docs = st.lists(st.tuples(st.floats(0, 30), st.integers(0, 3), st.integers(1, 4), st.integers(1, 50)), max_size=30)


@settings(max_examples=25)
@given(_docs, st.sampled_from(POLICIES), st.integers(1, 3))
def test_with_either_placement_every_request_is_accounted_for_and_meets_its_ttft(reqs, policy, p):
    reqs.sort()
    ids = [[100 * doc + k for k in range(n)] + [10_000 + i] for i, (_, doc, n, _) in enumerate(reqs)]
    arr = _arrivals([r[0] for r in reqs], ids, [r[3] for r in reqs])
    for placement in ("balance", "kvcentric"):
        config = replace(ONE_SLOT, prefill_instances=p, batch_limit=3, ttft_slo_s=6.0, placement=placement)
        t = simulate(arr, config, policy).totals
        assert t["arrived"] == len(reqs) == t["completed"] + t["rejected"]
        assert t["mean_ttft_s"] <= config.ttft_slo_s + 1e-9
        assert t["wasted_prefill_s"] <= t["prefill_busy_s"] + 1e-9


def test_cli_overload_places_by_kvcentric_on_a_trace_and_refuses_it_on_poisson(capsys):
    argv = ["overload", "--trace", "assets/example_trace.jsonl", "--policy", "early", "--placement", "kvcentric"]
    assert main(argv) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["placement"] == "kvcentric" and result["arrived"] == 2000
    assert main(["overload", "--duration", "60", "--placement", "kvcentric"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == "kvviz overload: --placement kvcentric needs --trace with block ids (hash_ids): Poisson arrivals have none"
    )
