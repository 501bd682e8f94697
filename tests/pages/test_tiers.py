"""AppTest: the Tiers page answers with the same numbers as the tiered replay and the plan, every
control is in its URL, and a bad deployment is one message naming what is wrong."""

from __future__ import annotations

import pytest

from kvviz.common import hardware as hw
from kvviz.tiers.config import TierConfig
from kvviz.tiers.plan import plan
from kvviz.tiers.replay import replay
from kvviz.tiers.search import Targets, search
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import LENGTHS_ONLY, assert_clean, open_page, open_with_session_trace, shown
from ui.tiers.plan import gib

pytestmark = pytest.mark.shared_caches

SMALL = {"tiers_source": "Synthetic", "tiers_requests": "300"}
DEFAULTS = dict(model="llama-3-8b", gpu="h100", dram_gib=256.0, ssd_gib=2048.0)  # the sidebar's


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the tiered replay's kernels here, once, not inside a page run's time limit."""
    replay(generate(WorkloadConfig(requests=100)), TierConfig(**DEFAULTS))


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _frame(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_page_shows_the_replay_and_the_plan_of_its_trace():
    at = open_page("tiers", SMALL, timeout=300)
    assert_clean(at)
    trace = generate(WorkloadConfig(requests=300))
    result = replay(trace, TierConfig(**DEFAULTS))
    s = result.summary()
    metrics = _metrics(at)
    assert metrics["Hit ratio"] == f"{s['hit_ratio']:.1%}"
    assert metrics["Hits from host DRAM"] == f"{s['hit_blocks']['dram'] / s['accesses']:.1%}"
    assert metrics["TTFT p90"] == f"{s['ttft_s']['p90']:.3g} s"
    assert metrics["Cost"] == f"${s['cost_per_hour']:,.2f}/h"
    assert metrics["Per million input tokens"] == f"${s['cost_per_million_input_tokens']:,.3f}"
    ttft = _frame(at, "p99")
    assert ttft.loc["no cache", "p50"] == s["ttft_no_cache_s"]["p50"]
    assert ttft.loc["GPU memory only", "p99"] == s["ttft_gpu_only_s"]["p99"]
    expected = plan(trace, TierConfig(**DEFAULTS), 2.0, workers=1)
    glance, cheapest, success = at.success
    assert glance.value.startswith("Behind a router, each instance keeping its own GPU memory, the cheapest")
    found = search(trace, TierConfig(**DEFAULTS), Targets(2.0))
    best = found.best
    assert cheapest.value.startswith("**Cheapest deployment that keeps TTFT p90 within 2 s: ")
    assert f"{best['instances']:,} instance(s), each with 1 GPU(s)" in cheapest.value
    assert f"${best['cost_per_hour']:,.2f} per hour for the whole cluster" in cheapest.value
    assert f"${expected.best['cost_per_hour']:,.2f} per hour" in success.value
    reach = _frame(at, "needs").set_index(["tier", "share"])
    gpu90 = next(r for r in expected.reaches if r.tier == "gpu" and r.share == 0.9)
    assert reach.loc[("GPU memory", 90)].tolist() == [f"{gib(gpu90.gib)} GiB", f"${gpu90.cost_per_hour:,.2f}"]
    tokens = _frame(at, "tokens").set_index("source")["tokens"]
    assert tokens.drop("of which cached lower").sum() == result.input_tokens
    assert tokens["of which cached lower"] == s["tokens"]["recomputed_hits"]
    notes = " ".join(m.value for m in at.markdown)
    assert f"TTFT p90 is {s['ttft_s']['p90']:.3g} s with these tiers" in notes


def test_every_control_is_in_the_url_and_prices_are_per_device():
    query = {**SMALL, "tiers_gpu": "a40", "tiers_gpus": "2", "tiers_tp": "2", "tiers_price_0": "1.5"}
    at = open_page("tiers", {**query, "tiers_slo": "0.5"}, timeout=300)
    assert_clean(at)
    config = TierConfig(**{**DEFAULTS, "gpu": "a40"}, gpus=2, tp=2, prices=hw.DevicePrices(1.5))
    assert f"{config.hbm_for_kv_gib:,.1f} GiB per instance" in " ".join(c.value for c in at.caption)
    assert _metrics(at)["Cost"] == f"${config.cost_per_hour():,.2f}/h"
    said = [w.value for w in at.warning]
    assert said[0].startswith("None of these routers and instance counts keeps TTFT p90 within 0.5 s")  # at the top
    assert said[1].startswith("Overloaded: the trace asks for") and "at least 2 instances of 2 GPU(s)" in said[1]
    assert any("no DRAM and SSD mix tried keeps TTFT p90 within 0.5 s" in w for w in said[2:])
    at.number_input(key="tiers_price_1").set_value(0.01).run()
    assert at.query_params["tiers_price_1"] == "0.01" and at.query_params["tiers_gpu"] == "A40"
    dearer = TierConfig(**{**DEFAULTS, "gpu": "a40"}, gpus=2, tp=2, prices=hw.DevicePrices(1.5, 0.01))
    assert _metrics(at)["Cost"] == f"${dearer.cost_per_hour():,.2f}/h"


def test_a_deployment_that_cannot_run_is_one_message_naming_the_setting():
    at = open_page("tiers", {**SMALL, "tiers_gpus": "3", "tiers_tp": "2"}, timeout=300)
    assert_clean(at)
    [error] = at.error
    assert shown(error.value) == "“Tensor parallel” (2) must divide the GPUs per instance (3)"
    at = open_page("tiers", {**SMALL, "tiers_model": "llama-3.1-70b", "tiers_gpu": "a40"}, timeout=300)
    assert_clean(at)
    assert "no HBM is left for KV" in at.error[0].value and "“HBM reserved for weights and KV”" in at.error[0].value


def test_a_trace_without_block_ids_is_refused_with_the_reason():
    at = open_with_session_trace("tiers", LENGTHS_ONLY, timeout=300)
    assert_clean(at)
    assert "no block ids" in at.error[0].value and not at.metric


def test_free_devices_cost_nothing_and_the_page_says_so():
    """Every price at zero (hardware already paid for) is a setup like any other, not a crash."""
    prices = {f"tiers_price_{i}": "0.0" for i in range(4)}
    at = open_page("tiers", {**SMALL, **prices, "tiers_storage": "Remote pool"}, timeout=300)
    assert_clean(at)
    assert _metrics(at)["Cost"] == "$0.00/h"
    notes = " ".join(m.value for m in at.markdown)
    assert "Every price is set to zero, so this setup costs nothing per hour as priced here." in notes


def test_host_memory_not_larger_than_gpu_memory_is_named_beside_its_control():
    at = open_page("tiers", {**SMALL, "tiers_dram": "32"}, timeout=300)
    assert_clean(at)
    [beside] = at.sidebar.warning
    hbm = TierConfig(**DEFAULTS).hbm_for_kv_gib
    assert beside.value.startswith(
        f"Host DRAM (32 GiB per instance) is not larger than the GPU memory for KV ({hbm:,.4g}"
    )
    assert not any("not larger than the GPU memory" in w.value for w in at.main.warning)
