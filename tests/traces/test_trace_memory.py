"""Memory and work are estimated before they are spent: a trace whose reading needs more memory than
is free is refused from its counted text, before any parse; the command line says so in one line,
and a page asks before a long read (docs/traces.md, *Limits*)."""

from __future__ import annotations

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.common import budget
from kvviz.common.errors import InputError
from kvviz.traces import FILES, MIB, UPLOADS, ingest, load_trace
from kvviz.traces.source import Survey, count_of, survey, text_bound
from tests.conftest import assert_clean, open_page

LINE = (
    b'{"timestamp": %d, "input_length": 512000, "output_length": 1, "hash_ids": [' + b", ".join([b"0"] * 1000) + b"]}\n"
)
REQUESTS = 300


def _many_ids() -> bytes:
    """300 requests of 1,000 ids each (300,000 ids), zstd: 3.9 KB that expand 237 times."""
    return zstandard.ZstdCompressor(level=19).compress(b"".join(LINE % k for k in range(REQUESTS)))


def test_a_survey_counts_without_parsing():
    counted = survey(_many_ids(), UPLOADS)
    text = b"".join(LINE % k for k in range(REQUESTS))
    # ", " between ids: commas and spaces both ~1 per id, plus a record's other fields (7 spaces a line)
    assert counted == Survey(len(text), REQUESTS, REQUESTS * (1000 - 1 + 7))


@given(text=st.binary(max_size=300), byte=st.sampled_from([b"\n", b",", b" ", b"\x00", b"\xff"]))
def test_counting_a_byte_equals_bytes_count(text, byte):
    assert count_of(text, byte) == text.count(byte)


def test_the_need_and_the_work_follow_the_counts():
    counted = Survey(text_bytes=900_000_000, lines=1_000, ids=190_000_000)
    assert ingest.reading_need(counted) == 12 * 190_000_000 + 64 * 1_000 + 320 * MIB
    cost = ingest.reading_cost(counted)
    assert cost.seconds == pytest.approx(190_000_000 / 8.4e6) and budget.needs_confirmation(cost)
    assert ingest.reading_cost(Survey(226_000_000, 1_000_000, 16_500_000)).seconds == pytest.approx(226 / 94)
    assert cost.what == "reading this trace (about 190,000,000 block ids in 1,000 requests, 2.4 GiB of memory)"


def test_too_little_memory_refuses_before_the_parse(monkeypatch):
    monkeypatch.setattr(budget, "free_memory", lambda: 200 * MIB)
    monkeypatch.setattr(ingest._Reader, "read", lambda *a: pytest.fail("parsed before refusing"))
    with pytest.raises(InputError) as err:
        load_trace(_many_ids(), limits=UPLOADS)
    assert str(err.value) == (
        "reading this trace (about 301,800 block ids in 300 requests) needs about 0.3 GiB of memory and "
        f"0.2 GiB is free here; {ingest.TRACE_ADVICE}"
    )


def test_enough_memory_reads_without_counting_first(monkeypatch, tmp_path):
    monkeypatch.setattr(ingest, "survey", lambda *a: pytest.fail("counted a file its size settles"))
    path = tmp_path / "t.jsonl"
    path.write_bytes(LINE % 0)
    assert load_trace(path).n_requests == 1


def test_the_size_bounds_the_text():
    packed = _many_ids()
    assert text_bound(packed, FILES) == 32 * MIB + 400 * len(packed)
    assert text_bound(LINE % 0, FILES) == len(LINE % 0)


def test_the_command_line_refuses_in_one_line(monkeypatch, tmp_path, capsys):
    (tmp_path / "ids.zst").write_bytes(_many_ids())
    monkeypatch.setattr(budget, "free_memory", lambda: 200 * MIB)
    assert main(["stats", str(tmp_path / "ids.zst")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kvviz stats: reading this trace (about 301,800 block ids")


def test_a_page_asks_before_a_long_read_and_reads_when_asked(monkeypatch):
    monkeypatch.setattr(ingest, "IDS_PER_CPU_S", 1e4)  # this small upload now reads for ~30 s
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("ids.zst", _many_ids(), "application/zstd").run()
    assert_clean(at)
    assert not at.metric
    assert "301,800 block ids in 300 requests, 0.3 GiB of memory" in at.info[0].value.replace("\\", "")
    at.button(key="read_upload_confirm").click().run()
    assert_clean(at)
    assert at.metric[0].value == f"{REQUESTS:,}"


def test_a_page_refuses_what_memory_cannot_hold(monkeypatch):
    monkeypatch.setattr(budget, "free_memory", lambda: 200 * MIB)
    at = open_page("trace", {"trace_source": "Upload"})  # another name than above: not parsed yet
    at.sidebar.file_uploader(key="trace_upload").upload("more-ids.zst", _many_ids(), "application/zstd").run()
    assert_clean(at)
    assert not at.metric and "needs about 0.3 GiB of memory and 0.2 GiB is free" in at.error[0].value.replace("\\", "")


def test_a_page_counts_an_upload_once(monkeypatch):
    monkeypatch.setattr(budget, "free_memory", lambda: 400 * MIB)  # enough, though its size cannot say so
    monkeypatch.setattr(ingest, "survey", lambda *a: pytest.fail("counted the upload a second time"))
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("once.zst", _many_ids(), "application/zstd").run()
    assert_clean(at)
    assert at.metric[0].value == f"{REQUESTS:,}"
