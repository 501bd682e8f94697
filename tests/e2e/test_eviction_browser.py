"""Browser: the Eviction page on the example trace, with an upload, a control change and a bad file."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from kvviz.traces.workload import WorkloadConfig, generate
from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

NO_IDS = b"timestamp,input_length,output_length\n0,1000,5\n400,1200,9\n"


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile the policy kernels here, once, so the server loads them from numba's disk cache."""
    from kvviz.eviction.replay import warm_up

    warm_up()


def _upload(page: Page, name: str, data: bytes) -> None:
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}]
    )
    wait_idle(page)


def test_example_trace_curves_and_presenter_view(page: Page, app_url: str):
    open_page(page, app_url, "eviction", "eviction_source=Example&eviction_range=10&eviction_range=20k")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(2)
    expect(page.get_by_text("What the paper reports vs this simulation")).to_be_visible()
    expect(page.locator(".annotation-text", has_text="leads").first).to_be_visible()  # the leader, named
    page.get_by_text("All policies", exact=True).click()
    wait_idle(page)
    assert "eviction_time_show=All" in page.url  # the over-time view is in the link
    screenshot(page, "eviction")
    page.get_by_text("Presenter mode").click()
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stExpander").first).to_be_visible()  # the teaching text folds away
    screenshot(page, "eviction_presenter")


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
