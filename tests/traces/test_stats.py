"""Trace statistics: exact values on a hand-made trace."""

from __future__ import annotations

import pytest

from kvviz.common.paper import problems
from kvviz.traces import load_trace
from kvviz.traces.stats import paper_rows, trace_notes, trace_stats

SMALL = (
    b'{"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [0, 1]}\n'
    b'{"timestamp": 1000, "input_length": 500, "output_length": 20, "hash_ids": [0]}\n'
    b'{"timestamp": 2000, "input_length": 1500, "output_length": 30, "hash_ids": [0, 1, 2]}\n'
    b'{"timestamp": 4000, "input_length": 100, "output_length": 40, "hash_ids": [3]}\n'
)
LENGTHS_ONLY = b"arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,1\n2,30,3\n"


def test_exact_stats_on_a_small_trace():
    # accesses: 0 1 | 0 | 0 1 2 | 3  -> 7 accesses, 4 distinct, hits: 0 twice, 1 once
    s = trace_stats(load_trace(SMALL))
    assert s.requests == 4 and s.time_span_s == 4.0
    assert s.mean_input_tokens == 775.0 and s.median_input_tokens == 750.0
    assert s.mean_output_tokens == 25.0 and s.median_output_tokens == 25.0
    assert s.block_accesses == 7 and s.distinct_blocks == 4
    assert s.infinite_cache_hit_fraction == pytest.approx(3 / 7)
    assert s.never_reused_block_fraction == pytest.approx(2 / 4)
    # top 1% of 4 blocks is one block: block 0 with 2 of the 3 hits
    assert s.top1pct_hit_share == pytest.approx(2 / 3)


def test_trace_without_block_ids_has_no_block_stats():
    s = trace_stats(load_trace(LENGTHS_ONLY))
    assert s.requests == 2 and s.time_span_s == 2.0 and s.block_accesses is None
    assert [r["quantity"] for r in paper_rows(s, graded=True)] == ["mean input tokens", "mean output tokens"]


def test_a_trace_the_paper_did_not_measure_is_described_not_graded():
    rows = paper_rows(trace_stats(load_trace(SMALL)), graded=False)
    assert {r["status"] for r in rows} == {"not compared"} and not problems(rows)
    assert rows[0] == {
        "quantity": "mean input tokens",
        "paper": "8,590 (Mooncake trace, as the notes quote it)",
        "this simulation": "775",
        "status": "not compared",
        "basis": "not compared: another trace than the one the paper measured",
    }


def test_what_to_notice_on_a_trace_without_block_ids_speaks_only_of_arrivals_and_lengths():
    assert trace_notes(trace_stats(load_trace(LENGTHS_ONLY))) == [
        "2 requests over 2 s, 1 a second on average: the arrivals chart shows their bursts.",
        "Prompts average 20 tokens, median 20; outputs average 2: 10 prompt tokens for every output token.",
        "This trace has no block ids, so it cannot say which prompts share a prefix: the block popularity and "
        "reuse charts, and every cache replay, need them.",
    ]


def test_what_to_notice_with_block_ids_reads_the_numbers():
    notes = trace_notes(trace_stats(load_trace(SMALL)))
    assert notes[1] == (
        "Prompts average 775 tokens, median 750; outputs average 25: 31 prompt tokens for every output token."
    )
    assert notes[2:4] == [
        "Some distinct blocks are used once (50% of 4); the most popular 1% take 67% of the hits: the head of "
        "the popularity chart.",
        "The infinite-cache line (42.9% of accesses) is the ceiling for every eviction policy: no cache can hit "
        "a block's first access.",
    ]


def test_paper_comparison_says_where_it_disagrees():
    data = (
        b'{"timestamp": 0, "input_length": 8590, "output_length": 500, "hash_ids": ['
        + b", ".join(str(i).encode() for i in range(17))
        + b"]}\n"
    )
    rows = {r["quantity"]: r for r in paper_rows(trace_stats(load_trace(data)), graded=True)}
    assert rows["mean input tokens"]["status"] == "agrees"
    assert rows["mean output tokens"]["status"] == "differs"
    assert rows["mean output tokens"]["basis"] == "off by 174.73% from the paper's 182, more than the 15% allowed"
    assert rows["distinct blocks never reused"]["status"] == "agrees"
    assert not problems(list(rows.values()))
