"""One cost model: every module that shows a KV size or a prefill time for the same model and GPU
gives the number kvviz.common.hardware gives (each through its own functions)."""

from __future__ import annotations

import pytest

from kvviz.cacheblend import blend
from kvviz.cachegen import streaming
from kvviz.common import hardware as hw
from kvviz.ledger import ledger, tiers
from kvviz.mooncake import conductor, overload
from kvviz.strata import io as strata_io

L70, L8, MISTRAL = hw.model("llama-3.1-70b"), hw.model("llama-3-8b"), hw.model("mistral-7b")


def test_kv_bytes_per_token_have_one_home():
    assert ledger.kv_bytes(L70, 1) == L70.kv_bytes_per_token == 327_680
    assert conductor.ConductorConfig().kv_bytes_per_token == L70.kv_bytes_per_token
    seventy = blend.SERVING_MODELS["70B GQA"]
    assert seventy.kv_bytes_per_token_layer() * seventy.n_layers == L70.kv_bytes_per_token
    seven = blend.SERVING_MODELS["7B MHA"]
    assert seven.kv_bytes_per_token_layer() * seven.n_layers == hw.model("llama-2-7b").kv_bytes_per_token
    assert streaming.kv_values_per_token(MISTRAL) * MISTRAL.bytes_per_value == MISTRAL.kv_bytes_per_token
    copies, size = strata_io.transfer_plan(L8, 1024, 32, "page-first DMA")
    assert copies * size == 1024 * L8.kv_bytes_per_token


@pytest.mark.parametrize("tokens,cached", [(8_000, 0), (20_000, 0), (3_000, 5_000)])
def test_the_cluster_prefill_time_is_the_paper_gpus(tokens, cached):
    expect = hw.prefill_seconds(conductor.CLUSTER_MODEL, conductor.CLUSTER_COMPUTE, tokens, cached)
    f = conductor.PrefillModel()
    assert f.time(tokens + cached, cached) - f.overhead_s == pytest.approx(expect, rel=1e-12)
    assert overload.ClusterConfig().prefill == f
    mine = conductor.PrefillModel.for_hardware(L8, hw.Compute(hw.gpu("h100")), overhead_s=0.0)
    assert mine.time(tokens + cached, cached) == pytest.approx(
        hw.prefill_seconds(L8, hw.Compute(hw.gpu("h100")), tokens, cached), rel=1e-12
    )


def test_every_module_recomputes_8k_tokens_of_llama_3_8b_on_an_h100_alike():
    h100 = hw.Compute(hw.gpu("h100"))
    expect = hw.prefill_seconds(L8, h100, 8000)
    lr = ledger.load_or_recompute(L8, h100, 8000, {"nvme": hw.link("nvme")})
    assert lr["recompute ms"].iloc[0] / 1e3 == pytest.approx(expect, rel=1e-12)
    assert ledger.ttft_seconds(L8, h100, 8000, 0, None) == pytest.approx(expect, rel=1e-12)
    curve = strata_io.loading_curve(L8, h100, 8000, [0.0], {})
    assert curve["compute ms"].iloc[0] / 1e3 == pytest.approx(expect, rel=1e-12)
    served = blend.ServingModel("test", L8, h100)
    assert served.prefill_layer_seconds(8000) * served.n_layers == pytest.approx(expect, rel=1e-12)
    assert conductor.PrefillModel.for_hardware(L8, h100, 0.0).time(8000) == pytest.approx(expect, rel=1e-12)
    load = tiers.ChatLoad(users=1, turns=1, first_tokens=0, user_tokens=8000, jitter=0.0)
    run = tiers.simulate(L8, h100, load, tiers.TierSetup("gpu"))
    assert run["compute s"].iloc[0] == pytest.approx(expect, rel=1e-12)


def test_cachegen_recomputes_mistral_on_an_a40_with_the_same_model():
    a40 = hw.Compute(hw.gpu("a40"))
    assert streaming.prefill_seconds(1500, 3000, "mistral-7b", "a40") == pytest.approx(
        hw.prefill_seconds(MISTRAL, a40, 1500, 3000), rel=1e-12
    )
    assert blend.SERVING_MODELS["7B MHA"].compute.gpu == hw.gpu("a40")
