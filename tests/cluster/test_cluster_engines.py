"""vLLM + LMCache behind the routers: round-robin is exactly N independent vLLM + LMCache replays of its
sub-traces, one GPU-only instance is vLLM's hit curve, the remote backend is one pool every instance reads
and writes, and what applies only to the other engine is refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import vllm
from kvviz.cli import main
from kvviz.cluster import ROUTERS, ClusterConfig, compare, parse_engine, run
from kvviz.common.errors import InputError
from kvviz.lmcache import LMCacheConfig, replay
from kvviz.prefix_cache import prepare, request_hits
from kvviz.traces import Trace, load_trace
from tests.cluster.test_cluster import CONVERSATION, sub_trace, trace_of

EXAMPLE = "assets/example_trace.jsonl"
VLLM = "vllm-lmcache"
DEPLOYMENT = ["--model", "llama-3-8b", "--gpu", "h100", "--hbm", "1GiB"]
ROUTED = ["--instances", "2", "--router", "round-robin", "--engine"]


def independent(trace: Trace, instances: int, blocks: int, config: LMCacheConfig) -> tuple[int, dict[str, int]]:
    """Round-robin's sub-traces, each through its own vLLM pool and LMCache: GPU hit blocks, tokens per backend."""
    rows = np.arange(trace.n_requests)
    hits, tokens = 0, {}
    for k in range(instances):
        part = rows[rows % instances == k]
        if not len(part):
            continue
        alone = replay(sub_trace(trace, part), blocks, config)
        hits += int(alone.gpu_blocks.sum())
        for name, v in alone.backend_tokens.items():
            tokens[name] = tokens.get(name, 0) + int(v.sum())
    return hits, tokens


def loaded(result, config: LMCacheConfig) -> dict[str, int]:
    """The run's tokens per backend that is on (columns: CPU, disk, remote)."""
    on = config.capacities()
    return {name: int(result.loaded[:, k].sum()) for k, name in enumerate(("cpu", "disk", "remote")) if name in on}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5), st.integers(0, 15)), min_size=1, max_size=40),
    st.integers(1, 4),
    st.integers(1, 12),
    st.integers(0, 6),
    st.integers(0, 6),
    st.sampled_from([8, 16, 24]),
)
def test_round_robin_equals_independent_vllm_lmcache_replays(shape, instances, blocks, cpu, disk, chunk):
    """Per-instance CPU and disk backends of any size and chunk, prompts from a few shared stems."""
    reqs, fresh = [], 100
    for k, (stem, extra, cut) in enumerate(shape):
        ids = [stem * 10 + j for j in range(2)] + list(range(fresh, fresh + extra))
        fresh += extra if k % 3 else 0
        reqs.append((k * 10, 16 * len(ids) - cut, 2, ids))
    trace = trace_of(reqs)
    config = LMCacheConfig(chunk_size=chunk, cpu_chunks=cpu, disk_chunks=disk, save_unfull_chunk=bool(cut % 2))
    result = run(trace, "round-robin", ClusterConfig(instances, blocks, engine=VLLM, lmcache=config))
    hits, tokens = independent(trace, instances, blocks, config)
    assert (int(result.hits.sum()), loaded(result, config)) == (hits, tokens)


@pytest.fixture(scope="module")
def conversation() -> Trace:
    return load_trace(CONVERSATION)


def test_on_the_conversation_trace_round_robin_is_four_independent_vllm_pools_and_cache_aware_hits_more(conversation):
    config = ClusterConfig(instances=4, blocks=4096, engine=VLLM)
    robin = run(conversation, "round-robin", config)
    rows = np.arange(conversation.n_requests)
    alone = [vllm.request_hits(prepare(sub_trace(conversation, rows[rows % 4 == k])), 4096).sum() for k in range(4)]
    assert int(robin.hits.sum()) == int(sum(alone)) == 32_266
    aware = run(conversation, "cache-aware", config)
    shared = int(vllm.request_hits(prepare(conversation), 16_384).sum())
    assert robin.hits.sum() < aware.hits.sum() < shared == 76_632


def test_one_gpu_only_instance_is_vllms_hit_curve(conversation):
    head = prepare(conversation.head(3000))
    result = run(head, "round-robin", ClusterConfig(instances=1, blocks=512, engine=VLLM))
    assert np.array_equal(result.hits, vllm.request_hits(head, 512))
    assert result.loaded.sum() == 0


def test_the_reference_is_one_vllm_pool_of_all_the_blocks():
    trace = trace_of([(0, 32, 2, [1, 2]), (10, 32, 2, [1, 2]), (20, 32, 2, [3, 4]), (30, 32, 2, [3, 4])])
    table = compare(trace, ["round-robin"], ClusterConfig(instances=2, blocks=2, engine=VLLM))
    assert table["hits"].tolist() == [0, 4]


