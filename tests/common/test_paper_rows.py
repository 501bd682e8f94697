"""Every page's "What the paper reports vs this simulation" table: each row carries a status computed
from the numbers (kvviz.common.paper), and no status contradicts the comparison it states."""

from __future__ import annotations

import pytest

from kvviz.common.paper import COLUMNS, Status, close, problems
from tests.conftest import assert_clean, open_page

VIEWS = [
    ("cluster", {"cluster_minutes": "5", "cluster_seeds": "1"}),
    ("cluster", {"cluster_view": "Scheduling", "cluster_requests": "600", "cluster_instances": "4"}),
    ("ledger", {"ledger_view": "Size"}),
    ("ledger", {"ledger_view": "Load or recompute"}),
    ("ledger", {"ledger_view": "Economics"}),
    ("ledger", {"ledger_view": "Tiers"}),
    ("strata", {}),
    ("cacheblend", {}),
    ("radix", {}),
    ("eviction", {}),
    ("cachegen", {}),
    ("trace", {}),
]


def _paper_tables(at) -> list:
    tables = [t.value for t in at.table]
    return [t.reset_index() for t in tables if "paper" in t.columns]


@pytest.mark.parametrize("stem,query", VIEWS, ids=[f"{s}-{'-'.join(q.values()) or 'default'}" for s, q in VIEWS])
def test_every_row_has_a_computed_status(stem, query):
    at = open_page(stem, query, timeout=180)
    assert_clean(at)
    tables = _paper_tables(at)
    assert tables, f"{stem}: no paper-vs-simulation table"
    for table in tables:
        assert list(table.columns) == list(COLUMNS), f"{stem}: columns {list(table.columns)}"
        rows = table.to_dict(orient="records")
        assert rows and not problems(rows), problems(rows)


def test_the_checker_catches_a_status_the_numbers_contradict():
    row = close("x", "1.0", "2.0", (1.0, 2.0), 0.05)
    assert row["status"] == Status.DIFFERS.value and not problems([row])
    assert problems([{**row, "status": "agrees"}])
    assert problems([{"quantity": "x", "paper": "1", "this simulation": "1"}])          # a literal row
    assert problems([{**row, "status": "agrees", "basis": "looks fine"}])
