"""Fuzzing every page through its URL: random sets of its real widget keys, hostile values.

Each run must end with no exception element (an error message for bad input is fine) and within
a time bound: a URL must not be able to make the server work for minutes. Besides the random
examples, each page gets every widget parameter at once set to each of a few garbage values.
Few examples per page, so the whole file stays around two minutes. The default view each page's
keys are read from is also where every page is checked to show the link bar (its reset button).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from kvviz.common.catalog import PAGES
from tests.conftest import assert_clean, open_page
from tests.pages.page_controls import keyed_widgets

pytestmark = pytest.mark.shared_caches

ROOT = Path(__file__).resolve().parents[2]
BUILT = ["home"] + [p.stem for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]
EXAMPLES = 5
SECONDS_PER_RUN = 40  # AppTest runs the page twice (router, then page), on a shared 2-core machine
GARBAGE = ("zzz", "1e309", "nan", "", "-1")  # each given to every parameter of a page at once
NASTY = [
    "",
    "0",
    "-1",
    "1e18",
    "-1e18",
    "99999999999999999999",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "0.5",
    "-0.0",
    "true",
    "false",
    "None",
    "[]",
    "{}",
    "x" * 5000,
    "**bold** _it_ `code` # head",
    "![x](http://127.0.0.1:9/p.png)",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "%00",
    "\u202e\u00e9\u4e2d",
    "1,2,3",
    " 7 ",
]
VALUES = st.one_of(
    st.sampled_from(NASTY),
    st.integers(-(10**15), 10**15).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=40),
)
_KEYS: dict[str, list[str]] = {}


def keys_of(stem: str) -> list[str]:
    """The page's widget keys at its default view, plus presenter mode (every page has it). Every page
    but the home page shows the link bar, its reset button among them: checked on this first view."""
    if stem not in _KEYS:
        at = open_page(stem)
        assert_clean(at)
        if stem != "home":
            assert at.button(key=f"kvviz_reset_{stem}").label == "Reset to defaults", stem
        _KEYS[stem] = sorted({w.key for w in keyed_widgets(at)} | {"presenter"})
    return _KEYS[stem]


@pytest.mark.parametrize("stem", BUILT)
def test_random_url_parameters_end_cleanly_and_in_time(stem):
    keys = keys_of(stem)

    @settings(
        max_examples=EXAMPLES,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its URL
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(params=st.dictionaries(st.sampled_from(keys), VALUES, min_size=1, max_size=8))
    def run(params: dict[str, str]) -> None:
        start = time.monotonic()
        at = open_page(stem, params, timeout=SECONDS_PER_RUN)
        assert_clean(at)
        assert time.monotonic() - start < SECONDS_PER_RUN, params

    for bad in GARBAGE:
        run = example(params=dict.fromkeys(keys, bad))(run)
    run()
