"""Presets, KV size arithmetic, the paper-GPU prefill model and preset-table validation."""

import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common import hardware as hw
from kvviz.common.errors import InputError


@pytest.mark.parametrize(
    "name,bytes_per_token",
    [
        ("llama-3-8b", 131_072),  # lecture 9 §1.1: 128 KiB
        ("llama-3.1-8b", 131_072),  # alias, same layout
        ("qwen2.5-14b", 196_608),  # lecture 9 exercise 1
        ("llama-3.1-70b", 327_680),  # lecture 27 exercise 1: 320 KiB
        ("mistral-7b", 131_072),  # lecture 9 exercise 3: 65,536 values × 2 bytes
        ("llama-2-7b", 524_288),  # the MHA 7B: 4× Llama-3-8B
        ("yi-34b", 245_760),
        ("deepseek-r1", 70_272),  # lecture 27 §1.2: 68.6 KiB (61 layers × 576 × 2 B)
    ],
)
def test_kv_bytes_per_token_exact(name, bytes_per_token):
    assert hw.model(name).kv_bytes_per_token == bytes_per_token


@pytest.mark.parametrize(
    "name,tokens,seconds",
    [
        ("llama-3-8b", 8_000, 0.188),  # lecture 9 §1.2
        ("llama-3-8b", 11_400, 0.282),  # lecture 9 §1.2, turn 20 with no cache
        ("qwen2.5-14b", 8_000, 0.351),  # lecture 9 exercise 1
    ],
)
def test_prefill_model_reproduces_notes_within_half_percent(name, tokens, seconds):
    t = hw.prefill_seconds(hw.model(name), hw.Compute(hw.gpu("h100")), tokens)
    assert t == pytest.approx(seconds, rel=0.005)


def test_incremental_prefill_adds_up():
    m, c = hw.model("llama-3-8b"), hw.Compute(hw.gpu("h100"))
    whole = hw.prefill_flops(m, 5000)
    assert hw.prefill_flops(m, 3000) + hw.prefill_flops(m, 2000, 3000) == pytest.approx(whole, rel=1e-12)
    assert hw.prefill_seconds(m, hw.Compute(hw.gpu("h100"), n_gpus=2), 5000) == pytest.approx(
        hw.prefill_seconds(m, c, 5000) / 2
    )


@settings(max_examples=40)
@given(n=st.integers(1, 200_000), c=st.integers(0, 200_000))
def test_prefill_monotone_in_new_and_cached(n, c):
    m = hw.model("qwen2.5-14b")
    assert hw.prefill_flops(m, n + 1, c) > hw.prefill_flops(m, n, c)
    assert hw.prefill_flops(m, n, c + 1) > hw.prefill_flops(m, n, c)


def test_lookup_is_case_insensitive_and_unknown_names_say_what_is_known():
    assert hw.model("Llama-3-8B").name == "llama-3-8b"
    assert hw.gpu(" H100 ").name == "h100"
    with pytest.raises(InputError, match="unknown model 'gpt-9'.*llama-3-8b"):
        hw.model("gpt-9")
    with pytest.raises(InputError, match="unknown gpu"):
        hw.gpu("tpu")
    with pytest.raises(InputError, match="unknown link"):
        hw.link("carrier pigeon")


@pytest.mark.parametrize("mfu", [0, -0.1, 1.01, float("nan")])
def test_mfu_outside_unit_interval_is_rejected(mfu):
    with pytest.raises(InputError, match="MFU"):
        hw.Compute(hw.gpu("h100"), mfu)


def test_frames_round_trip():
    assert hw.models_from_frame(hw.to_frame(hw.MODELS)) == hw.MODELS
    assert hw.gpus_from_frame(hw.to_frame(hw.GPUS)) == hw.GPUS
    assert hw.links_from_frame(hw.to_frame(hw.LINKS)) == hw.LINKS


