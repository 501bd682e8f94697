"""Table columns as the page shows them: a name joined by underscores in words, its unit in brackets."""

from __future__ import annotations

import pytest

from ui.tables import label, readable


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
