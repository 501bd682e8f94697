"""README.md and docs/: every relative link reaches a file of the checkout, and its #anchor a heading there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def test_anchor_follows_github():
    assert anchor("Bad input") == "bad-input"
    assert anchor("Speed (`bench/bench_hitcurve.py`)") == "speed-benchbench_hitcurvepy"
    assert anchor("Reliability: many viewers, bad URLs") == "reliability-many-viewers-bad-urls"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_reach_files_and_headings(page):
    for target in LINK.findall(re.sub(r"```.*?```", "", page.read_text(), flags=re.S)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_file() and linked.is_relative_to(ROOT), f"{page.name}: {target} is not a file here"
        if fragment and linked.suffix == ".md":
            assert fragment in anchors(linked), f"{page.name}: {target} names no heading of {linked.name}"
