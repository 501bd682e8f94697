"""AppTest: no dead controls on the Tiers page, every control in the URL.

On a small synthetic trace at the page's default sizes every control is changed in turn (and put
back) and what the viewer sees must change (helpers in ``tests/pages/page_controls.py``); a price
whose device the deployment lacks is disabled, saying why. Where a control cannot change the
result the page says so, and what it says is checked against the page: with GPU memory holding
the whole trace the eviction policy changes nothing, and the page counts the storage hits that were
read in time and the ones recomputed; where every load beats recomputing, it says that recomputing
hits when faster (not what SGLang does) changes nothing, and it does not.
The trace's own controls are the Trace page's (test_controls_trace); here only its source is moved.
"""

from __future__ import annotations

import re

import pytest

from kvviz.tiers.config import TierConfig
from kvviz.tiers.replay import replay
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_each_changes_the_view, assert_every_control_counts, shown

pytestmark = pytest.mark.shared_caches

SMALL = {"tiers_source": "Synthetic", "tiers_requests": "300", "tiers_gpus": "2"}  # two, so tensor parallel can move
TRACE = ("tiers_requests", "tiers_seed", "tiers_qa", "tiers_chat", "tiers_oneshot", "tiers_docs", "tiers_zipf")
REMOTE_PRICE, SSD_PRICE = "tiers_price_3", "tiers_price_2"
ROUTING = ("tiers_routers", "tiers_router_counts")  # off at two replicas per instance; test_tiers_routers moves them
COMMON = {
    "tiers_model",
    "tiers_gpu",
    "tiers_gpus",
    "tiers_tp",
    "tiers_kv_fraction",
    "tiers_dram",
    "tiers_storage",
    "tiers_policy",
    "tiers_write",
    "tiers_instances",
    "tiers_overlap",
    "tiers_mfu",
    "tiers_slo",
    "tiers_pricing",
    *(f"tiers_price_{i}" for i in range(3)),
}
# another model that fits beside its KV on two GPUs (the last, DeepSeek-R1, does not); tensor parallel over
# both GPUs (each size must divide them); the write policy by the words shown
VALUES = {"tiers_model": 3, "tiers_tp": 1, "tiers_write": "write back"}
# Llama-2-7B's KV (no grouped-query attention) is 4× Llama-3-8B's per token: the two replicas of two
# GPUs share the instance's 50 GB/s to the pool, and loading loses to recomputing
SHARED_POOL = {**SMALL, "tiers_model": "llama-2-7b", "tiers_storage": "Remote pool"}


def reaches(at):
    """The table of the capacities that reach 80, 90 and 95% of the ceiling."""
    return next(d.value for d in at.dataframe if "needs" in d.value.columns)


