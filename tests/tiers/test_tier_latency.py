"""Hits into time, as SGLang 0.5.23 serves them: TTFTs computed by hand from the hardware model, queueing,
host hits always loaded (recomputing them only as an option), layer-wise overlap, storage prefetched
during the wait (best effort: what has not arrived is recomputed and is no hit)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from kvviz.common import hardware as hw
from kvviz.strata.io import copy_efficiency
from kvviz.tiers import TierConfig, replay
from kvviz.tiers.latency import LOAD_CHOICES, faster_to_recompute, percentiles, queue_finish
from kvviz.traces import from_records

MODEL = hw.model("llama-3-8b")
MFU = hw.PUBLISHED_PREFILL_MFU.value
COMPUTE = hw.Compute(hw.gpu("h100"), MFU, 1)
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


def layerwise(load: float, compute: float, layers: int) -> float:
    """SGLang's per-layer load events: layer i computes once its load is done and layer i-1 is computed.
    Written as the pipeline itself, not the closed form the code uses."""
    loaded = computed = 0.0
    for _ in range(layers):
        loaded += load / layers
        computed = max(computed, loaded) + compute / layers
    return computed


@pytest.mark.parametrize("overlap", (False, True))
def test_a_dram_hit_is_loaded(overlap):
    config = TierConfig("llama-3-8b", "h100", hbm_gib=4 * BLOCK_GIB, dram_gib=1.0, overlap=overlap)
    result = replay(dram_hit_trace(), config)
    copy = BLOCK * 8 * 128 * 2  # one layer's K of one page
    link = 64e9 * 0.8
    load = 1536 * MODEL.kv_bytes_per_token / (link * copy_efficiency(copy, link, 3.6e-6))
    compute = hw.prefill_seconds(MODEL, COMPUTE, 512, 1536)
    expected = layerwise(load, compute, 32) if overlap else load + compute
    row = result.requests.iloc[2]
    assert row["dram_blocks"] == 3 and row["gpu_blocks"] == 0
    assert LOAD_CHOICES[int(row["choice"])] == "load DRAM"
    assert row["loaded_dram_tokens"] == 1536
    assert row["ttft_s"] == pytest.approx(expected, rel=1e-12)
    assert row["ttft_gpu_only_s"] == pytest.approx(hw.prefill_seconds(MODEL, COMPUTE, 2048), rel=1e-12)


def tiny_pages():
    """One-token pages of a multi-head model over an A40's PCIe 4.0: each 8 KiB copy pays the fixed
    per-copy overhead, so loading C's 48 host tokens is slower than recomputing them."""
    m = hw.model("llama-2-7b")
    ids = [list(range(64)), list(range(100, 164)), list(range(48)) + list(range(200, 216))]
    tiny = from_records([0, 100_000, 200_000], [64, 64, 64], [2, 2, 2], ids, block_size=1)
    config = TierConfig("llama-2-7b", "a40", hbm_gib=64 * m.kv_bytes_per_token / 2**30, dram_gib=1.0, overlap=False)
    link = 32e9 * 0.8
    load = 48 * m.kv_bytes_per_token / (link * copy_efficiency(32 * 128 * 2, link, 3.6e-6))
    return tiny, config, load


def test_small_pages_are_loaded_as_sglang_does_though_slower():
    tiny, config, load = tiny_pages()
    m, compute = hw.model("llama-2-7b"), hw.Compute(hw.gpu("a40"), MFU, 1)
    recompute = hw.prefill_seconds(m, compute, 64)
    assert load + hw.prefill_seconds(m, compute, 16, 48) > recompute
    row = replay(tiny, config).requests.iloc[2]
    assert LOAD_CHOICES[int(row["choice"])] == "load DRAM" and row["loaded_dram_tokens"] == 48
    assert row["ttft_s"] == pytest.approx(load + hw.prefill_seconds(m, compute, 16, 48), rel=1e-12)