@pytest.mark.parametrize(
    "table,row,col,value,match",
    [
        ("models", "llama-3-8b", "layers", 0, "model 'llama-3-8b': layers must be a whole number > 0"),
        ("models", "llama-3-8b", "head_dim", -128, "head_dim"),
        ("models", "qwen2.5-14b", "bytes_per_value", 0.0, "bytes_per_value must be a number > 0"),
        ("models", "qwen2.5-14b", "attention", "SWA", "attention must be one of MHA, GQA, MLA"),
        ("models", "mistral-7b", "layers", 2.5, "whole number"),
        ("gpus", "h100", "peak_tflops", -1.0, "GPU 'h100': peak_tflops"),
        ("gpus", "a40", "hbm_tb_s", float("nan"), "hbm_tb_s"),
        ("links", "nvme", "gb_s", 0.0, "link 'nvme': gb_s"),
        ("links", "pcie5-x16", "efficiency", 1.5, r"efficiency must be in \(0, 1\]"),
        ("links", "pcie5-x16", "efficiency", 0.0, "efficiency"),
    ],
)
def test_bad_edits_are_named(table, row, col, value, match):
    presets = {"models": hw.MODELS, "gpus": hw.GPUS, "links": hw.LINKS}[table]
    parse = {"models": hw.models_from_frame, "gpus": hw.gpus_from_frame, "links": hw.links_from_frame}[table]
    df = hw.to_frame(presets).astype(object)
    df.loc[df["name"] == row, col] = value
    with pytest.raises(InputError, match=match):
        parse(df)


def test_a_new_row_needs_a_name_and_numbers():
    df = hw.to_frame(hw.MODELS)
    df.loc[len(df)] = ["My-Model", 40, 8, 128, 1, 20.0, 6144, "gqa"]
    parsed = hw.models_from_frame(df)
    assert parsed["my-model"].kv_bytes_per_token == 40 * 2 * 8 * 128 * 1
    assert parsed["my-model"].attention == "GQA"
    blank = pd.concat([df, pd.DataFrame([[None] * 8], columns=df.columns)], ignore_index=True)
    with pytest.raises(InputError, match="every row needs a name"):
        hw.models_from_frame(blank)
    unnamed = df.copy()
    unnamed.loc[len(unnamed)] = [None, 40, 8, 128, 2, 20.0, 6144, "GQA"]
    with pytest.raises(InputError, match="every row needs a name"):
        hw.models_from_frame(unnamed)
    twice = df.copy()
    twice.loc[len(twice)] = ["llama-3-8b", 40, 8, 128, 2, 20.0, 6144, "GQA"]
    with pytest.raises(InputError, match="appears twice"):
        hw.models_from_frame(twice)
    empty_cells = df.copy()
    empty_cells.loc[len(empty_cells)] = ["half-filled", None, None, None, None, None, None, None]
    with pytest.raises(InputError, match="model 'half-filled': layers"):
        hw.models_from_frame(empty_cells)
    with pytest.raises(InputError, match="must be a number"):
        text = hw.to_frame(hw.MODELS).astype(object)
        text.loc[0, "layers"] = "thirty-two"
        hw.models_from_frame(text)


def test_fp8_variant_halves_kv():
    m = hw.with_variant(hw.model("llama-3-8b"), bytes_per_value=1)
    assert m.kv_bytes_per_token == 65_536
    assert math.isclose(hw.link("nvme").effective_bytes_s, 5.6e9)


# ---- prices ---------------------------------------------------------------------------------------

MONTH = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) 20\d\d"
SOURCED = [
    *hw.GPU_PRICES.values(), hw.DRAM_PRICE, hw.SSD_PRICE, *hw.GPU_PURCHASE.values(), *hw.GPU_POWER.values(),
    hw.DRAM_PURCHASE, hw.SSD_PURCHASE, hw.ELECTRICITY, hw.SERVER_LIFE,
]  # fmt: skip


@pytest.mark.parametrize("price", SOURCED, ids=lambda p: p.source[:40])
def test_every_default_price_names_where_and_when_it_was_read(price):
    assert re.fullmatch(MONTH, price.month) and price.url.startswith("https://") and price.source
    assert f"as listed {price.month} ({price.url})" in hw.cited(price)


def test_a_price_without_a_source_says_it_is_an_estimate():
    assert hw.UNKNOWN_GPU_PRICE.source.startswith("estimate: ")
    custom = hw.GPUSpec("my-gpu", 500.0, 2.0, 64)
    assert hw.gpu_price(custom) == hw.UNKNOWN_GPU_PRICE
    assert hw.gpu_price(hw.gpu("a40")).value == 0.44


