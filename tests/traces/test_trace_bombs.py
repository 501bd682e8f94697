"""Decompression is bounded, truncation is caught, and huge numbers are refused in plain words
(issue 24): every gzip and zstd bomb of tests/traces/bombs.py (12 GiB of text each) is refused with one
line on the upload path and by the command line after at most one allowance of text, counted
by the decompressor itself; the seconds and memory they cost are in bench/bench_bombs.py."""

from __future__ import annotations

import functools
import gzip
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.traces import FILES, UPLOADS, Limits, ReadOptions, TimeUnit, ingest, load_trace, model, source
from kvviz.traces.source import CHUNK_BYTES, MIB, RATIO_ALLOWANCE, Text
from tests import fixtures as fx
from tests.traces.bombs import CONTENTS, LINE, PACKERS, bomb, expanded_size

# What a bomb may expand to before its refusal: the allowance and one decompressor call (zstd's:
# ZSTD_STEP bytes in, at most 32 MiB and a 128 KiB block out; zlib's: CHUNK_BYTES).
MOST_BEFORE_REFUSAL = RATIO_ALLOWANCE + 32 * MIB + 128 * 1024
FIRST_LIMIT = {  # which limit each bomb meets first
    "zeros": "line 1: longer than 4 MiB without a line break (not a text trace?)",
    "lines": "refused as a decompression bomb",
    "one request of 10^9 ids": "line 1: longer than 4 MiB without a line break (not a text trace?)",
    "lines of 19,532 ids": "refused as a decompression bomb",
}
CASES = [(c, k) for c in PACKERS for k in CONTENTS]
EXAMPLE = (Path(__file__).resolve().parents[2] / "assets" / "example_trace.jsonl").read_bytes()


@functools.cache
def _bomb(compression: str, content: str) -> bytes:
    return bomb(compression, content)


def _texts(monkeypatch) -> list[Text]:
    """Every ``Text`` load_trace makes from now on (counting a trace before it is read, then reading
    it), to read its counts afterwards."""
    made: list[Text] = []

    class Counted(Text):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(ingest, "Text", Counted)
    monkeypatch.setattr(source, "Text", Counted)
    return made


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message and len(message) < 300, message
    return message


@pytest.mark.parametrize("compression, content", CASES)
def test_an_uploaded_bomb_is_refused_after_one_allowance_of_its_12_gib(compression, content, monkeypatch):
    texts = _texts(monkeypatch)
    with pytest.raises(InputError) as err:
        load_trace(_bomb(compression, content), limits=UPLOADS)
    assert FIRST_LIMIT[content] in _one_line(err)
    assert expanded_size(content) > 11.9 * 2**30 and 0 < texts[0].given <= MOST_BEFORE_REFUSAL


@pytest.mark.parametrize("compression, content", CASES)
def test_the_command_line_refuses_each_bomb_with_one_line(compression, content, tmp_path, capsys):
    path = tmp_path / "trace.bin"
    path.write_bytes(_bomb(compression, content))
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and FIRST_LIMIT[content] in err and str(tmp_path) not in err


def test_the_bomb_message_says_how_far_it_got():
    with pytest.raises(InputError) as err:
        load_trace(_bomb("zstd", "lines"), limits=FILES)
    assert _one_line(err).startswith("the zstd data expands more than 400× (")
    assert (
        "MiB): refused as a decompression bomb; a real trace that compresses this well can be given "
        "decompressed" in str(err.value)
    )


# ---------------------------------------------------------------- the ratio ceilings


