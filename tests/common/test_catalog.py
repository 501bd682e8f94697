"""The page titles fit one line of a page's heading on a 900 px window with the sidebar open."""

from __future__ import annotations

from kvviz.common.catalog import PAGES

# Measured in Chromium: the heading has 440 px there; "Scheduling for reuse" (20 characters) fits on one
# line, "Radix cache & HiCache" and "Where should KV live?" (21) wrap to two and push the page down 53 px.
TITLE_CHARS = 20


def test_every_title_fits_one_line_at_900_px_with_the_sidebar_open():
    long = [p.title for p in PAGES if len(p.title) > TITLE_CHARS]
    assert not long, long
