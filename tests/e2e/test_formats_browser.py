"""Browser: every published trace format loads through an upload on the Trace page, named after
its file, and seconds read as milliseconds cannot pass silently (issue 11's "done when")."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests import fixtures as fx
from tests.e2e.browser import assert_no_exception, open_page, upload

UPLOADS = [
    ("mooncake.jsonl", fx.jsonl(fx.MOONCAKE), "3", "Mooncake"),
    ("qwen.jsonl.zst", fx.zst(fx.jsonl(fx.QWEN)), "4", "re-chained"),
    ("burst.csv.gz", fx.gz(fx.BURSTGPT_CSV), "3", "Request tokens"),
    ("azure.csv", fx.AZURE_2024_CSV, "3", "date-times"),
]
SECONDS = b"".join(b'{"timestamp": %.2f, "input_length": 10, "output_length": 1}\n' % (i * 0.5) for i in range(4))


def _upload(page: Page, name: str, data: bytes) -> None:
    upload(
        page.get_by_test_id("stFileUploaderDropzoneInput"),
        [{"name": name, "mimeType": "application/octet-stream", "buffer": data}],
    )
    assert_no_exception(page)


def test_every_format_uploads_in_the_browser(undrawn: Page, app_url: str):
    """What each upload shows is read from its numbers and words: no figure or grid is drawn."""
    page = undrawn
    open_page(page, app_url, "trace", "trace_source=Upload")
    main = page.get_by_test_id("stMain")
    for name, data, requests, words in UPLOADS:
        _upload(page, name, data)
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(requests)
        expect(main).to_contain_text(words)
        expect(main).to_contain_text(name)
    _upload(page, "seconds.jsonl", SECONDS)
    expect(page.get_by_test_id("stAlertContentWarning").first).to_contain_text("fractions")