def test_dram_and_ssd_are_the_price_difference_their_sources_name():
    """DRAM: r7i.xlarge less c7i.xlarge for 24 GiB; SSD: i4i.xlarge less r6i.xlarge for 937 GB (AWS)."""
    assert hw.DRAM_PRICE.value == round((0.2646 - 0.1785) / (24 * 2**30 / 1e9), 6) == 0.003341
    assert hw.SSD_PRICE.value == round((0.343 - 0.252) / 0.937, 4) == 0.0971
    assert all(f"${v}/h" in hw.DRAM_PRICE.source for v in (0.2646, 0.1785))
    assert all(f"${v}/h" in hw.SSD_PRICE.source for v in (0.343, 0.252))


def test_hbm_costs_its_own_gpu_hour_per_gib():
    per_gib = {g: hw.DevicePrices.for_gpu(hw.gpu(g)).hbm_per_gib_hour(hw.gpu(g)) for g in hw.GPUS}
    assert per_gib["h100"] == pytest.approx(3.99 / (80e9 / 2**30))
    assert min(per_gib, key=per_gib.get) == "a40" and max(per_gib, key=per_gib.get) == "h100"
    dram = hw.DevicePrices.for_gpu(hw.gpu("a40")).dram_per_gib_hour()
    assert dram == pytest.approx(0.003341 * 2**30 / 1e9) and per_gib["a40"] / dram > 2


@pytest.mark.parametrize("name", ["[click](http://x)", "![x](x.png)", "a" * 41, "**bold**", "<b>x</b>", "`code`"])
def test_a_preset_name_that_would_be_markup_or_too_long_is_refused(name):
    """The pages write a preset's name into their notes as it is: markup or a paragraph is refused."""
    df = hw.to_frame(hw.GPUS)
    df.loc[len(df)] = [name, *df.iloc[0, 1:]]
    with pytest.raises(InputError, match="is not usable: give letters, digits"):
        hw.gpus_from_frame(df)


def test_every_built_in_preset_name_is_usable():
    assert all(hw.NAME.fullmatch(n) for table in (hw.MODELS, hw.GPUS, hw.LINKS) for n in table)


# ---- buying instead of renting --------------------------------------------------------------------


def test_a_purchase_is_written_off_evenly_over_its_years_plus_the_gpus_power():
    bought = hw.Purchase(gpu_cost=43_800, gpu_watts=1000, dram_per_gb=8.76, ssd_per_tb=87.6, kwh=0.1, years=5)
    hourly = bought.hourly()
    assert bought.hours == 5 * 8760
    assert hourly.gpu_per_hour == pytest.approx(43_800 / 43_800 + 1.0 * 0.1)  # $1/h written off, 1 kW at $0.1
    assert hourly.dram_per_gb_hour == pytest.approx(8.76 / 43_800) == hourly.remote_per_gb_hour
    assert hourly.ssd_per_tb_hour == pytest.approx(87.6 / 43_800)
    assert hourly.basis.startswith("bought: purchase prices over 5 years")


def test_the_h100s_purchase_defaults_are_their_sources_numbers():
    price, power = hw.purchase_defaults(hw.gpu("h100"))
    assert price.value == 317_000 / 8 and power.value == 10_200 / 8
    assert hw.DRAM_PURCHASE.value == round(76_999 / 4096, 4) and hw.SSD_PURCHASE.value == round(10_000 / 30, 2)
    assert hw.purchase_defaults(hw.gpu("a40")) == (None, None)  # no public source: the user gives them


def test_bought_dram_costs_far_less_an_hour_than_rented():
    bought = hw.Purchase(hw.GPU_PURCHASE["h100"].value, hw.GPU_POWER["h100"].value).hourly()
    assert hw.DRAM_PRICE.value / bought.dram_per_gb_hour > 5
    assert bought.gpu_per_hour < hw.GPU_PRICES["h100"].value


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"years": 0}, "years must be > 0"), ({"kwh": -1}, "kwh must be a number ≥ 0"),
     ({"gpu_cost": math.nan}, "gpu_cost must be a number ≥ 0")],
)  # fmt: skip
def test_bad_purchase_inputs_are_refused(changes, message):
    with pytest.raises(InputError, match=message):
        hw.Purchase(**{"gpu_cost": 1.0, "gpu_watts": 1.0, **changes})