def _spread(ratio: int, size: int) -> bytes:
    """``size`` bytes that zstd compresses about ``ratio``×: a few random bytes per MiB, the rest
    line breaks (every MiB's random part differs, so no two MiB match)."""
    rng = np.random.default_rng(0)
    noise = MIB // ratio
    return b"".join(rng.integers(0, 256, noise, np.uint8).tobytes() + b"\n" * (MIB - noise) for _ in range(size // MIB))


def _read(data: bytes, limits: Limits = UPLOADS) -> Text:
    text = Text(io.BytesIO(data), limits)
    assert b"".join(text) is not None
    return text


def test_a_zstd_file_under_its_ceiling_reads_whole_and_gzip_of_it_is_refused():
    plain = _spread(250, RATIO_ALLOWANCE + 16 * MIB)
    packed = zstandard.ZstdCompressor(level=3).compress(plain)
    assert 200 < len(plain) / len(packed) < 400
    assert _read(packed).given == len(plain)
    with pytest.raises(InputError, match=r"^the gzip data expands more than 100× \(.* to 48 MiB\): refused"):
        _read(gzip.compress(plain, 6))


def test_real_traces_stay_under_the_ceilings_even_without_the_allowance(monkeypatch):
    monkeypatch.setattr(source, "RATIO_ALLOWANCE", 0)
    plain = load_trace(EXAMPLE).requests
    for pack in PACKERS.values():
        assert load_trace(pack(EXAMPLE)).requests.equals(plain)


@pytest.mark.parametrize(
    "pack, message",
    [
        (bytes, "the text is more than 1,000 bytes, the limit"),
        (PACKERS["gzip"], "the gzip data decompresses to more than 1,000 bytes, the limit"),
    ],
)
def test_text_past_its_limit(pack, message):
    with pytest.raises(InputError) as err:
        load_trace(pack(EXAMPLE), limits=Limits(len(EXAMPLE), 1000))
    assert _one_line(err) == message


def test_the_limits_in_one_sentence():
    assert UPLOADS.describe() == (
        "Up to 200 MiB as given (a compressed file counts compressed), 2 GiB of text once decompressed, "
        "10,000,000 requests and 200,000,000 block ids; a gzip file that expands more than 100×, or a zstd "
        "file more than 400×, is refused as a decompression bomb."
    )
    assert FILES.describe().startswith(
        "Up to 64 GiB as given (a compressed file counts compressed), 64 GiB of "
        "text once decompressed, 100,000,000 requests and 1,000,000,000 block ids;"
    )


# ---------------------------------------------------------------- truncation and multi-member files


def test_a_zstd_file_whose_second_frame_is_cut_short_is_refused():
    data = EXAMPLE
    cut = data.index(b"\n", len(data) // 2) + 1
    first, second = (zstandard.ZstdCompressor().compress(part) for part in (data[:cut], data[cut:]))
    assert load_trace(first + second).n_requests == 2000
    with pytest.raises(InputError) as err:
        load_trace(first + second[: len(second) // 2])
    assert _one_line(err) == "the zstd file is truncated"


def test_a_zstd_window_over_128_mib_is_named():
    params = zstandard.ZstdCompressionParameters(window_log=28, enable_ldm=True)
    stream = zstandard.ZstdCompressor(compression_params=params).compressobj()
    data = stream.compress(fx.jsonl(fx.MOONCAKE)) + stream.flush()
    with pytest.raises(InputError, match="needs a window of more than 128 MiB"):
        load_trace(data)


def test_a_gzip_member_over_32x_and_over_a_chunk_is_read_exactly():
    body = LINE * (CHUNK_BYTES * 3 // 2 // len(LINE))
    first, second = gzip.compress(body, 6, mtime=0), gzip.compress(LINE * 3, 6, mtime=0)
    assert len(body) / len(first) > 32 and CHUNK_BYTES < len(body) < RATIO_ALLOWANCE
    assert b"".join(Text(io.BytesIO(first + second), FILES)) == body + LINE * 3
    assert load_trace(first + second).n_requests == len(body) // len(LINE) + 3


def _members(parts: list[bytes], pack) -> tuple[bytes, int]:
    """The parts packed one after another, and where the last one starts."""
    head = b"".join(pack(p) for p in parts[:-1])
    return head + pack(parts[-1]), len(head)


@settings(max_examples=40)
@given(
    parts=st.lists(st.binary(min_size=1, max_size=3000), min_size=1, max_size=4),
    chunk=st.integers(1, 400),
    read=st.integers(1, 64),
    data=st.data(),
)
def test_members_and_frames_read_exactly_and_any_cut_inside_the_last_is_truncation(parts, chunk, read, data):
    """Whatever the chunk and read sizes (zlib's output limit, the bytes read at a time)."""
    for name, pack in (("gzip", lambda b: gzip.compress(b, mtime=0)), ("zstd", zstandard.ZstdCompressor().compress)):
        packed, last = _members(parts, pack)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(source, "CHUNK_BYTES", chunk)
            mp.setattr(source, "READ_BYTES", read)
            assert b"".join(Text(io.BytesIO(packed), FILES)) == b"".join(parts)
            # past the magic bytes: cut inside them, the file is no longer recognisable as either
            cut = data.draw(st.integers(max(last + 1, 4), len(packed) - 1), label=f"{name} cut")
            with pytest.raises(InputError, match=f"^the {name} file is truncated$"):
                b"".join(Text(io.BytesIO(packed[:cut]), FILES))


def test_a_truncated_gzip_is_still_refused():
    with pytest.raises(InputError, match="^the gzip file is truncated$"):
        load_trace(gzip.compress(EXAMPLE)[:-100])


# ---------------------------------------------------------------- requests and ids, before they are kept


def test_requests_past_the_limit_are_refused_naming_the_command_line():
    with pytest.raises(InputError) as err:
        load_trace(fx.jsonl(fx.MOONCAKE), limits=Limits(MIB, MIB, requests=2))
    assert _one_line(err) == "line 3: more than 2 requests (the command line reads up to 100,000,000); cut the trace"


def test_block_ids_past_the_limit_are_refused():
    with pytest.raises(InputError) as err:
        load_trace(fx.jsonl(fx.MOONCAKE), limits=Limits(MIB, MIB, block_ids=6))
    assert _one_line(err) == (
        "line 3: more than 6 block ids (the command line reads up to 1,000,000,000); cut the trace"
    )
    assert load_trace(fx.jsonl(fx.MOONCAKE), limits=Limits(MIB, MIB, block_ids=7)).blocks.size == 7


def test_running_out_of_memory_is_one_line(monkeypatch):
    def no_memory(*args):
        raise MemoryError

    monkeypatch.setattr(ingest, "_concat", no_memory)
    with pytest.raises(InputError) as err:
        load_trace(fx.jsonl(fx.MOONCAKE))
    assert _one_line(err) == (
        "not enough free memory to load this trace (3 requests and 7 block ids read); cut the trace"
    )


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.lists(st.integers(0, 99), max_size=5)), min_size=2, max_size=30),
    st.integers(1, 8),
)
def test_sorting_by_arrival_moves_each_request_s_ids_a_slice_at_a_time(requests, slice_ids):
    times = np.array([t for t, _ in requests])
    counts = np.array([len(ids) for _, ids in requests])
    blocks = np.array([i for _, ids in requests for i in ids], np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(model, "SORT_SLICE", slice_ids)
        frame, moved, new_offsets, _ = model.sort_by_arrival({"timestamp": times}, blocks, offsets)
    order = np.argsort(times, kind="stable")
    assert moved.tolist() == [i for k in order for i in requests[k][1]] and moved.dtype == np.int32
    assert np.diff(new_offsets).tolist() == counts[order].tolist() and frame["timestamp"].tolist() == sorted(times)


@settings(max_examples=40)
@given(
    st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4), min_size=1, max_size=8),
    st.sampled_from([" ", "  "]),
)
def test_csv_ids_read_exactly_whatever_the_spacing_and_empty_rows(rows, gap):
    lines = [f"{k},{512 * len(ids) or 1},1,{gap.join(map(str, ids))}" for k, ids in enumerate(rows)]
    options = ReadOptions(block_size=512, rechain=False)
    text = ("timestamp,input_length,output_length,hash_ids\n" + "\n".join(lines) + "\n").encode()
    if any(len(ids) == 0 for ids in rows):  # an empty list needs input_length 0: not a request
        with pytest.raises(InputError, match="input_length"):
            load_trace(text, options=options)
        return
    trace = load_trace(text, options=options)
    flat = [i for ids in rows for i in ids]
    if all(0 <= i < 2**31 for i in flat):
        assert trace.blocks.tolist() == flat
    assert np.diff(trace.offsets).tolist() == [len(ids) for ids in rows]


# ---------------------------------------------------------------- huge numbers in plain words

HUGE = [
    (
        b'{"timestamp": 0, "input_length": 10, "output_length": 1}\n'
        b'{"timestamp": 1e308, "input_length": 10, "output_length": 1}\n',
        None,
        "line 2, field 'timestamp': 1e+308 milliseconds is out of range for a time (at most 1e+18 milliseconds, "
        "32 million years)",
    ),
    (
        b'{"timestamp": 1e308, "input_length": 10, "output_length": 1}\n',
        TimeUnit.S,
        "line 1, field 'timestamp': 1e+308 seconds is out of range for a time (at most 1e+15 seconds, "
        "32 million years)",
    ),
    (
        b"arrival_time,num_prefill_tokens,num_decode_tokens\n0,1,1\n2000000000000000,1,1\n",
        None,
        "line 3, field 'arrival_time': 2e+15 seconds is out of range for a time (at most 1e+15 seconds, "
        "32 million years)",
    ),
]


@pytest.mark.parametrize("data, unit, message", HUGE)
def test_a_time_beyond_any_trace_is_refused_without_a_warning(data, unit, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as err:
            load_trace(data, options=ReadOptions(time_unit=unit))
    assert _one_line(err) == message


def test_huge_times_are_skipped_by_reason():
    data = HUGE[0][0] + b'{"timestamp": 5, "input_length": 10, "output_length": 1}\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = load_trace(data, options=ReadOptions(skip_bad_rows=True))
    assert trace.requests["timestamp"].tolist() == [0, 5]
    assert "skipped 1 bad row: 1 × timestamp: out of range (line 2)" in trace.warnings


def test_the_command_line_says_it_in_one_line_without_a_warning(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_bytes(HUGE[0][0])
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of range for a time" in err and "Warning" not in err