def replayed(at) -> tuple:
    """What the replay at the sizes chosen answered: its figure, its two tables and the metrics (not
    the words about them, nor the other sizes tried under "What to buy")."""
    figures, frames, _, _, _, metrics, _ = shown(at)
    return figures[0], frames[:2], metrics


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the tiered replay's kernels here, once, not inside a page run's time limit."""
    replay(generate(WorkloadConfig(requests=100)), TierConfig())


def test_every_control_changes_what_is_shown():
    at = open_page("tiers", SMALL, timeout=300)
    changed = assert_every_control_counts(
        at, "tiers", {REMOTE_PRICE, *ROUTING}, values=VALUES, skip=(*TRACE, "tiers_rate", "tiers_load")
    )
    assert set(changed) == COMMON | {"tiers_ssd", "tiers_source"}
    assert_each_changes_the_view(
        at,
        [
            ("segmented_control", "tiers_storage", "Remote pool"),
            ("number_input", "tiers_remote", 64),
            ("number_input", "tiers_remote_gb_s", 10.0),
            ("number_input", REMOTE_PRICE, 1.0),
        ],
    )
    assert at.number_input(key=SSD_PRICE).disabled


def test_the_policy_changes_nothing_when_gpu_memory_holds_the_trace_and_the_page_says_so():
    at = open_page("tiers", {**SMALL, "tiers_gpus": "8"}, timeout=300)
    said = " ".join(c.value for c in at.caption)
    assert "GPU memory holds all 3,368 blocks this trace uses, so nothing is evicted at these sizes" in said
    before = replayed(at)
    sizes = reaches(at)  # the capacities that reach 80, 90 and 95% of the ceiling
    at.selectbox(key="tiers_policy").select("LFU").run()
    assert_clean(at)
    assert replayed(at) == before
    assert not reaches(at).equals(sizes)  # smaller than the GPU's: there the policy decides


def test_storage_hits_read_in_time_are_counted_and_recomputing_when_faster_is_an_option():
    at = open_page("tiers", SHARED_POOL, timeout=300)
    said = " ".join(c.value for c in at.caption)
    counted = re.search(r"([\d,]+) of the ([\d,]+) blocks found in the remote pool were read", said)
    assert counted is not None and int(counted.group(1).replace(",", "")) <= int(counted.group(2).replace(",", ""))
    assert "so “Recompute hits when faster” changes nothing here" in said
    before = replayed(at)
    at.toggle(key="tiers_load").set_value(True).run()
    assert_clean(at)
    assert replayed(at) == before


def test_bought_hardware_is_priced_as_bought_and_a_gpu_without_a_source_asks_for_its_price():
    at = open_page("tiers", {**SMALL, "tiers_pricing": "Buy"}, timeout=300)
    assert_clean(at)
    assert at.number_input(key="tiers_buy_3").disabled is False and not at.number_input(key="tiers_buy_2").disabled
    said = " ".join(m.value for m in at.markdown)
    assert "Prices are bought: purchase prices over 5 years" in said
    cost = next(m for m in at.metric if m.label == "Cost")
    rented = open_page("tiers", SMALL, timeout=300)
    assert cost.value != next(m for m in rented.metric if m.label == "Cost").value
    at = open_page("tiers", {**SMALL, "tiers_pricing": "Buy", "tiers_gpu": "a40"}, timeout=300)
    assert [e.value.replace("\\", "") for e in at.error] == [  # the message as shown, markdown escapes aside
        "No published purchase price is stored for A40 servers: give “GPU, bought ($ per GPU)” under Prices (per "
        "GPU, its share of the server), or rent it."
    ]


def test_policies_are_offered_in_words_and_a_link_with_their_codes_opens_the_same_view():
    worded = open_page("tiers", {**SMALL, "tiers_policy": "LFU", "tiers_write": "write back"}, timeout=300)
    coded = open_page("tiers", {**SMALL, "tiers_policy": "lfu", "tiers_write": "write_back"}, timeout=300)
    assert_clean(coded)
    assert coded.selectbox(key="tiers_policy").options == ["LRU", "LFU", "FIFO", "MRU", "FILO", "SLRU"]
    write = coded.segmented_control(key="tiers_write")
    assert write.options == ["write through", "selective write through", "write back"]
    assert (coded.selectbox(key="tiers_policy").value, write.value) == ("LFU", "write back")
    assert (coded.query_params["tiers_policy"], coded.query_params["tiers_write"]) == ("LFU", "write back")
    assert shown(coded) == shown(worded)


def test_models_and_gpus_are_offered_by_their_names_and_a_link_with_their_ids_opens_the_same_view():
    named = open_page("tiers", {**SMALL, "tiers_model": "Llama 2 7B", "tiers_gpu": "A40"}, timeout=300)
    by_id = open_page("tiers", {**SMALL, "tiers_model": "llama-2-7b", "tiers_gpu": "a40"}, timeout=300)
    assert_clean(by_id)
    assert by_id.selectbox(key="tiers_model").options[:2] == ["Llama 3 8B", "Llama 3.1 70B"]
    assert (by_id.selectbox(key="tiers_model").value, by_id.selectbox(key="tiers_gpu").value) == ("Llama 2 7B", "A40")
    assert (by_id.query_params["tiers_model"], by_id.query_params["tiers_gpu"]) == ("Llama 2 7B", "A40")
    assert shown(by_id) == shown(named)
    assert "2 × A40" in " ".join(c.value for c in by_id.caption)


def test_a_changed_price_prices_again_and_replays_nothing(monkeypatch):
    """The replay and the routers' runs are cached without the prices: a new GPU price changes the costs
    shown (the page's and every router's) and nothing else, and serves no request again."""
    import ui.tiers.cached
    import ui.tiers.routers

    at = open_page("tiers", {"tiers_source": "Synthetic", "tiers_requests": "100"}, timeout=300)
    assert_clean(at)
    served = []
    for module, name in ((ui.tiers.cached, "replay"), (ui.tiers.routers, "run"), (ui.tiers.routers, "reference_row")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, **k: served.append(real) or real(*a, **k))
    metrics = {m.label: m.value for m in at.metric}
    routers = next(d.value for d in at.dataframe if "dollars_per_hour" in d.value.columns)
    at.number_input(key="tiers_price_0").set_value(9.0).run()
    assert_clean(at)
    assert served == []
    now = {m.label: m.value for m in at.metric}
    assert now["Cost"] != metrics["Cost"] and now["Hit ratio"] == metrics["Hit ratio"]
    priced = next(d.value for d in at.dataframe if "dollars_per_hour" in d.value.columns)
    assert (priced["dollars_per_hour"] > routers["dollars_per_hour"]).all()
    assert priced.drop(columns=["dollars_per_hour", "dollars_per_m_input_tokens", "target"]).equals(
        routers.drop(columns=["dollars_per_hour", "dollars_per_m_input_tokens", "target"])
    )