def test_one_instances_prefill_is_anothers_load_from_the_shared_remote_backend():
    """Chunks of 16 tokens on blocks of 16: the second request, on the other instance, loads the first's
    three chunks from the remote backend (48 tokens) and computes the fourth block."""
    trace = trace_of([(0, 48, 2, [1, 2, 3]), (1000, 64, 2, [1, 2, 3, 4])])
    alone = run(trace, "round-robin", ClusterConfig(instances=2, engine=VLLM))
    config = ClusterConfig(instances=2, engine=VLLM, lmcache=LMCacheConfig(chunk_size=16, remote_chunks=8))
    shared = run(trace, "round-robin", config)
    assert shared.hits.tolist() == [0, 0] and shared.loaded[:, 2].tolist() == [0, 48]
    assert shared.ttft_s[1] < alone.ttft_s[1]


@pytest.mark.parametrize("router", ROUTERS)
def test_an_unbounded_remote_backend_tops_every_router_up_to_the_traces_ceiling(router, conversation):
    """What a request does not find on its instance's GPU (or fetch) it loads, token for token (partial
    chunks saved)."""
    trace = prepare(conversation.head(400))
    lm = LMCacheConfig(chunk_size=256, save_unfull_chunk=True, remote_chunks=math.inf)
    result = run(trace, router, ClusterConfig(instances=3, blocks=64, engine=VLLM, lmcache=lm))
    lengths = trace.input_lengths
    ceiling = np.minimum(request_hits(trace, "lru", math.inf) * 512, lengths)
    have = np.minimum((result.hits + result.fetched) * 512, lengths)
    assert np.array_equal(have + result.loaded[:, 2], ceiling)


def test_options_of_the_other_engine_are_refused():
    assert parse_engine(" vLLM-LMCache ") == VLLM
    with pytest.raises(InputError, match="unknown engine 'vllm'; choose from sglang, vllm-lmcache"):
        ClusterConfig(engine="vllm").validate()
    with pytest.raises(InputError, match="no eviction policy"):
        ClusterConfig(engine=VLLM, policy="lfu").validate()
    with pytest.raises(InputError, match="remote backend, given in chunks"):
        ClusterConfig(engine=VLLM, pool_blocks=8).validate()
    with pytest.raises(InputError, match="LMCache's backends apply to the vllm-lmcache engine"):
        ClusterConfig(lmcache=LMCacheConfig(cpu_chunks=8)).validate()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["cluster", EXAMPLE, "--cpu-chunks", "8"], "--cpu-chunks applies to --engine vllm-lmcache"),
        (["cluster", EXAMPLE, "--engine", VLLM, "--policy", "lru"], "--policy applies to --engine sglang"),
        (["cluster", EXAMPLE, "--engine", VLLM, "--pool-blocks", "8"], "shared pool is --remote-chunks"),
        (["tiers", EXAMPLE, *DEPLOYMENT, "--engine", VLLM], "--engine applies with --router"),
        (["tiers", EXAMPLE, *DEPLOYMENT, *ROUTED, VLLM, "--policy", "lfu"], "no eviction policy to choose"),
    ],
)
def test_the_commands_refuse_in_one_line(capsys, argv, said):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0]


def test_the_cluster_command_serves_vllm_lmcache(capsys):
    import io

    import pandas as pd

    argv = ["cluster", EXAMPLE, "--instances", "2", "--blocks", "200", "--router", "round-robin"]
    assert main([*argv, "--engine", VLLM, "--cpu-chunks", "400", "--remote-chunks", "inf"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table["lmcache_remote_tokens"].iloc[0] > 0 and table["lmcache_disk_tokens"].iloc[0] == 0


def test_tiers_behind_a_router_runs_vllm_pools(capsys):
    """The deployment's GPU memory per instance as a vLLM pool: round-robin's hits are the cluster's."""
    assert main(["tiers", EXAMPLE, *DEPLOYMENT, *ROUTED, VLLM, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    config = ClusterConfig(instances=2, blocks=out["gpu_blocks_per_instance"], engine=VLLM)
    assert out["engine"] == VLLM
    assert out["hit_blocks"] == int(run(load_trace(EXAMPLE), "round-robin", config).hits.sum())


def test_lmcaches_python_lookups_are_counted_slower_in_the_work_budget():
    from kvviz.cluster import cost

    replay = prepare(trace_of([(0, 32, 1, [1, 2])]))
    with_backends = ClusterConfig(engine=VLLM, lmcache=LMCacheConfig(cpu_chunks=8))
    gpu_only = ClusterConfig(engine=VLLM)
    assert cost(replay, 1, with_backends).seconds > cost(replay, 1, gpu_only).seconds == cost(replay, 1).seconds
