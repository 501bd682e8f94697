"""vLLM + LMCache: the GPU pool alone is vLLM's hit curve, unbounded LMCache reaches the trace's ceiling, and
LMCache's lookup, chunking and LRU follow its source (LMCache 0.5.6, ``lmcache/v1/``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvviz import vllm
from kvviz.common.errors import InputError
from kvviz.lmcache import ChunkStore, LMCacheConfig, chunks_of_gib, replay
from kvviz.lmcache.store import ChunkKeys
from kvviz.prefix_cache import prepare, request_hits
from kvviz.traces import load_trace

CONVERSATION = Path(__file__).parents[1] / "cluster" / "data" / "conversation_trace.jsonl.zst"


@pytest.fixture(scope="module")
def conversation():
    return prepare(load_trace(CONVERSATION))


def test_the_gpu_pool_alone_is_vllms_hit_curve(conversation):
    run = replay(conversation, 4096)
    assert int(run.gpu_blocks.sum()) == int(vllm.sweep(conversation, [4096])["hits"].iloc[0])
    assert run.backend_tokens == {} and run.table()["tier"].tolist() == ["GPU (vLLM)"]


@pytest.mark.parametrize("chunk_size", [512, 256, 128])
def test_unbounded_lmcache_reaches_the_traces_ceiling(conversation, chunk_size):
    """Every prompt's chunks are stored, so each request finds every prefix seen before (partial chunks saved)."""
    config = LMCacheConfig(chunk_size=chunk_size, save_unfull_chunk=True, cpu_chunks=math.inf)
    run = replay(conversation, 1, config)
    ceiling = np.minimum(request_hits(conversation, "lru", math.inf) * 512, conversation.input_lengths)
    assert np.array_equal(run.gpu_tokens + run.backend_tokens["cpu"], ceiling)


def test_without_unfull_chunks_a_prompt_keeps_only_its_full_chunks():
    keys = ChunkKeys(np.array([0, 1]), np.array([0, 2]), np.array([600]), 512, LMCacheConfig())
    assert keys.ends(0) == [256, 512]
    unfull = ChunkKeys(np.array([0, 1]), np.array([0, 2]), np.array([600]), 512, LMCacheConfig(save_unfull_chunk=True))
    assert unfull.ends(0) == [256, 512, 600]
    assert unfull.keys(0, unfull.ends(0)) == [0, 1, 2]  # (block 0, 256), (block 0, 512), (block 1, 88)


def reference_lookup(held: list[set], keys: list[int]) -> list[int]:
    """StorageManager.batched_contains: each backend in order takes the run of leading keys it holds
    from where the last one stopped; a backend with none is passed over."""
    out, rest = [], list(keys)
    for backend in held:
        n = 0
        while n < len(rest) and rest[n] in backend:
            n += 1
        out.append(n)
        rest = rest[n:]
    return out


@given(st.lists(st.sets(st.integers(0, 5)), min_size=3, max_size=3), st.lists(st.integers(0, 5), max_size=6))
def test_lookup_walks_the_backends_in_order(held, keys):
    store = ChunkStore(LMCacheConfig(cpu_chunks=math.inf, disk_chunks=math.inf, remote_chunks=math.inf))
    for backend, contents in zip(store.backends, held):
        backend.put(sorted(contents))
    assert store.lookup(keys) == reference_lookup(held, keys)


def test_hit_chunks_are_touched_head_last_and_the_least_recent_goes_first():
    store = ChunkStore(LMCacheConfig(cpu_chunks=3))
    store.store([1, 2, 3])
    assert store.lookup([1, 2]) == [2]
    store.store([4])
    assert list(store.backends[0].keys) == [2, 1, 4]  # 3 went; 1 and 2 touched, the head last


def test_sizes_are_checked():
    assert chunks_of_gib(1, 256, 131072) == 32 and chunks_of_gib(math.inf, 256, 1) == math.inf
    with pytest.raises(InputError, match="cpu size must be ≥ 0 chunks"):
        replay(prepare(load_trace(CONVERSATION).head(3)), 1, LMCacheConfig(cpu_chunks=-1))
