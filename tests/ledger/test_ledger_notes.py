"""The ledger page's "What to notice": generated from the numbers of the tables it reads."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from kvviz.common import hardware as hw
from kvviz.ledger import ledger, notes

H100 = hw.Compute(hw.GPUS["h100"], hw.DEFAULT_MFU)
LINKS = {k: hw.LINKS[k] for k in ledger.DEFAULT_LINKS}
CONTEXTS = np.array([256, 1024, 8192, 131_072, 1_048_576])


def test_size_notes_read_the_size_table():
    size = ledger.size_table(hw.MODELS, 8_000, 40.0)
    first, fits, params = notes.size_notes(size, hw.MODELS, "llama-3-8b", 8_000, 40.0)
    assert first.endswith("MHA 512 KiB; GQA 128–320 KiB; MLA 68.6 KiB per token in the table.")
    assert fits == (
        "At 8,000 tokens one context of llama-3-8b is 0.977 GiB of KV: 40 GiB holds 327,680 tokens, 40 such contexts."
    )
    assert params == (
        "Size does not follow parameters: llama-3.1-70b has 10.5× the parameters of llama-2-7b and "
        "1.6× less KV per token."
    )


def test_size_notes_say_when_a_context_does_not_fit_or_size_follows_parameters():
    small = hw.MODELS["llama-3-8b"]
    twice = replace(small, name="twice", layers=2 * small.layers, params_b=2 * small.params_b)
    models = {"llama-3-8b": small, "twice": twice}
    size = ledger.size_table(models, 8_000, 0.5)
    _, fits, params = notes.size_notes(size, models, "twice", 8_000, 0.5)
    assert fits.endswith("0.5 GiB holds 2,048 tokens, not even one such context: it must live elsewhere.")
    assert (
        params == "Here size follows parameters: twice has 2.0× the parameters of llama-3-8b and 2.0× its KV per token."
    )


def test_breakeven_notes_group_the_links_by_the_curves():
    be = ledger.breakeven_table([hw.MODELS[k] for k in ledger.BREAKEVEN_MODELS], H100, CONTEXTS)
    rule, context, models, links = notes.breakeven_notes(be, LINKS)
    assert rule.startswith("Break-even bandwidth = KV bytes per token ÷ recompute time per token.")
    low, high = be[notes.BREAKEVEN].min(), be[notes.BREAKEVEN].max()
    assert context.startswith("From 256 to 1,048,576 tokens of context the bar falls ")
    assert models == (
        "At 8,192 tokens the bar is highest for llama-2-7b (MHA, 24.8 GB/s) and lowest for deepseek-r1 "
        "(MLA, 0.552 GB/s), 45× apart."
    )
    assert links == (
        "pcie5-x16 (51.2 GB/s) and rdma-400g (40 GB/s) clear the bar everywhere on the figure; nvme "
        "(5.6 GB/s), cloud-10g (1 GB/s) and cloud-3g (0.3 GB/s) clear it for some models and contexts "
        f"only (the curves span {low:.3g}–{high:.3g} GB/s)."
    )
    slow = {"dial-up": hw.LinkSpec("dial-up", 1e-6, 1.0)}
    assert notes.breakeven_notes(be, slow)[-1].startswith("dial-up (0.000001 GB/s) stay below it everywhere")
    assert notes.breakeven_notes(be.iloc[:0], LINKS) == [rule]


def test_load_and_chat_notes_name_the_links_that_beat_recomputing():
    m = hw.MODELS["llama-3-8b"]
    lr = ledger.load_or_recompute(m, H100, 8_000, LINKS)
    verdict, near = notes.load_notes(lr, "llama-3-8b", 8_000)
    assert verdict == (
        "llama-3-8b recomputes 8,000 tokens in 188 ms; loading them is faster over pcie5-x16, "
        "rdma-400g and nvme (up to 9.2×), slower over cloud-10g and cloud-3g."
    )
    assert near.startswith("nvme is nearest break-even: 187 ms to load against 188 ms to recompute")
    last = ledger.last_turn(ledger.multi_turn_ttft(m, H100, ledger.Chat(20, 230, 370), LINKS, False), 20)
    history, loads = notes.chat_notes(last, 20)
    assert history == (
        "At turn 20 the history is 11,400 tokens: the turn's TTFT is 288.8 ms with no cache "
        "(all recomputed), 6.7 ms with a GPU hit."
    )
    assert (
        loads == "Loading it over pcie5-x16 takes 35.8 ms; over cloud-10g and cloud-3g it is slower than recomputing."
    )


def test_economics_notes_read_the_break_even_hits():
    node = hw.Compute(hw.GPUS["h100"], hw.DEFAULT_MFU, 8)
    econ = ledger.economics_curve(
        [hw.MODELS[k] for k in ledger.ECONOMICS_MODELS], node, [256, 8192, 262_144], ledger.Prices(2.0, 0.15)
    )
    hits = econ["break-even hits/h"]
    pays, soonest, longer = notes.economics_notes(econ)
    assert pays.startswith(f"Keeping a context pays once it is reused {hits.min():.2g}–{hits.max():.2g} times an hour")
    assert pays.endswith(f"below one reuse an hour for {(hits < 1).mean():.0%} of them.")
    assert soonest.startswith("deepseek-r1 pays back soonest") and "llama-3-8b latest" in soonest
    assert longer == (
        "From 256 to 262,144 tokens, longer contexts pay back sooner for every model (recompute grows "
        "faster than the bytes kept)."
    )


SUMMARY = pd.DataFrame(
    {
        "setup": ["GPU only", "+ CPU slow", "+ CPU fast", "+ SSD"],
        "GPU hit %": 36.0,
        "CPU hit %": [0.0, 25.0, 25.0, 25.0],
        "recomputed %": [64.0, 39.0, 39.0, 6.0],
        "mean TTFT s": [3.5, 1.7, 0.5, 0.48],
    }
)


def test_tiers_notes_compare_the_setups_in_order():
    gpu, cpu, ssd = notes.tiers_notes(SUMMARY, "spill")
    assert gpu.startswith("GPU only: 64% of prompt tokens are recomputed") and gpu.endswith("mean TTFT 3.50 s.")
    assert cpu == (
        "The CPU tier serves 25% of the tokens from memory: mean TTFT 3.50 → 1.70 s with slow reads "
        "(+ CPU slow), 0.50 s with fast ones (+ CPU fast)."
    )
    assert ssd == (
        "Adding the SSD: recomputed 39% → 6% of the tokens, mean TTFT 0.50 → 0.48 s (-4%): the hit rate "
        "rises, the TTFT barely moves."
    )


@pytest.mark.parametrize(
    "fill, cpu_hits, said", [("write-through", 0.0, True), ("write-through", 25.0, False), ("spill", 0.0, False)]
)
def test_write_through_is_named_only_when_the_cpu_tier_serves_nothing(fill, cpu_hits, said):
    summary = SUMMARY.iloc[:3].assign(**{"CPU hit %": [0.0, cpu_hits, cpu_hits]})
    out = notes.tiers_notes(summary, fill)
    assert len(out) == 2 + said
    assert said == any("write-through" in line for line in out)
