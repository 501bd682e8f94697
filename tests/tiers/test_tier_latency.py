"""Hits into time: TTFTs computed by hand from the hardware model, queueing, and the load-or-recompute choice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvviz.common import hardware as hw
from kvviz.strata.io import copy_efficiency
from kvviz.tiers import TierConfig, replay
from kvviz.tiers.latency import LOAD_CHOICES, percentiles, pool_wins_from_gb_s, queue_finish
from kvviz.traces import from_records

MODEL = hw.model("llama-3-8b")
COMPUTE = hw.Compute(hw.gpu("h100"), hw.DEFAULT_MFU, 1)
BLOCK = 512
BLOCK_GIB = BLOCK * MODEL.kv_bytes_per_token / 2**30


def trace(arrivals_ms: list[int], hash_ids: list[list[int]]):
    return from_records(
        arrivals_ms, [len(h) * BLOCK for h in hash_ids], [2] * len(hash_ids), hash_ids, block_size=BLOCK
    )


def test_two_requests_queue_and_the_second_reuses_the_first():
    """Both arrive at once on one GPU; the second shares 3 of its 4 blocks with the first, in HBM."""
    result = replay(trace([0, 0], [[0, 1, 2, 3], [0, 1, 2, 4]]), TierConfig("llama-3-8b", "h100", hbm_gib=1.0))
    first = hw.prefill_seconds(MODEL, COMPUTE, 2048)
    second = hw.prefill_seconds(MODEL, COMPUTE, 512, 1536)
    assert result.requests["ttft_s"].tolist() == pytest.approx([first, first + second], rel=1e-12)
    assert result.requests["ttft_no_cache_s"].tolist() == pytest.approx([first, 2 * first], rel=1e-12)
    assert result.hit_blocks == {"gpu": 3, "dram": 0, "ssd": 0, "remote": 0}


def dram_hit_trace():
    """A, then B flushes A from a 4-block GPU, then C finds A's first 3 blocks in host DRAM; 100 s apart."""
    return trace([0, 100_000, 200_000], [[0, 1, 2, 3], [10, 11, 12, 13], [0, 1, 2, 5]])


@pytest.mark.parametrize("overlap", (False, True))
def test_a_dram_hit_is_loaded_when_that_beats_recomputing(overlap):
    config = TierConfig("llama-3-8b", "h100", hbm_gib=4 * BLOCK_GIB, dram_gib=1.0, overlap=overlap)
    result = replay(dram_hit_trace(), config)
    copy = BLOCK * 8 * 128 * 2  # one layer's K of one page
    link = 64e9 * 0.8
    load = 1536 * MODEL.kv_bytes_per_token / (link * copy_efficiency(copy, link, 3.6e-6))
    compute = hw.prefill_seconds(MODEL, COMPUTE, 512, 1536)
    expected = max(load + compute / 32, load / 32 + compute) if overlap else load + compute
    row = result.requests.iloc[2]
    assert row["dram_blocks"] == 3 and row["gpu_blocks"] == 0
    assert LOAD_CHOICES[int(row["choice"])] == "load DRAM"
    assert row["loaded_dram_tokens"] == 1536
    assert row["ttft_s"] == pytest.approx(expected, rel=1e-12)
    assert row["ttft_gpu_only_s"] == pytest.approx(hw.prefill_seconds(MODEL, COMPUTE, 2048), rel=1e-12)


def test_small_pages_are_recomputed_instead():
    """One-token pages of a multi-head model over an A40's PCIe 4.0: each 8 KiB copy pays the fixed
    per-copy overhead, loading is slower than recomputing, and C's host hit is recomputed (and says so)."""
    m, compute = hw.model("llama-2-7b"), hw.Compute(hw.gpu("a40"), hw.DEFAULT_MFU, 1)
    ids = [list(range(64)), list(range(100, 164)), list(range(48)) + list(range(200, 216))]
    tiny = from_records([0, 100_000, 200_000], [64, 64, 64], [2, 2, 2], ids, block_size=1)
    config = TierConfig("llama-2-7b", "a40", hbm_gib=64 * m.kv_bytes_per_token / 2**30, dram_gib=1.0)
    row = replay(tiny, config).requests.iloc[2]
    link = 32e9 * 0.8
    load = 48 * m.kv_bytes_per_token / (link * copy_efficiency(32 * 128 * 2, link, 3.6e-6))
    recompute = hw.prefill_seconds(m, compute, 64)
    assert load + hw.prefill_seconds(m, compute, 16, 48) > recompute
    assert row["dram_blocks"] == 48
    assert LOAD_CHOICES[int(row["choice"])] == "recompute"
    assert row["recomputed_hit_tokens"] == 48 and row["loaded_dram_tokens"] == 0
    assert row["ttft_s"] == pytest.approx(recompute, rel=1e-12)


def test_queue_on_two_servers():
    finish = queue_finish(np.array([0.0, 0.0, 0.0, 5.0]), np.array([2.0, 3.0, 1.0, 1.0]), 2)
    assert finish.tolist() == [2.0, 3.0, 3.0, 6.0]


def test_percentiles():
    assert percentiles(np.arange(101.0)) == {"p50": 50.0, "p90": 90.0, "p99": 99.0}
    assert all(math.isnan(v) for v in percentiles(np.array([])).values())


def test_loading_from_the_pool_wins_from_its_break_even_bandwidth():
    """One request whose first 1,536 tokens are in the pool: loading them wins once their load is
    faster than computing them, at the link rate r with 1/r = 1/(bandwidth × RDMA's 80%) + overhead/copy."""
    config = TierConfig("llama-3-8b", "h100", gpus=2, dram_gib=1.0, remote_gib=1.0)
    one = (np.array([0]), np.array([0]), np.array([3]))
    wins_from = pool_wins_from_gb_s(config, BLOCK, np.array([2048]), one)
    needed = 1536 * MODEL.kv_bytes_per_token / hw.prefill_seconds(MODEL, COMPUTE, 1536)
    link = 1 / (1 / needed - 3.6e-6 / (BLOCK * 8 * 128 * 2))  # bytes/s per replica: 2 share the link
    assert wins_from == pytest.approx(2 * link / 0.8 / 1e9, rel=0.01)
    assert pool_wins_from_gb_s(config, BLOCK, np.array([2048]), (np.array([3]), np.array([0]), np.array([0]))) is None
