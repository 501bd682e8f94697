"""Table columns as the page shows them: a name joined by underscores in words, its unit in brackets."""

from __future__ import annotations

import pandas as pd
import pytest

from ui.kit.tables import Header, label, readable, turned

pytestmark = pytest.mark.shared_caches


@pytest.mark.parametrize(
    ("column", "shown"),
    [
        ("mean_ttft_s", "Mean TTFT (s)"),
        ("p95_ttft_s", "p95 TTFT (s)"),
        ("bits_per_value", "Bits per value"),
        ("rel_error", "Relative error"),
        ("hbm_tb_s", "HBM (TB/s)"),
        ("params_b", "Parameters (billions)"),
        ("d_attn", "Attention width (query heads × head dimension)"),
        ("policy", "policy"),
        ("mean TTFT s", "mean TTFT s"),
    ],
)
def test_a_column_name_reads_as_words(column, shown):
    assert label(column) == shown


def test_only_renamed_or_formatted_columns_get_a_config():
    config = readable(["policy", "violation_rate", "MB"], {"MB": "%.3f"})
    assert set(config) == {"violation_rate", "MB"} and config["violation_rate"] == "Violation rate"
    assert config["MB"]["label"] == "MB" and config["MB"]["type_config"]["format"] == "%.3f"


def test_a_short_header_keeps_the_long_name_in_its_help():
    config = readable(["d_attn", "MB", "policy"], {"MB": "%.1f"}, {"d_attn": Header("Attn width", "Heads × dim.")})
    assert (config["d_attn"]["label"], config["d_attn"]["help"]) == ("Attn width", "Heads × dim.")
    assert config["MB"]["help"] is None and "policy" not in config


def test_a_table_turned_has_a_row_per_measure_and_a_column_per_key_as_the_table_wrote_them():
    table = pd.DataFrame({"Policy": ["Baseline", "Early rejection"], "Completed": [1234.0, 12.0]})
    table = table.assign(Goodput=[0.125, None], Over=["3%", "0%"])
    shown, config = turned(table, "Policy", {"Early rejection": Header("Early", "Early rejection")})
    assert shown.to_dict("list") == {
        "": ["Completed", "Goodput", "Over"],
        "Baseline": ["1,234", "0.125", "3%"],
        "Early rejection": ["12", "–", "0%"],
    }
    assert (config["Early rejection"]["label"], config["Early rejection"]["help"]) == ("Early", "Early rejection")
    assert config["Baseline"]["label"] == "Baseline" and config["Baseline"]["alignment"] == "right"
