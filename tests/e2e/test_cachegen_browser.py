"""Browser: bandwidth uploads on the CacheGen page, good, bad and oddly named (every view is opened by the layout
test, every control changed by the link test; the work-budget click of an expensive link: test_cluster_browser)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import assert_no_exception, open_page, upload, wait_idle
from ui.kit.traces import upload_name

CSV = b"time_s,gbps\n0,8\n0.2,0.8\n0.6,4\n"
LIGHT = "cachegen_k=100"
SYNTHETIC_CODEC = "cachegen_view=Codec&cachegen_layers=4&cachegen_tokens=256&cachegen_channels=32"


def click(page: Page, text: str, where: str = "stSidebar") -> None:
    page.get_by_test_id(where).get_by_text(text, exact=True).click()
    wait_idle(page)
    assert_no_exception(page)


def test_upload_good_bad_and_oddly_named_bandwidth(undrawn: Page, app_url: str):
    """What is checked is text (the trace's name under the table, the error) and that no image was fetched:
    the browser draws no figure or grid (``undrawn``)."""
    page = undrawn
    open_page(page, app_url, "cachegen", "cachegen_bw=Upload")
    box = page.get_by_test_id("stFileUploaderDropzoneInput")
    upload(box, [{"name": "bw.csv", "mimeType": "text/csv", "buffer": CSV}])
    assert_no_exception(page)
    expect(page.get_by_text("SLO 1 s (bw.csv)")).to_be_visible()  # the script ran on the upload
    upload(box, [{"name": "bad.csv", "mimeType": "text/csv", "buffer": b"0,5\n1,1e308\n"}])
    assert_no_exception(page)
    expect(page.get_by_test_id("stAlertContentError")).to_contain_text("line 2, field 'gbps'")
    name = "![x](http://127.0.0.1:9/p.png).csv"
    upload(box, [{"name": name, "mimeType": "text/csv", "buffer": CSV}])
    assert_no_exception(page)
    shown = upload_name(name)  # its last path component, as the library names an upload
    expect(page.get_by_text(f"({shown}):")).to_be_visible(timeout=90_000)  # shown as text (a cold replay)
    expect(page.locator("img[src*='127.0.0.1:9']")).to_have_count(0)  # never fetched as an image
