"""A deployment in hardware terms: KV HBM derived from the GPUs, per-device prices, bad input named."""

from __future__ import annotations

import math

import pytest

from kvviz.common import hardware as hw
from kvviz.common.errors import InputError
from kvviz.tiers import TierConfig

GIB = 2**30


def test_kv_hbm_is_the_reserved_share_minus_the_weights():
    cfg = TierConfig("llama-3.1-70b", "h100", gpus=8, tp=8, kv_fraction=0.9)
    assert cfg.hbm_for_kv_gib == pytest.approx((8 * 80e9 * 0.9 - 70.55e9 * 2) / GIB, rel=1e-12)
    two_replicas = TierConfig("llama-3-8b", "h100", gpus=8, tp=4)
    assert two_replicas.replicas == 2 and two_replicas.servers == 2
    assert two_replicas.hbm_for_kv_gib == pytest.approx((8 * 80e9 * 0.9 - 2 * 8.03e9 * 2) / GIB, rel=1e-12)
    assert TierConfig("llama-3.1-70b", "h100", gpus=8, tp=8, hbm_gib=100.0).hbm_for_kv_gib == 100.0


def test_weights_that_do_not_fit_are_named():
    with pytest.raises(InputError, match="no HBM is left for KV.*llama-3.1-70b"):
        TierConfig("llama-3.1-70b", "a40")


def test_cost_per_hour_prices_each_device():
    cfg = TierConfig("llama-3-8b", "h100", gpus=8, tp=8, dram_gib=1000, ssd_gib=4000, instances=2)
    expected = 2 * (8 * 3.99 + 1000 * GIB / 1e9 * 0.003341 + 4000 * GIB / 1e12 * 0.0971)
    assert cfg.cost_per_hour() == pytest.approx(expected, rel=1e-12)
    remote = TierConfig("llama-3-8b", "h100", dram_gib=10, remote_gib=500, instances=3)
    assert remote.storage == "remote"
    assert remote.cost_per_hour() == pytest.approx(3 * (3.99 + 10 * GIB / 1e9 * 0.003341) + 500 * GIB / 1e9 * 0.003341)


def test_gpu_memory_is_priced_per_device():
    """An A40's HBM no longer comes out the dearest: each GPU-hour is its own device's price."""
    per_gib = {g: hw.DevicePrices.for_gpu(hw.gpu(g)).hbm_per_gib_hour(hw.gpu(g)) for g in hw.GPUS}
    assert per_gib["a40"] == pytest.approx(0.44 / (48e9 / GIB))
    assert min(per_gib, key=per_gib.get) == "a40"
    assert max(per_gib, key=per_gib.get) == "h100"
    assert all(p.source for p in hw.GPU_PRICES.values())
    assert hw.DRAM_PRICE.value * 1000 > 0.15  # DRAM is not priced as secondary storage


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tp": 3, "gpus": 4}, "tp"),
        ({"gpus": 0}, "gpus"),
        ({"kv_fraction": 1.5}, "kv_fraction"),
        ({"dram_gib": -1}, "dram_gib"),
        ({"dram_gib": math.nan}, "dram_gib"),
        ({"ssd_gib": 10, "remote_gib": 10, "dram_gib": 1}, "remote_gib"),
        ({"ssd_gib": 10}, "dram_gib"),
        ({"policy": "belady"}, "policy"),
        ({"write_policy": "sometimes"}, "write_policy"),
        ({"remote_gb_s": 0}, "remote_gb_s"),
    ],
)
def test_bad_settings_are_named(changes, field):
    with pytest.raises(InputError, match=f"field '{field}'"):
        TierConfig("llama-3-8b", "h100", **changes)


def test_bad_prices_are_named():
    with pytest.raises(InputError, match="field 'gpu_per_hour'"):
        hw.DevicePrices(-1.0)
    with pytest.raises(InputError, match="field 'dram_per_gb_hour'"):
        hw.DevicePrices(1.0, math.inf)


def test_write_policy_short_names():
    assert TierConfig(write_policy="selective").write_policy == "write_through_selective"
    assert TierConfig(write_policy="back").write_policy == "write_back"


def test_host_memory_not_larger_than_gpu_memory_is_named():
    """As SGLang 0.5.23's host pool warns when it holds no more tokens than the device pool."""
    [warning] = TierConfig("llama-3-8b", "h100", gpus=2, dram_gib=16).warnings()
    hbm = TierConfig("llama-3-8b", "h100", gpus=2).hbm_for_kv_gib
    assert warning.startswith(
        f"host DRAM (16 GiB per instance) is not larger than the GPU memory for KV ({hbm:,.4g} GiB)"
    )
    assert TierConfig("llama-3-8b", "h100", hbm_gib=16, dram_gib=16).warnings() != []
    assert TierConfig("llama-3-8b", "h100", hbm_gib=16, dram_gib=16.5).warnings() == []
    assert TierConfig("llama-3-8b", "h100").warnings() == []  # no host tier: nothing to warn about
