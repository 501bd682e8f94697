"""Browser: the Eviction page with an uploaded trace, prefix mode and a bad file (its views are opened by the
layout test, its controls changed and reopened by the link test)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from kvviz.traces.workload import WorkloadConfig, generate
from tests.e2e.browser import assert_no_exception, open_page, screenshot, upload, wait_idle

NO_IDS = b"timestamp,input_length,output_length\n0,1000,5\n400,1200,9\n"


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the policy kernels here, once, so the server loads them from numba's disk cache."""
    from kvviz.eviction.replay import warm_up

    warm_up()


def _upload(page: Page, name: str, data: bytes) -> None:
    upload(
        page.get_by_test_id("stFileUploaderDropzoneInput"),
        [{"name": name, "mimeType": "application/octet-stream", "buffer": data}],
    )


def test_uploaded_trace_prefix_mode_and_a_bad_file(page: Page, app_url: str):
    trace = generate(WorkloadConfig(requests=250, seed=5))
    open_page(page, app_url, "eviction", "eviction_source=Upload&eviction_policies=FIFO&eviction_policies=S3-FIFO")
    _upload(page, "mine.jsonl", trace.to_jsonl().encode())
    assert_no_exception(page)
    expect(page.get_by_text(f"{len(trace.blocks):,} block accesses")).to_be_visible()
    page.get_by_test_id("stSidebarUserContent").get_by_text("Prefix mode").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    screenshot(page, "eviction_upload_prefix")
    _upload(page, "lengths.csv", NO_IDS)
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("no block ids")
