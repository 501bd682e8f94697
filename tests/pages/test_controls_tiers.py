"""AppTest: no dead controls on the Tiers page, every control in the URL.

On a small synthetic trace every control is changed in turn (and put back), then the storage goes
to a remote pool and its own controls are changed; each time what the viewer sees must change
(helpers in ``tests/pages/page_controls.py``).
The trace's own controls are the Trace page's (test_controls_trace); here only its source is moved.
"""

from __future__ import annotations

import pytest

from kvviz.tiers.config import TierConfig
from kvviz.tiers.replay import replay
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import open_page
from tests.pages.page_controls import assert_each_changes_the_view, assert_every_control_counts

# Small, and tight: Llama-2-7B's KV (no grouped-query attention) overflows half an H100 and 16 GiB of
# DRAM, so the eviction policy, each tier's size and the link to the storage change what is hit.
SMALL = {
    "tiers_source": "Synthetic",
    "tiers_requests": "300",
    "tiers_model": "llama-2-7b",
    "tiers_kv_fraction": "0.5",
    "tiers_gpus": "2",
    "tiers_dram": "16",
}
TRACE = ("tiers_requests", "tiers_seed", "tiers_qa", "tiers_chat", "tiers_oneshot", "tiers_docs", "tiers_zipf")
REMOTE_PRICE = "tiers_price_3"  # counts only with a remote pool: changed after the storage goes remote
SKIP = (*TRACE, "tiers_rate", REMOTE_PRICE)
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
    "tiers_slo",
    *(f"tiers_price_{i}" for i in range(3)),
}


# another model that fits beside its KV (the last, DeepSeek-R1, does not); tensor parallel over both GPUs
# (each size must divide them)
VALUES = {"tiers_model": 0, "tiers_tp": 1, "tiers_write": "write_back"}  # the write policy by its value


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the tiered replay's kernels here, once, not inside a page run's time limit."""
    replay(generate(WorkloadConfig(requests=100)), TierConfig())


def test_every_control_changes_what_is_shown():
    at = open_page("tiers", SMALL, timeout=300)
    changed = assert_every_control_counts(at, "tiers", set(), values=VALUES, skip=SKIP)
    assert set(changed) == COMMON | {"tiers_ssd", "tiers_source"}
    assert_each_changes_the_view(
        at,
        [
            ("segmented_control", "tiers_storage", "Remote pool"),
            ("number_input", "tiers_remote", 64),
            ("number_input", "tiers_remote_gb_s", 400.0),
            ("number_input", REMOTE_PRICE, 1.0),
        ],
    )
