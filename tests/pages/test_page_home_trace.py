"""AppTest: the home page's map and the Trace page with every source, good and bad uploads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvviz.common.catalog import PAGES
from tests.conftest import assert_clean, open_page, shown

pytestmark = pytest.mark.shared_caches

ROOT = Path(__file__).resolve().parents[2]
GOOD = (
    b'{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]}\n'
    b'{"timestamp": 9, "input_length": 600, "output_length": 5, "hash_ids": [0, 2]}\n'
)


def test_home_lists_every_built_page_and_the_presenter_toggle():
    at = open_page("home")
    assert_clean(at)
    assert at.title[0].value.startswith("kvviz")
    built = [p for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]
    text = " ".join(m.value for m in at.markdown)
    for info in built:
        assert info.blurb in text
    assert at.sidebar.toggle(key="presenter").value is False


def test_trace_page_synthetic_default():
    at = open_page("trace")
    assert_clean(at)
    assert at.title[0].value == "Trace"
    labels = [m.label for m in at.metric]
    assert "Reusable (∞ cache)" in labels and "Never reused" in labels
    assert len(at.get("plotly_chart")) == 3  # arrivals, popularity, reuse distances; the prefix tree folded
    assert at.subheader[-1].value == "What the paper reports vs this simulation"
    opened = open_page("trace", {"trace_tree": "true"})  # the fold's state is in the URL
    assert_clean(opened)
    assert len(opened.get("plotly_chart")) == 4


def test_trace_page_example_and_url_parameters():
    at = open_page("trace", {"trace_source": "Synthetic", "trace_requests": "500", "trace_seed": "4"})
    assert_clean(at)
    assert at.metric[0].value == "500"
    at.sidebar.segmented_control(key="trace_source").set_value("Example").run()
    assert_clean(at)
    assert at.metric[0].value == "2,000"


def test_upload_good_then_bad_trace():
    at = open_page("trace", {"trace_source": "Upload"})
    assert_clean(at)
    assert at.info  # asks for a file
    at.sidebar.file_uploader(key="trace_upload").upload("t.jsonl", GOOD, "application/json").run()
    assert_clean(at)
    assert at.metric[0].value == "2" and not at.error
    bad = b'{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0]}\n'
    at.sidebar.file_uploader(key="trace_upload").upload("bad.jsonl", bad, "application/json").run()
    assert_clean(at)
    assert at.error and "line 1" in at.error[0].value and "the block-hash column" in shown(at.error[0].value)


def test_upload_without_block_ids_warns():
    at = open_page("trace", {"trace_source": "Upload"})
    csv = b"arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,4\n1,200,5\n"
    at.sidebar.file_uploader(key="trace_upload").upload("v.csv", csv, "text/csv").run()
    assert_clean(at)
    assert any("no block ids" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == 1


def test_bad_generator_knobs_show_an_error():
    at = open_page("trace", {"trace_qa": "0", "trace_chat": "0", "trace_oneshot": "0"})
    assert_clean(at)
    assert at.error and "shares" in at.error[0].value


def test_presenter_mode_persists_across_pages():
    at = open_page("home")
    at.sidebar.toggle(key="presenter").set_value(True).run()
    at.switch_page("pages/trace.py").run()
    assert_clean(at)
    assert at.sidebar.toggle(key="presenter").value is True
    assert at.expander  # explanations folded away


def test_an_upload_survives_a_visit_to_another_page():
    at = open_page("trace", {"trace_source": "Upload"})
    at.sidebar.file_uploader(key="trace_upload").upload("t.jsonl", GOOD, "application/json").run()
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/trace.py").run()
    assert_clean(at)
    assert at.metric[0].value == "2"
