"""The worked example where vLLM and SGLang part ways, and the sentences that compare the engines."""

from __future__ import annotations

import pandas as pd

from kvviz import vllm


def test_worked_example_one_block_against_a_whole_edge():
    e = vllm.engines_example()
    assert [s.block_hits for s in e.steps[1:]] == [0, 1, 3, 1]  # vLLM
    assert [s.prefix_hits for s in e.steps[1:]] == [0, 1, 1, 1]  # SGLang radix LRU
    after_second = e.steps[2]
    assert after_second.block_cached == {"A", "B", "C", "E"}  # vLLM gave up D only
    assert after_second.prefix_cached == {"A", "E"}  # SGLang gave up the edge B·C·D
    assert e.sides[0].startswith("vLLM") and e.sides[1].startswith("SGLang")


def _curve(vllm_hits, sglang_hits, caps=(10, 100, 1000)):
    rows = [("vllm", c, h) for c, h in zip(caps, vllm_hits)] + [("lru", c, h) for c, h in zip(caps, sglang_hits)]
    frame = pd.DataFrame(rows, columns=["policy", "capacity", "hits"])
    return frame.assign(accesses=1000, hit_ratio=frame["hits"] / 1000)


def test_notes_name_the_widest_gap_and_the_side():
    lead, why, orphan = vllm.engine_notes(_curve([300, 500, 700], [250, 520, 700]), 0)
    assert lead.startswith("**vLLM** is ahead") and "at 10 blocks vLLM hits 300 blocks and SGLang LRU 250" in lead
    assert "(+5.00 points)" in lead and "ahead at 1 and behind at 1 of 3" in lead
    assert "whole radix edge" in why and "Where SGLang is ahead" in why
    assert orphan.startswith("0 cached blocks of vLLM's final pool are orphaned")


def test_notes_when_the_engines_agree():
    lead, why, _ = vllm.engine_notes(_curve([300, 500], [300, 500], (10, 100)), 1)
    assert lead == "**vLLM** and **SGLang LRU** hit alike at every capacity shown."
    assert "Where SGLang is ahead" not in why
