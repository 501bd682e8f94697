"""AppTest: every format through an upload, reading controls, keeping an upload in the library,
and a library trace named in the URL."""

from __future__ import annotations

import pytest

from kvviz.traces import library, load_trace
from tests import fixtures as fx
from tests.conftest import assert_clean, open_page


@pytest.fixture(autouse=True)
def lib(tmp_path, monkeypatch):
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "lib"))
    return tmp_path / "lib"


def _upload(at, name: str, data: bytes):
    at.sidebar.file_uploader(key="trace_upload").upload(name, data, "application/octet-stream").run()
    assert_clean(at)
    return at


def _how_read(at) -> str:
    return " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize(
    "name, data, requests, words",
    [
        ("mooncake.jsonl", fx.jsonl(fx.MOONCAKE), "3", "Mooncake"),
        ("qwen.jsonl.zst", fx.zst(fx.jsonl(fx.QWEN)), "4", "re\\-chained"),
        ("burst.csv.gz", fx.gz(fx.BURSTGPT_CSV), "3", "Request tokens"),
        ("azure.csv", fx.AZURE_2024_CSV, "3", "date\\-times"),
    ],
)
def test_every_format_loads_through_an_upload(name, data, requests, words):
    at = _upload(open_page("trace", {"trace_source": "Upload"}), name, data)
    assert not at.error and at.metric[0].value == requests
    assert words in _how_read(at)
    assert any(name.replace(".", "\\.") in c.value for c in at.caption)  # named after its file, escaped


def test_date_times_with_sub_millisecond_digits_upload_with_no_time_unit_note():
    at = _upload(open_page("trace", {"trace_source": "Upload"}), "azure.csv", fx.AZURE_2023_CSV)
    assert not [w for w in at.warning if "time" in w.value] and at.metric[1].value == "3,435 s"
    assert "Time unit" not in _how_read(at) and "\\-\\-time\\-unit" not in _how_read(at)


def test_seconds_uploaded_as_ms_warn_and_the_time_unit_control_fixes_it():
    data = b"".join(b'{"timestamp": %.2f, "input_length": 10, "output_length": 1}\n' % (i * 0.5) for i in range(4))
    at = _upload(open_page("trace", {"trace_source": "Upload", "trace_format": "mooncake"}), "t.jsonl", data)
    assert at.sidebar.selectbox(key="trace_format").value == "Mooncake JSONL (FAST'25)"  # a link with the code
    assert at.query_params["trace_format"] == "Mooncake JSONL (FAST'25)"
    assert at.warning[0].value == (
        "the times have fractions and were read as milliseconds \\(rounded to whole ms\\); if they are seconds, "
        "set Time unit to s under “How to read the file”"
    )
    at.sidebar.segmented_control(key="trace_time_unit").set_value("s").run()
    assert_clean(at)
    assert not any("fractions" in w.value for w in at.warning)
    assert at.metric[1].value == "2 s"


def test_skip_bad_rows_toggle():
    data = fx.jsonl(fx.MOONCAKE) + b"not json\n"
    at = _upload(open_page("trace", {"trace_source": "Upload"}), "t.jsonl", data)
    assert at.error and "line 4" in at.error[0].value
    at.sidebar.toggle(key="trace_skip_bad").set_value(True).run()
    assert_clean(at)
    assert not at.error and any("skipped 1 bad row" in w.value for w in at.warning)


def test_an_upload_kept_in_the_library_opens_by_id_from_the_url():
    at = _upload(open_page("trace", {"trace_source": "Upload"}), "kept.jsonl", fx.jsonl(fx.QWEN))
    at.button(key="trace_keep").click().run()
    assert_clean(at)
    [entry] = library.entries()
    assert entry.name == "kept.jsonl"
    assert at.sidebar.segmented_control(key="trace_source").value == "Library"
    assert at.sidebar.selectbox(key="trace_library").value == entry.id and at.metric[0].value == "4"
    fresh = open_page("trace", {"trace_source": "Library", "trace_library": entry.id})
    assert_clean(fresh)
    assert fresh.metric[0].value == "4" and "kept" in " ".join(c.value for c in fresh.caption)


def test_library_source_lists_imported_traces():
    entry = library.store(load_trace(fx.jsonl(fx.MOONCAKE)), "imported").entry
    at = open_page("trace", {"trace_source": "Library"})
    assert_clean(at)
    assert at.sidebar.selectbox(key="trace_library").options == [entry.label()]
    at.sidebar.selectbox(key="trace_library").set_value(entry.id).run()
    assert_clean(at)
    assert at.metric[0].value == "3"


def test_empty_library_says_how_to_fill_it():
    at = open_page("trace", {"trace_source": "Library"})
    assert_clean(at)
    assert any("kvviz import" in c.value for c in at.sidebar.caption)
