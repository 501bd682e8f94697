"""Every page survives a hand-edited or hostile URL: each of its widget parameters set to garbage."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1.element_tree import Widget

from kvviz.catalog import PAGES
from tests.conftest import assert_clean, open_page

ROOT = Path(__file__).resolve().parents[1]
BUILT = ["home"] + [p.stem for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]


def widget_keys(at) -> list[str]:
    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)
    return sorted({e.key for e in walk(at._tree) if isinstance(e, Widget) and e.key and e.key != "presenter"})


@pytest.mark.parametrize("stem", BUILT)
def test_garbage_in_every_url_parameter_never_raises(stem):
    keys = widget_keys(open_page(stem))
    for bad in ("zzz", "1e309", "nan", "", "-1"):
        at = open_page(stem, {key: bad for key in keys})
        assert_clean(at)
