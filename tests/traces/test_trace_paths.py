"""The fast path (pyarrow) and the line-by-line path read any input the same way: the same trace,
or the same error naming the same line and field."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.traces import ReadOptions, formats, ingest, load_trace
from tests import fixtures as fx

values = st.one_of(
    st.integers(-3, 3000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.integers(2**62, 2**70),
)
records = st.fixed_dictionaries(
    {
        "timestamp": st.one_of(st.integers(0, 10**6), values),
        "input_length": st.one_of(st.integers(1, 2000), values),
        "output_length": st.one_of(st.integers(0, 50), values),
    },
    optional={
        "hash_ids": st.lists(st.one_of(st.integers(0, 9), values), max_size=5),
        "chat_id": values,
        "turn": st.integers(0, 5),
        "type": st.one_of(st.text(max_size=4), values),
        "x": st.recursive(st.integers(), lambda c: st.lists(c, max_size=2), max_leaves=4),
    },
)


def _outcome(data: bytes, fast: bool, skip: bool):
    small, ingest.SMALL_TEXT = ingest.SMALL_TEXT, 0 if fast else 10**12
    try:
        trace = load_trace(data, options=ReadOptions(skip_bad_rows=skip))
    except InputError as exc:
        return ("error", str(exc))
    finally:
        ingest.SMALL_TEXT = small
    return ("trace", trace.requests.to_dict("list"), trace.blocks.tolist(), trace.warnings, trace.how_read)


@settings(max_examples=120)
@given(st.lists(records, min_size=1, max_size=6), st.booleans())
@example([{"timestamp": float("nan"), "input_length": 1, "output_length": 1}], False)
@example([{"timestamp": 0, "input_length": 1, "output_length": 1, "x": [[[[1]]]]}], False)
def test_fast_and_slow_paths_agree(recs, skip):
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    assert _outcome(data, True, skip) == _outcome(data, False, skip)


@settings(max_examples=60)
@given(st.binary(max_size=200), st.sampled_from([fx.gz, fx.zst, lambda b: b]))
def test_arbitrary_bytes_compressed_or_not_load_or_raise_input_error(data, pack):
    try:
        load_trace(pack(data))
    except InputError:
        pass


def test_the_fast_path_is_taken_for_clean_chunks(monkeypatch):
    calls = []
    real = formats.jsonl_fast
    monkeypatch.setattr(formats, "jsonl_fast", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(ingest, "SMALL_TEXT", 0)
    trace = load_trace(fx.jsonl(fx.QWEN))
    assert calls and np.array_equal(trace.requests["chat_id"], [1, 2, 3, 4])
