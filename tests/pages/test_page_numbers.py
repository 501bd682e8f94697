"""Memory in one unit system: binary units (KiB, MiB, GiB, TiB) for memory, decimal GB/s for links.

The ledger's and Strata's views, and every exercise answered on the ledger, count memory in binary units.
The lecture notes' decimal figures appear only with their binary value beside them ("1.05 GB =
0.98 GiB", "40 GB (37.3 GiB)"). Every exercise writes its numbers without scientific notation (every
page's view is scanned for it beside its internal names, ``test_page_text``). The scan reads everything a
viewer sees (``page_texts``).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest

from kvviz.exercises import EXERCISES
from tests.conftest import assert_clean, open_page
from tests.pages.test_page_text import PAGE_VIEWS, SCIENTIFIC, page_texts

pytestmark = pytest.mark.shared_caches

DECIMAL_MEMORY = re.compile(r"\b\d[\d,.]*\s?(?:MB|GB|TB)\b(?!/s)(?:/[a-z]+)?+(?! = \d| \(\d)")
"""A decimal memory amount without its binary value beside it."""
BINARY_PAGES = ("ledger", "strata")
ONE_SYSTEM = [(stem, query) for stem, query in PAGE_VIEWS if stem in BINARY_PAGES]


def _found(at, pattern: re.Pattern) -> list[str]:
    return [
        f"{where}: {m.group(0)!r} in {text[max(0, m.start() - 60) : m.end() + 40]!r}"
        for where, text in page_texts(at)
        for m in pattern.finditer(str(text))
    ]


@pytest.mark.parametrize(("stem", "query"), ONE_SYSTEM, ids=[f"{s}?{q}" for s, q in ONE_SYSTEM])
def test_memory_in_binary_units(stem, query):
    at = open_page(stem, dict(parse_qsl(query)), timeout=180)
    assert_clean(at)
    assert _found(at, DECIMAL_MEMORY) == []


def test_the_scan_finds_what_it_looks_for():
    assert SCIENTIFIC.findall("2.49e+03 GiB, 1.05e+03 s, 1e-05, 3.5 GB, color:#009e73") == [
        "2.49e+03",
        "1.05e+03",
        "1e-05",
    ]
    assert DECIMAL_MEMORY.findall(
        "40 GB of memory, 1.05 GB = 0.98 GiB, 15.9 TB/day = 14.5 TiB/day, 3 TB/day, 51.2 GB/s"
    ) == ["40 GB", "3 TB/day"]


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_an_exercise_writes_numbers_as_its_page_does(exercise):
    """Every text of an exercise, worked answer included; one answered on the ledger or Strata's page counts
    memory in binary units."""
    texts = [exercise.question, exercise.hint, exercise.worked_text(), *exercise.points]
    texts += [f"{p.ask} ({p.unit})" for p in exercise.parts]
    assert [m.group(0) for t in texts for m in SCIENTIFIC.finditer(t)] == []
    if exercise.page in BINARY_PAGES:
        assert [m.group(0) for t in texts for m in DECIMAL_MEMORY.finditer(t)] == []
