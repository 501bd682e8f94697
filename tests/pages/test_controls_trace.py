"""AppTest: no dead controls on the Trace page, every control in the URL.

For a small synthetic workload, the example and an uploaded Qwen-Bailian file, every control is
changed in turn (and put back) and what the viewer sees must change (helpers in
``tests/pages/page_controls.py``). The file itself and the button that keeps it are not settings. Another
source unmounts the uploader, and its file with it, but the session keeps the upload: coming back to
Upload shows it again.
"""

from __future__ import annotations

import pytest

from kvviz.traces import library
from tests import fixtures as fx
from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import assert_every_control_counts, shown

KNOBS = {"trace_requests", "trace_seed", "trace_qa", "trace_chat", "trace_oneshot", "trace_docs", "trace_zipf"}
READING = {"trace_format", "trace_block_size", "trace_time_unit", "trace_skip_bad", "trace_rechain"}
FILE = ("trace_upload", "trace_keep")  # the file and its keep button
SAID = ("trace_format", "trace_skip_bad")  # no change on a good file in the format detected: the page says so


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "lib"))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"trace_source": "Synthetic", "trace_requests": "300"}, {"trace_source", "trace_rate"} | KNOBS),
        ({"trace_source": "Example"}, {"trace_source"}),
    ],
    ids=["synthetic", "example"],
)
def test_every_control_changes_what_is_shown(query, expected):
    at = open_page("trace", query)
    assert set(assert_every_control_counts(at, "trace", set())) == expected


def test_every_reading_control_changes_what_an_upload_shows():
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("qwen.jsonl", fx.jsonl(fx.QWEN), "text/plain").run()
    assert_clean(at)
    # any block size that gives each prompt as many blocks as it has ids: 40 tokens in 3 ids, 14 to 19 tokens
    values = {"trace_block_size": 14}
    said = " ".join(m.value for m in at.markdown)
    assert "detected from the fields" in said and "no rows skipped" in said  # why those two change nothing here
    changed = assert_every_control_counts(at, "trace", set(), values=values, skip=FILE + SAID)
    assert set(changed) == READING - set(SAID) | {"trace_source"}
    # the format it was detected as reads it the same; another one reads it otherwise, here refused
    at.sidebar.selectbox(key="trace_format").select("Mooncake JSONL (FAST'25)").run()
    assert_clean(at)
    assert [e.value for e in at.error] == [
        "line 1, the block\\-hash column\\: 3 ids, "
        "but input\\_length 40 needs ceil\\(40/512\\) \\= 1 \\(block size 512\\)"
    ]


def test_an_upload_is_still_there_after_another_source_and_back():
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("qwen.jsonl", fx.jsonl(fx.QWEN), "text/plain").run()
    uploaded = shown(at)
    for source in ("Example", "Upload"):
        at.sidebar.segmented_control(key="trace_source").set_value(source).run()
        assert_clean(at)
    assert at.sidebar.file_uploader(key="trace_upload").value is None  # the uploader forgot the file
    assert "Showing the trace you uploaded earlier in this session." in [c.value for c in at.sidebar.caption]
    assert shown(at)[:3] == uploaded[:3]  # the same figures and tables
