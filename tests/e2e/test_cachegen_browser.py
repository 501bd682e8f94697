"""Browser: the CacheGen page with every bandwidth source, the sweep, the codec view and bad uploads."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

CSV = b"time_s,gbps\n0,8\n0.2,0.8\n0.6,4\n"


def test_timeline_with_each_built_in_source(page: Page, app_url: str):
    open_page(page, app_url, "cachegen")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    screenshot(page, "cachegen_timeline")
    for label in ("i.i.d.", "Step"):
        page.get_by_test_id("stSidebar").get_by_text(label, exact=True).click()
        wait_idle(page)
        assert_no_exception(page)
    expect(page.get_by_text("step 10 → 1 → 5 Gb/s").first).to_be_visible()
    screenshot(page, "cachegen_step")


def test_upload_good_and_bad_bandwidth(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_bw=Upload")
    upload = page.get_by_test_id("stFileUploaderDropzoneInput")
    upload.set_input_files(files=[{"name": "bw.csv", "mimeType": "text/csv", "buffer": CSV}])
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("bw.csv").first).to_be_visible()
    upload.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv", "buffer": b"0,5\n1,-3\n"}])
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("line 2")


def test_violation_and_codec_views(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_view=Violation+vs+SLO&cachegen_k=100")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    screenshot(page, "cachegen_violation")
    open_page(page, app_url, "cachegen",
              "cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32")
    assert_no_exception(page)
    expect(page.get_by_text("exact").first).to_be_visible()
    screenshot(page, "cachegen_codec")


def test_presenter_mode_timeline(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_bw=Step&cachegen_k=100")
    page.get_by_text("Presenter mode").click()
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, "cachegen_presenter")


def test_record_world_model_source(page: Page, app_url: str):
    from kvviz.cachegen import model_kv
    if not model_kv.available():
        import pytest
        pytest.skip("record-world weights not trained yet")
    open_page(page, app_url, "cachegen", "cachegen_view=Codec&cachegen_kvsource=Record-world+model&cachegen_docs=40")
    assert_no_exception(page)
    expect(page.get_by_text("questions right").first).to_be_visible()
    wait_idle(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    expect(page.get_by_test_id("stPlotlyChart").locator(".main-svg").first).to_be_visible()
    assert_no_exception(page)
    screenshot(page, "cachegen_model")


def test_violation_against_mean_bandwidth(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_view=Violation+vs+SLO&cachegen_against=Mean+bandwidth&cachegen_k=300")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    screenshot(page, "cachegen_by_bandwidth")


def test_violation_against_persistence(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_view=Violation+vs+SLO&cachegen_against=Persistence&cachegen_k=300")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    screenshot(page, "cachegen_by_persistence")
