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


def test_a_chunk_of_several_blocks_and_the_longest_line_take_the_fast_path():
    # pyarrow parses a chunk in blocks of JSON_BLOCK_BYTES, one per core: rows keep their lines
    # across the blocks' seams, and a line of the longest length a trace may have is still one record.
    n = (formats.MAX_LINE_BYTES - 200) // 3
    longest = f'{{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [{", ".join(["7"] * n)}]}}'
    assert formats.MAX_LINE_BYTES - 300 < len(longest) <= formats.MAX_LINE_BYTES
    many = [f'{{"timestamp": {t}, "input_length": 2, "output_length": 3, "hash_ids": [{t}]}}' for t in range(20_000)]
    lines = [*many[:3], longest, *many, longest, *many[:3]]
    chunk = "\n".join(lines).encode() + b"\n"
    assert len(chunk) > 2 * formats.JSON_BLOCK_BYTES
    fast = formats.jsonl_fast(chunk, 10, formats.SPECS[formats.Format.MOONCAKE])
    assert fast is not None
    np.testing.assert_array_equal(fast.lines, np.arange(10, 10 + len(lines)))
    np.testing.assert_array_equal(fast.times, [0, 1, 2, 5, *range(20_000), 5, 0, 1, 2])
    np.testing.assert_array_equal(fast.counts, [1, 1, 1, n, *[1] * 20_000, n, 1, 1, 1])
    np.testing.assert_array_equal(fast.ids, [0, 1, 2, *[7] * n, *range(20_000), *[7] * n, 0, 1, 2])
