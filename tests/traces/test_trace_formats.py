"""Every supported format, built from its documented schema, loads exactly; compression, time
units, column maps, re-chaining and skipped rows say what they did."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from kvviz.common.errors import InputError
from kvviz.traces import Format, Limits, ReadOptions, TimeUnit, load_trace
from tests import fixtures as fx


def test_mooncake_fixture():
    trace = load_trace(fx.jsonl(fx.MOONCAKE))
    assert trace.blocks.tolist() == [0, 1, 0, 0, 1, 2, 3] and trace.block_size == 512
    assert "Mooncake" in trace.how_read[0]


def test_qwen_bailian_is_detected_read_in_seconds_with_16_token_blocks():
    trace = load_trace(fx.jsonl(fx.QWEN))
    assert trace.block_size == 16
    assert trace.requests["timestamp"].tolist() == [500, 61114, 62000, 63250]
    assert trace.requests["chat_id"].tolist() == [1, 2, 3, 4]
    assert trace.requests["turn"].tolist() == [1, 2, 1, 1]
    assert trace.requests["type"].tolist() == ["text", "text", "search", "image"]
    assert trace.warnings == ()
    assert any("seconds" in n for n in trace.how_read)


def test_qwen_ids_are_rechained_by_default_and_the_lost_hits_reported():
    trace = load_trace(fx.jsonl(fx.QWEN))
    hits = len(trace.blocks) - len(np.unique(trace.blocks))
    assert hits == fx.QWEN_HITS_AFTER
    assert trace.hash_ids(0).tolist() == trace.hash_ids(1).tolist()[:3]  # a real shared prefix
    assert trace.hash_ids(2)[1] not in trace.hash_ids(0)  # id 2 after block 7: no prefix
    note = next(n for n in trace.how_read if "re-chained" in n)
    lost = fx.QWEN_HITS_BEFORE - fx.QWEN_HITS_AFTER
    assert f"{lost:,} of {fx.QWEN_HITS_BEFORE:,} infinite-cache hits" in note


def test_qwen_rechaining_can_be_turned_off():
    trace = load_trace(fx.jsonl(fx.QWEN), options=ReadOptions(rechain=False))
    assert trace.hash_ids(2).tolist() == [7, 2, 3]
    assert len(trace.blocks) - len(np.unique(trace.blocks)) == fx.QWEN_HITS_BEFORE
    assert any("NOT chained" in n for n in trace.how_read)


def test_qwen_read_as_mooncake_is_refused_by_the_id_count():
    with pytest.raises(InputError, match="needs ceil"):
        load_trace(fx.jsonl(fx.QWEN), options=ReadOptions(format=Format.MOONCAKE))


def test_burstgpt_columns():
    trace = load_trace(fx.BURSTGPT_CSV)
    assert trace.requests["timestamp"].tolist() == [5000, 45000, 118500]
    assert trace.requests["input_length"].tolist() == [472, 1087, 417]
    assert trace.requests["output_length"].tolist() == [18, 160, 1119]
    assert not trace.has_block_ids


def test_azure_2024_date_times():
    trace = load_trace(fx.AZURE_2024_CSV)
    assert trace.requests["timestamp"].tolist() == [0, 500, 1991]
    assert any("date-times" in n for n in trace.how_read)


def test_csv_column_map_with_a_chosen_unit():
    opts = ReadOptions(
        columns=(("arrival", "t_us"), ("input", "prompt"), ("output", "completion"), ("hash_ids", "blocks")),
        time_unit=TimeUnit.US,
    )
    trace = load_trace(fx.MAPPED_CSV, options=opts)
    assert trace.requests["timestamp"].tolist() == [1, 11]
    assert trace.blocks.tolist() == [1, 2, 1]


def test_column_map_naming_a_missing_column():
    opts = ReadOptions(columns=(("arrival", "nope"), ("input", "prompt"), ("output", "completion")))
    with pytest.raises(InputError, match="nope"):
        load_trace(fx.MAPPED_CSV, options=opts)


@pytest.mark.parametrize("pack", [fx.gz, fx.zst])
def test_compressed_files_are_detected_by_their_bytes(pack, tmp_path):
    data = fx.jsonl(fx.QWEN)
    path = tmp_path / "trace.txt"  # the name says nothing
    path.write_bytes(pack(data))
    assert load_trace(path).requests.equals(load_trace(data).requests)
    assert load_trace(pack(data)).requests.equals(load_trace(data).requests)


@pytest.mark.parametrize("pack", [fx.gz, fx.zst])
def test_decompressed_size_is_capped_while_streaming(pack):
    bomb = pack(b"\n" * 50_000_000)
    with pytest.raises(InputError, match="decompresses to more than"):
        load_trace(bomb, limits=Limits(len(bomb) + 10, 1_000_000))


def test_multi_member_gzip():
    data = fx.jsonl(fx.MOONCAKE)
    assert load_trace(gzip.compress(data[:80]) + gzip.compress(data[80:])).n_requests == 3


def test_corrupt_gzip_is_an_input_error():
    with pytest.raises(InputError, match="gzip"):
        load_trace(fx.gz(fx.jsonl(fx.MOONCAKE))[:-12] + b"garbage-bytes")


def test_zip_is_named():
    with pytest.raises(InputError, match="zip"):
        load_trace(b"PK\x03\x04rest")


# ---------------------------------------------------------------- time units


def test_seconds_read_as_ms_cannot_pass_silently():
    data = b"".join(b'{"timestamp": %.3f, "input_length": 10, "output_length": 1}\n' % (i * 0.25) for i in range(5))
    trace = load_trace(data, options=ReadOptions(format=Format.MOONCAKE))
    assert any("fractions" in w and "--time-unit s" in w for w in trace.warnings)
    chosen = load_trace(data, options=ReadOptions(time_unit=TimeUnit.S))
    assert chosen.warnings == () and chosen.requests["timestamp"].tolist() == [0, 250, 500, 750, 1000]


def test_integer_seconds_read_as_ms_warn_by_their_rate():
    data = b"".join(b'{"timestamp": %d, "input_length": 10, "output_length": 1}\n' % (i // 100) for i in range(300))
    trace = load_trace(data)
    assert any("implausibly fast" in w for w in trace.warnings)


def test_epoch_ms_timestamps_load_rebased():
    base = 1_717_000_000_000
    data = b"".join(
        b'{"timestamp": %d, "input_length": 10, "output_length": 1}\n' % (base + 1000 * i) for i in range(3)
    )
    trace = load_trace(data)
    assert trace.requests["timestamp"].tolist() == [0, 1000, 2000]
    assert any("rebased" in n for n in trace.how_read)


def test_epoch_seconds_read_as_ms_are_flagged():
    data = b'{"timestamp": 1717000000, "input_length": 10, "output_length": 1}\n'
    trace = load_trace(data)
    assert any("epoch time in seconds" in w for w in trace.warnings)


# ---------------------------------------------------------------- bad rows

BAD_ROWS = (
    b'{"timestamp": 0, "input_length": 10, "output_length": 1}\n'
    b'{"timestamp": "x", "input_length": 10, "output_length": 1}\n'
    b'{"timestamp": 2, "input_length": -1, "output_length": 1}\n'
    b"not json\n"
    b'{"timestamp": 4, "input_length": 10, "output_length": 1}\n'
    b'{"timestamp": 5, "input_length": 0, "output_length": 1}\n'
)


def test_strict_by_default():
    with pytest.raises(InputError) as err:
        load_trace(BAD_ROWS)
    assert (err.value.line, err.value.field) == (2, "timestamp")


def test_skip_bad_rows_reports_reasons_and_lines():
    trace = load_trace(BAD_ROWS, options=ReadOptions(skip_bad_rows=True))
    assert trace.requests["timestamp"].tolist() == [0, 4]
    summary = next(w for w in trace.warnings if "skipped" in w)
    assert "skipped 4 bad rows" in summary
    assert "2 × input_length: too small (lines 3, 6)" in summary
    assert "timestamp: not a number (line 2)" in summary and "line: not valid JSON (line 4)" in summary


def test_skip_bad_csv_rows():
    data = b"arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,1\n1,x,1\n2,10\n3,10,1\n"
    trace = load_trace(data, options=ReadOptions(skip_bad_rows=True))
    assert trace.requests["timestamp"].tolist() == [0, 3000]
    assert "skipped 2 bad rows" in trace.warnings[0]


def test_all_rows_bad():
    with pytest.raises(InputError, match="no usable rows"):
        load_trace(b"nope\nnope\n", options=ReadOptions(skip_bad_rows=True, format=Format.MOONCAKE))


# ---------------------------------------------------------------- the fast path agrees with the slow one


def test_large_files_take_the_fast_path_and_agree(monkeypatch):
    from kvviz.traces import formats

    rows = [
        {
            "timestamp": i,
            "input_length": 1 + i % 2000,
            "output_length": i % 7,
            "hash_ids": list(range(-(-(1 + i % 2000) // 512))),
        }
        for i in range(5000)
    ]
    data = fx.jsonl(rows)
    fast = load_trace(data)
    monkeypatch.setattr(formats, "jsonl_fast", lambda *a: None)
    slow = load_trace(data)
    assert fast.requests.equals(slow.requests) and np.array_equal(fast.blocks, slow.blocks)


def test_ids_beyond_32_bits_are_renumbered_densely():
    data = (
        b'{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [9000000000000, -5]}\n'
        b'{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [9000000000000]}\n'
    )
    trace = load_trace(data)
    assert trace.blocks.dtype == np.int32 and trace.blocks.tolist() == [0, 1, 0]
    assert any("renumbered" in n for n in trace.how_read)


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    "name, data, extra, requests, words",
    [
        ("mooncake.jsonl", fx.jsonl(fx.MOONCAKE), [], 3, "Mooncake"),
        ("qwen.jsonl.zst", fx.zst(fx.jsonl(fx.QWEN)), [], 4, "re-chained"),
        ("qwen-raw.jsonl", fx.jsonl(fx.QWEN), ["--no-rechain"], 4, "NOT chained"),
        ("burst.csv.gz", fx.gz(fx.BURSTGPT_CSV), [], 3, "Request tokens"),
        ("azure.csv", fx.AZURE_2024_CSV, [], 3, "date-times"),
        (
            "mapped.csv",
            fx.MAPPED_CSV,
            ["--columns", "arrival=t_us,input=prompt,output=completion,hash_ids=blocks", "--time-unit", "us"],
            2,
            "t_us",
        ),
        ("bad.jsonl", fx.jsonl(fx.MOONCAKE) + b"oops\n", ["--skip-bad-rows"], 3, "skipped 1 bad row"),
    ],
)
def test_every_format_through_the_cli(tmp_path, capsys, name, data, extra, requests, words):
    import json as _json

    from kvviz.cli import main

    path = tmp_path / name
    path.write_bytes(data)
    assert main(["stats", str(path), "--how-read", *extra]) == 0
    out = _json.loads(capsys.readouterr().out)
    assert out["requests"] == requests
    assert words in " ".join(out["how_read"])


def test_cli_seconds_as_ms_warn_and_bad_input_is_one_line(tmp_path, capsys):
    import json as _json

    from kvviz.cli import main

    path = tmp_path / "secs.jsonl"
    path.write_bytes(b'{"timestamp": 0.5, "input_length": 10, "output_length": 1}\n')
    assert main(["stats", str(path), "--how-read", "--format", "mooncake"]) == 0
    assert "--time-unit s" in " ".join(_json.loads(capsys.readouterr().out)["warnings"])
    path.write_bytes(b'{"timestamp": 0, "input_length": "ten", "output_length": 1}\n')
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 1, field 'input_length'" in err
