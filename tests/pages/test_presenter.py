"""AppTest: presenter mode from the URL and its CSS, the link bar's reset, and projector-size
fonts with magnitude-labelled log axes in every figure of every page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.common.catalog import PAGES
from kvviz.common.style import PRESENTER_PX
from tests.common.test_style import parse_label
from tests.conftest import APP, assert_clean
from ui.kit import presenter

pytestmark = pytest.mark.shared_caches

ROOT = Path(__file__).resolve().parents[2]
BUILT = [p.stem for p in PAGES if (ROOT / "pages" / f"{p.stem}.py").exists()]


def opened_with(query: dict[str, str], stem: str | None = None) -> AppTest:
    """A fresh session whose first load carries ``query`` (a link opened in a new tab)."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    if stem:
        at.switch_page(f"pages/{stem}.py").run()
    return at


def styles(at: AppTest) -> str:
    return " ".join(h.proto.body for h in at.get("html"))


@pytest.mark.parametrize("value", ["1", "true", "on"])
def test_presenter_in_the_url_turns_presenter_mode_on(value):
    at = opened_with({"presenter": value}, "cacheblend")
    assert_clean(at)
    assert at.sidebar.toggle(key="presenter").value is True
    assert f"font-size: {presenter.ROOT_PX}px" in styles(at)
    assert at.expander  # explanations folded away


def test_a_canvas_table_reads_at_projector_size_whichever_root_size_it_was_drawn_with():
    """A grid drawn before the presenter rule applies has 14 px text, one drawn after it 19.25 px: each is
    zoomed by what its own font needs, the second found by the font it writes into its style."""
    assert presenter.grid_zoom(16) * 14 == pytest.approx(presenter.TABLE_TEXT_PX, abs=0.01)
    assert presenter.grid_zoom(presenter.ROOT_PX) * 19.25 == pytest.approx(presenter.TABLE_TEXT_PX, abs=0.01)
    css = presenter.PRESENTER_CSS
    assert '[data-testid="stDataFrame"] { zoom: 1.429;' in css
    assert ':has([style*="--gdg-base-font-style:"][style*=" 19.25px;"])\n  { zoom: 1.039; }' in css


@pytest.mark.parametrize("value", [None, "0", "false", "zzz"])
def test_without_it_the_page_keeps_its_reading_width(value):
    at = opened_with({} if value is None else {"presenter": value}, "cacheblend")
    assert_clean(at)
    assert at.sidebar.toggle(key="presenter").value is False
    assert "max-width: 1400px" in styles(at) and "font-size: 22px" not in styles(at)


def test_presenter_mode_survives_page_switches():
    at = opened_with({"presenter": "1"}, "cacheblend")
    at.switch_page("pages/radix.py").run()
    assert_clean(at)
    assert at.sidebar.toggle(key="presenter").value is True
    assert f"font-size: {presenter.ROOT_PX}px" in styles(at)


def test_reset_to_defaults_restores_every_control_and_keeps_presenter_mode():
    at = opened_with({"presenter": "1", "cacheblend_chunk": "3"}, "cacheblend")
    at.sidebar.slider(key="cacheblend_ratio").set_value(0.5).run()
    assert at.sidebar.slider(key="cacheblend_chunk").value == 3
    at.button(key="kvviz_reset_cacheblend").click().run()
    assert_clean(at)
    assert at.sidebar.slider(key="cacheblend_chunk").value == 5  # the page's defaults
    assert at.sidebar.slider(key="cacheblend_ratio").value == 0.2
    assert at.sidebar.toggle(key="presenter").value is True


def figure_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def log_axes(layout: dict):
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")) and axis.get("type") == "log":
            yield name, axis


@pytest.mark.parametrize("stem", BUILT)
def test_every_figure_is_projector_size_with_magnitudes_on_its_log_axes(stem):
    at = opened_with({"presenter": "1"}, stem)
    assert_clean(at)
    floor = PRESENTER_PX - 2
    for spec in figure_specs(at):
        layout = spec["layout"]
        assert layout["font"]["size"] >= PRESENTER_PX
        assert layout["legend"]["font"]["size"] >= floor and layout["hoverlabel"]["font"]["size"] >= floor
        for annotation in layout.get("annotations", []):
            assert annotation.get("font", {}).get("size", PRESENTER_PX) >= floor, annotation.get("text")
        for name, axis in log_axes(layout):
            if "ticktext" not in axis:
                assert axis.get("dtick") not in ("D1", "D2"), (stem, name)  # a figure's own decade step
                continue
            labels = axis["ticktext"]
            assert len(set(labels)) == len(labels), (stem, name, labels)
            numbers = [parse_label(t) for t in labels if _is_number(t)]
            assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), (stem, name, labels)


def _is_number(label: str) -> bool:
    try:
        parse_label(label)
    except ValueError:
        return False
    return True
