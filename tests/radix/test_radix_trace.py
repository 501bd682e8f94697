"""A trace's requests through the radix tree: as a script (block ids as tokens), and totals only, against
the step-through."""

from __future__ import annotations

import json

import pytest

from kvviz.cli import main
from kvviz.radix.inflight import StrataRadixCache
from kvviz.radix.replay import TOTAL_COLUMNS, ReplayConfig, replay
from kvviz.radix.script import parse_text, to_text
from kvviz.radix.trace_replay import replay_trace, script_from_trace
from kvviz.traces import from_records
from kvviz.traces.workload import WorkloadConfig, generate

CONFIGS = [
    ReplayConfig(cache="radix", device_capacity=400),
    ReplayConfig(cache="radix", device_capacity=150, eviction_policy="lfu", deferral=False),
    ReplayConfig(cache="hiradix", device_capacity=200, host_capacity=600),
    ReplayConfig(cache="hiradix", device_capacity=120, host_capacity=300, write_policy="write_back"),
]


def test_trace_replay_block_ids_as_tokens():
    trace = from_records([0, 100, 5000], [1024, 1536, 512], [1, 1, 1], [[0, 1], [0, 1, 2], [7]], block_size=512)
    s = script_from_trace(trace, 3, round_ms=1000)
    assert [len(op.requests) for op in s.ops] == [2, 1]
    assert parse_text(to_text(s)).ops[0].requests[1].tokens == (0, 1, 2)
    rep = replay(s, ReplayConfig(cache="radix", device_capacity=16))
    assert rep.requests.set_index("request").loc["R2", "in_flight"] == 2  # R1 was computing blocks 0, 1
    assert rep.steps.iloc[-1].device_hit == 0 and rep.steps.iloc[-1].redundant == 2


@pytest.fixture(scope="module")
def trace():
    return generate(WorkloadConfig(requests=120, seed=11, rate=20.0))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.cache}-{c.device_capacity}-{c.write_policy}")
def test_totals_equal_the_step_through(trace, config):
    stepped = replay(script_from_trace(trace, trace.n_requests), config)
    last = stepped.steps.iloc[-1]
    fast = replay_trace(trace, config)
    assert fast.finished and fast.totals == {c: int(last[c]) for c in TOTAL_COLUMNS}
    assert fast.totals["evicted_device"] > 0  # the pool was small enough to evict


def test_first_requests_only(trace):
    fast = replay_trace(trace, CONFIGS[0], n=30)
    assert fast.requests == fast.totals["requests"] == 30
    assert 0 < fast.hit_ratio < 1


def test_bookkeeping_matches_a_full_walk(trace):
    cache = StrataRadixCache(capacity=300)
    for i in range(60):
        tokens = tuple(int(b) for b in trace.hash_ids(i))
        cache.alloc_device(len(tokens))
        cache.insert(tokens)
        cache.release_device(len(tokens))
        if i % 7 == 0:
            cache.insert_in_flight(tokens + (10**6 + i,), f"R{i}")
        nodes = list(cache.nodes())
        assert cache.n_nodes == len(nodes)
        assert {n.id for n in cache.leaves()} == {n.id for n in nodes if not n.children}
        assert cache.n_in_flight == sum(n.in_flight for n in nodes)
    for i in range(0, 60, 7):
        cache.release_in_flight(f"R{i}")
    assert cache.n_in_flight == 0 and cache.n_nodes == len(list(cache.nodes()))


def test_cli_prints_totals(tmp_path, trace, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(trace.to_jsonl())
    assert main(["radix", "--trace", str(path), "--requests", "50", "--device", "300"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == 50 and out["finished"] and out["device_hit"] > 0
    assert out["hit_ratio"] == pytest.approx((out["device_hit"] + out["loaded_back"]) / out["prompt_tokens"], abs=1e-6)
    assert main(["radix"]) == 2
    assert "--trace" in capsys.readouterr().err
