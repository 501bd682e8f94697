"""Browser: the CacheGen page with every bandwidth source, the three sweeps, the codec view (synthetic
and, when its weights exist, the record-world model), bad uploads and presenter mode."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, screenshot, wait_idle

CSV = b"time_s,gbps\n0,8\n0.2,0.8\n0.6,4\n"


def click(page: Page, text: str, where: str = "stSidebar") -> None:
    page.get_by_test_id(where).get_by_text(text, exact=True).click()
    wait_idle(page)
    assert_no_exception(page)


def test_timeline_with_each_built_in_source(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_k=100")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
    screenshot(page, "cachegen_timeline")
    click(page, "i.i.d.")
    click(page, "Step")
    expect(page.get_by_text("step 10 → 1 → 5 Gb/s").first).to_be_visible()
    screenshot(page, "cachegen_step")
    page.get_by_text("Presenter mode").click()
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, "cachegen_presenter")


def test_upload_good_and_bad_bandwidth(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_bw=Upload")
    upload = page.get_by_test_id("stFileUploaderDropzoneInput")
    upload.set_input_files(files=[{"name": "bw.csv", "mimeType": "text/csv", "buffer": CSV}])
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_text("SLO 1 s (bw.csv)")).to_be_visible()      # the script ran on the upload
    wait_idle(page)
    upload.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv", "buffer": b"0,5\n1,-3\n"}])
    wait_idle(page)
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("line 2")


def test_violation_sweeps(page: Page, app_url: str):
    open_page(page, app_url, "cachegen", "cachegen_view=Violation+vs+SLO&cachegen_k=100")
    assert_no_exception(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    screenshot(page, "cachegen_violation")
    for against, name in (("Mean bandwidth", "cachegen_by_bandwidth"), ("Persistence", "cachegen_by_persistence")):
        click(page, against, "stMain")
        expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
        screenshot(page, name)


def test_codec_views(page: Page, app_url: str):
    from kvviz.cachegen import model_kv

    open_page(page, app_url, "cachegen",
              "cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32")
    assert_no_exception(page)
    expect(page.get_by_text("exact").first).to_be_visible()
    screenshot(page, "cachegen_codec")
    if model_kv.available():
        click(page, "Record-world model")
        expect(page.get_by_text("questions right").first).to_be_visible()
        expect(page.get_by_test_id("stPlotlyChart").locator(".main-svg").first).to_be_visible()
        screenshot(page, "cachegen_model")
