"""The synthetic generator: deterministic, Mooncake-format valid, and tuned like the notes' load."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.common.errors import InputError
from kvviz.traces import blocks_needed, load_trace
from kvviz.traces.stats import trace_stats
from kvviz.traces.workload import WorkloadConfig, generate


def test_same_seed_same_trace_other_seed_other_trace():
    a, b = generate(WorkloadConfig(requests=300, seed=5)), generate(WorkloadConfig(requests=300, seed=5))
    assert a.to_jsonl() == b.to_jsonl()
    assert generate(WorkloadConfig(requests=300, seed=6)).to_jsonl() != a.to_jsonl()


def test_ids_follow_the_mooncake_rules():
    trace = generate(WorkloadConfig(requests=400, seed=1))
    assert trace.n_requests == 400
    assert (np.diff(trace.requests["timestamp"].to_numpy()) >= 0).all()
    first_seen: dict[int, tuple] = {}
    for i in range(trace.n_requests):
        ids = trace.hash_ids(i).tolist()
        assert len(ids) == blocks_needed(int(trace.requests["input_length"][i]))
        for k, block in enumerate(ids):
            # chained ids: a block id always sits at the same depth behind the same prefix
            prefix = tuple(ids[:k])
            assert first_seen.setdefault(block, prefix) == prefix
    assert load_trace(trace.to_jsonl().encode()).blocks.tolist() == trace.blocks.tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_mix_resembles_the_lecture_notes_load(seed):
    s = trace_stats(generate(WorkloadConfig(seed=seed)))
    assert 0.42 <= s.infinite_cache_hit_fraction <= 0.62  # notes: ~52%
    assert 0.78 <= s.never_reused_block_fraction <= 0.90  # notes: ~84%
    assert s.top1pct_hit_share > 0.5  # notes: more than half of hits


def test_one_shot_only_has_no_reuse_and_chat_only_has_reuse():
    none = trace_stats(generate(WorkloadConfig(requests=200, share_doc_qa=0, share_chat=0, share_oneshot=1)))
    assert none.infinite_cache_hit_fraction == 0
    chat = trace_stats(generate(WorkloadConfig(requests=200, share_doc_qa=0, share_chat=1, share_oneshot=0)))
    assert chat.infinite_cache_hit_fraction > 0.3


@pytest.mark.parametrize(
    "knobs, field",
    [
        (dict(requests=0), "requests"),
        (dict(rate=0), "rate"),
        (dict(share_doc_qa=0, share_chat=0, share_oneshot=0), "shares"),
        (dict(documents=0), "documents"),
        (dict(doc_tokens=0), "doc_tokens"),
        (dict(chat_turns=0.5), "chat_turns"),
    ],
)
def test_bad_knobs_are_input_errors(knobs, field):
    with pytest.raises(InputError) as err:
        generate(WorkloadConfig(**knobs))
    assert err.value.field == field
