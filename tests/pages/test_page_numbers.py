"""The radix, CacheBlend and ledger pages, and every exercise, write numbers as a person reads them.

No number a viewer reads is in scientific notation (2,490, not 2.49e+03), and the ledger's views that
count memory count it in one system: binary units (KiB, GiB, TiB) for memory, decimal GB/s for links.
The lecture notes' decimal figures appear only with their binary value beside them ("1.05 GB =
0.98 GiB", "40 GB (37.3 GiB)"). The scan reads everything a viewer sees (``page_texts``).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest

from kvviz.exercises import EXERCISES
from tests.conftest import assert_clean, open_page
from tests.pages.test_page_text import PAGE_VIEWS, page_texts

pytestmark = pytest.mark.shared_caches

SCIENTIFIC = re.compile(r"\b\d+(?:\.\d+)?e[+-]?\d+\b", re.I)
DECIMAL_MEMORY = re.compile(r"\b\d[\d,.]*\s?(?:MB|GB|TB)\b(?!/s)(?:/[a-z]+)?+(?! = \d| \(\d)")
"""A decimal memory amount without its binary value beside it."""
MINE = [(stem, query) for stem, query in PAGE_VIEWS if stem in ("radix", "cacheblend", "ledger")]
ONE_SYSTEM = {f"ledger_view={v}" for v in ("Size", "Load+or+recompute", "Economics", "Tiers")}
"""The ledger's views: memory in binary units, links in GB/s."""


def _found(at, pattern: re.Pattern) -> list[str]:
    return [
        f"{where}: {m.group(0)!r} in {text[max(0, m.start() - 60) : m.end() + 40]!r}"
        for where, text in page_texts(at)
        for m in pattern.finditer(str(text))
    ]


@pytest.mark.parametrize(("stem", "query"), MINE, ids=[f"{s}?{q}" for s, q in MINE])
def test_numbers_in_words_a_student_reads(stem, query):
    at = open_page(stem, dict(parse_qsl(query)), timeout=180)
    assert_clean(at)
    assert _found(at, SCIENTIFIC) == []
    if query in ONE_SYSTEM:
        assert _found(at, DECIMAL_MEMORY) == []


def test_the_scan_finds_what_it_looks_for():
    assert SCIENTIFIC.findall("2.49e+03 GiB, 1.05e+03 s, 1e-05, 3.5 GB") == ["2.49e+03", "1.05e+03", "1e-05"]
    assert DECIMAL_MEMORY.findall(
        "40 GB of memory, 1.05 GB = 0.98 GiB, 15.9 TB/day = 14.5 TiB/day, 3 TB/day, 51.2 GB/s"
    ) == ["40 GB", "3 TB/day"]


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_an_exercise_writes_numbers_as_its_page_does(exercise):
    """Every text of an exercise, worked answer included; one answered on the ledger counts memory in GiB."""
    texts = [exercise.question, exercise.hint, exercise.worked_text(), *exercise.points]
    texts += [f"{p.ask} ({p.unit})" for p in exercise.parts]
    assert [m.group(0) for t in texts for m in SCIENTIFIC.finditer(t)] == []
    if exercise.page == "ledger":
        assert [m.group(0) for t in texts for m in DECIMAL_MEMORY.finditer(t)] == []
