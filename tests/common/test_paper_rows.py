"""Every page's "What the paper reports vs this simulation" table: each row carries a status computed
from the numbers (kvviz.common.paper), and no status contradicts the comparison it states."""

from __future__ import annotations

import pytest

from kvviz.common.paper import COLUMNS, Status, check, close, in_range, problems, within
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
    assert problems([{"quantity": "x", "paper": "1", "this simulation": "1"}])  # a literal row
    assert problems([{**row, "status": "agrees", "basis": "looks fine"}])


def test_range_and_absolute_rows_compute_their_status_and_say_how():
    assert in_range("q", "3.5–4.3×", "3.9×", 3.9, 3.5, 4.3, 0.1)["status"] == "agrees"
    row = in_range("q", "3.5–4.3×", "3.2×", 3.2, 3.5, 4.3, 0.1)  # 3.5 x 0.9 = 3.15
    assert row["status"] == "agrees" and row["basis"] == "3.2 is inside the paper's range 3.5–4.3 widened by 10%"
    row = in_range("q", "", "", 3.1, 3.5, 4.3, 0.1)
    assert (
        row["status"] == "differs" and row["basis"] == "3.1 is outside the paper's range 3.5–4.3, even with 10% leeway"
    )
    assert in_range("q", "", "", float("nan"), 3.5, 4.3, 0.1)["status"] == "differs"
    assert within("q", "", "", [(0.98, 0.975)], 0.01, "")["status"] == "agrees"
    row = within("q", "", "", [(0.81, 0.56), (0.08, 0.1)], 0.1, "shares")
    assert row["status"] == "differs"
    assert row["basis"] == "off by 0.25 from the paper's 0.81 (the farthest of 2), more than the 0.1 allowed (shares)"


def test_a_basis_says_in_words_how_the_status_was_decided():
    assert (
        close("q", "", "", (3.15, 3.3), 0.15)["basis"] == "off by 4.77% from the paper's 3.15, within the 15% allowed"
    )
    assert close("q", "", "", (3.15, 4.0), 0.15)["basis"] == (
        "off by 26.99% from the paper's 3.15, more than the 15% allowed"
    )
    row = check("q", "", "", False, "every variant within −7% to −3%")
    assert row["status"] == "differs" and row["basis"] == "needs every variant within −7% to −3%: not met"
    assert check("q", "", "", True, "below 1%")["basis"] == "needs below 1%: met"


def test_the_checker_catches_a_basis_whose_numbers_contradict_its_words():
    row = {"quantity": "x", "status": "agrees", "basis": "off by 20% from the paper's 3, within the 15% allowed"}
    assert problems([row]) == [f"x: status 'agrees' but {row['basis']}"]


def test_an_exact_match_says_it_equals_the_paper():
    row = close("q", "128 / 256", "128 / 256", [(128, 128), (256, 256)], 0.0)
    assert (row["status"], row["basis"]) == ("agrees", "equals the paper's 128 and 256")
    assert close("q", "3.15", "3.15", (3.15, 3.15), 0.1)["basis"] == "equals the paper's 3.15"
    assert within("q", "", "", [(0.5, 0.5)], 0.01, "")["basis"] == "equals the paper's 0.5"
    assert not problems([row]) and problems([{**row, "status": "differs"}])


def test_a_basis_writes_the_papers_number_as_its_column_does_and_compares_what_is_shown():
    row = close("q", "4,293 of ~23,608 (18%)", "10,003 of 23,410 (43%)", (0.18187, 0.4273), 0.25)
    # 43% against 18% as shown: (43 - 18) / 18 = 138.89%, not 134.95% from the unrounded shares
    assert row["basis"] == "off by 138.89% from the paper's 18% (a relative gap), more than the 25% allowed"
    assert not problems([row])
    assert close("q", "+5.2%", "+4.9%", (0.052, 0.0491), 0.1)["basis"] == (
        "off by 5.77% from the paper's +5.2% (a relative gap), within the 10% allowed"
    )
    assert close("q", "about −1/3", "−30.0%", (-1 / 3, -0.3), 0.25)["basis"] == (
        "off by 10% from the paper's -0.333, within the 25% allowed"
    )