def test_the_fastest_option_recomputes_small_pages_instead():
    tiny, config, _ = tiny_pages()
    m, compute = hw.model("llama-2-7b"), hw.Compute(hw.gpu("a40"), MFU, 1)
    result = replay(tiny, replace(config, load="fastest"))
    row = result.requests.iloc[2]
    assert row["dram_blocks"] == 48
    assert LOAD_CHOICES[int(row["choice"])] == "recompute"
    assert row["recomputed_hit_tokens"] == 48 and row["loaded_dram_tokens"] == 0
    assert row["ttft_s"] == pytest.approx(hw.prefill_seconds(m, compute, 64), rel=1e-12)
    assert result.found_blocks["dram"] == 48 and result.hit_blocks["dram"] == 0  # recomputed: no hit


def test_queue_on_two_servers():
    finish = queue_finish(np.array([0.0, 0.0, 0.0, 5.0]), np.array([2.0, 3.0, 1.0, 1.0]), 2)
    assert finish.tolist() == [2.0, 3.0, 3.0, 6.0]


def test_percentiles():
    assert percentiles(np.arange(101.0)) == {"p50": 50.0, "p90": 90.0, "p99": 99.0}
    assert all(math.isnan(v) for v in percentiles(np.array([])).values())


def storage_trace(gap_ms: int):
    """A fills a 4-block GPU and 4 blocks of a 7-block host; B (4 blocks) needs one more host block, which
    evicts A's host copy whole, so A is only on the SSD; C asks for A's first 3 blocks again, ``gap_ms`` after
    B, on one GPU (the 3 free host blocks take them): C's wait for the GPU is B's prefill left."""
    return trace([0, 100_000, 100_000 + gap_ms], [[0, 1, 2, 3], [10, 11, 12, 13], [0, 1, 2, 5]])


def ssd_config():
    return TierConfig("llama-3-8b", "h100", hbm_gib=4 * BLOCK_GIB, dram_gib=7 * BLOCK_GIB + 1e-9, ssd_gib=1.0)


def test_storage_hits_are_read_while_the_request_waits():
    """C arrives while B prefills: the SSD reads whole pages during C's wait (best effort), the pages read
    are loaded from host memory under the compute, the rest recomputed; C's storage hits are those pages."""
    config = ssd_config()
    result = replay(storage_trace(0), config)
    row = result.requests.iloc[2]
    found = int(row["storage_blocks"]) + int(row["dram_blocks"])
    assert row["gpu_blocks"] == 0 and found == 3
    wait = result.requests.iloc[1]["prefill_s"]
    nvme = 7e9 * 0.8
    copy = BLOCK * 8 * 128 * 2
    ssd_rate = nvme * copy_efficiency(copy, nvme, 3.6e-6)
    pages = min(int(row["storage_blocks"]), int(wait * ssd_rate // (BLOCK * MODEL.kv_bytes_per_token)))
    used = BLOCK * (int(row["dram_blocks"]) + pages)
    link = 64e9 * 0.8
    load = used * MODEL.kv_bytes_per_token / (link * copy_efficiency(copy, link, 3.6e-6))
    compute = hw.prefill_seconds(MODEL, COMPUTE, 2048 - used, used)
    assert row["loaded_storage_tokens"] == BLOCK * pages
    assert row["ttft_s"] == pytest.approx(wait + layerwise(load, compute, 32), rel=1e-9)
    assert result.hit_blocks["ssd"] == pages <= result.found_blocks["ssd"]


def test_a_request_that_does_not_wait_reads_nothing_from_storage():
    """C arrives after B is done: no wait, so best effort ends the prefetch before a page arrives and
    C's SSD hits are recomputed, and not counted as hits."""
    result = replay(storage_trace(100_000), ssd_config())
    row = result.requests.iloc[2]
    assert row["storage_blocks"] > 0 and row["loaded_storage_tokens"] == 0
    assert result.hit_blocks["ssd"] == 0 < result.found_blocks["ssd"]


def test_the_requests_that_would_recompute_faster_are_counted():
    tiny, config, _ = tiny_pages()
    assert faster_to_recompute(config, 1, replay(tiny, config).requests) == 1
    big = TierConfig("llama-3-8b", "h100", hbm_gib=4 * BLOCK_GIB, dram_gib=1.0)
    assert faster_to_recompute(big, BLOCK, replay(dram_hit_trace(), big).requests) == 0
