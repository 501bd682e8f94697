"""The Tiers page's tables as a reader sees them: narrow columns, sizes without exponents, and a
capacity that is not needed or never enough said in words."""

from __future__ import annotations

import pandas as pd
import pytest

from kvviz.tiers.config import TierConfig
from kvviz.tiers.plan import Plan, Reach
from ui.tiers.plan import REACH_COLUMNS, gib, mix_columns, reach_table

pytestmark = pytest.mark.shared_caches


@pytest.mark.parametrize(
    ("size", "shown"), [(0.0, "0"), (13.156, "13.2"), (83.84, "83.8"), (114.2, "114"), (6220.4, "6,220")]
)
def test_sizes_read_to_three_figures_without_an_exponent(size, shown):
    assert gib(size) == shown


def test_the_capacity_table_has_a_row_per_tier_and_share():
    reaches = (
        Reach("gpu", 0.8, 1000, 62.5, 3.125),
        Reach("dram", 0.8, 0, 0.0, 0.0),
        Reach("ssd", 0.95, None, None, None),
    )
    config = TierConfig("llama-3-8b", "h100", dram_gib=256.0, ssd_gib=2048.0)
    table = reach_table(Plan(config, 2.0, reaches, pd.DataFrame(), 0))
    assert list(table.columns) == list(REACH_COLUMNS)
    assert table.values.tolist() == [
        ["GPU memory", 80, "62.5 GiB", "$3.12"],
        ["host DRAM", 80, "none", "$0.00"],
        ["SSD", 95, "never", "—"],
    ]


def test_the_mixes_say_where_the_storage_is():
    ssd = mix_columns(TierConfig("llama-3-8b", "h100", dram_gib=256.0, ssd_gib=2048.0))
    remote = mix_columns(TierConfig("llama-3-8b", "h100", dram_gib=256.0, remote_gib=4096.0))
    assert (ssd["storage_gib"]["label"], remote["storage_gib"]["label"]) == ("SSD", "remote pool")
    assert remote["storage_gib"]["help"] == "The remote pool, GiB for the whole cluster."


def test_the_cheapest_deployment_reads_as_a_sentence_or_says_why_there_is_none():
    from kvviz.tiers.search import COLUMNS, STEPS, Found, Targets
    from ui.tiers.plan import cheapest_sentence

    config = TierConfig("llama-3-8b", "h100")
    row = [3, 1, 32.0, 3.84e12 / 2**30, 3.84, 1, 13.43, 4.4767, 0.17, 0.55, 1.89, 5.81, True]
    found = Found(config, Targets(2.0), STEPS, pd.DataFrame([row], columns=list(COLUMNS)), 2)
    ok, sentence = cheapest_sentence(found, "SSD")
    assert ok and sentence.startswith(
        "**Cheapest deployment that keeps TTFT p90 within 2 s: 3 instance(s), each with 1 GPU(s), 32 GiB of host "
        "DRAM and 3.84 TB of SSD (1 drive(s))**, at $13.43 per hour for the whole cluster ($4.48 per instance; "
        "rented at hourly list prices)."
    )
    none = Found(config, Targets(2.0), STEPS, pd.DataFrame(columns=list(COLUMNS)), 0, exhausted=True)
    assert cheapest_sentence(none, "SSD") == (
        False,
        "No deployment among the 0 cheapest tried keeps TTFT p90 within 2 s; the page stops there: the command "
        "line's plan searches further.",
    )
