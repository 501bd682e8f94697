"""Presenter mode: the whole page at projector size, in the URL as ``?presenter=1``.

Streamlit sizes its text in ``rem`` (its theme's ``fontSizes``), so one rule on the root element
enlarges body text, captions, tables, metrics, buttons, widget labels, expander titles, tabs and
alerts together, the way browser zoom would, while the figure-first wide layout keeps its width.
Figures get their own projector fonts from ``ui.kit.redraw.styled(presenter=True)``.

``st.dataframe`` draws its cells on a canvas (glide-data-grid) in pixels that Streamlit converts from
rem once, with the root font size of that moment: a grid drawn before this page's rule applies (most
grids of a freshly opened page, every grid already shown when presenter mode is switched on) has
14 px text, one drawn after it 19.25 px, and either is kept. The grid writes its font into its own
style (``--gdg-base-font-style``), so the rule zooms each grid by what its own font needs to reach
20 px: every grid then reads the same, and its columns, measured in its own font, need the same
share of the page. Chromium resolves a zoomed element's percentage widths against its container as
drawn, so ``max-width: 100%`` keeps the grid as wide as its container and inside it.
"""

from __future__ import annotations

import streamlit as st

from ui.kit.routing import set_url_param

PRESENTER_KEY = "presenter"  # the toggle's widget key and URL parameter
ROOT_PX = 22  # 1 rem in presenter mode: body text 22 px; captions, tables, buttons 21 px
GRID_FONT_REM = 0.875  # a canvas-drawn table's font: Streamlit's small size, 14 px at its 16 px root
TABLE_TEXT_PX = 20  # a canvas-drawn table's text in presenter mode, as zoomed
READING_WIDTH_PX = 1400  # widest main column outside presenter mode: lines stay readable at 1920 px
_ON = {"1", "true", "yes", "on"}


def grid_zoom(root_px: float) -> float:
    """The zoom that takes a canvas-drawn table, drawn with a ``root_px`` root font size, to projector text."""
    return round(TABLE_TEXT_PX / (GRID_FONT_REM * root_px), 3)


NORMAL_CSS = f"""
[data-testid="stMainBlockContainer"] {{ max-width: {READING_WIDTH_PX}px; }}
"""

PRESENTER_CSS = f"""
html {{ font-size: {ROOT_PX}px !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: none; padding: 2.5rem 2.5rem 4rem; }}
h1 {{ font-size: 2.2rem !important; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * {{ font-size: 0.95rem; }}
[data-testid="stTable"] td, [data-testid="stTable"] th {{ font-size: 0.95rem; }}
[data-testid="stMetricValue"] {{ font-size: 2rem; }}
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * {{ font-size: 0.95rem; }}
[data-testid="stMetricDelta"], [data-testid="stMetricDelta"] * {{ font-size: 0.95rem; }}
[data-testid="stPageLink-NavLink"] * {{ font-size: 1rem; }}
[data-testid^="stBaseButton-"] p, [data-testid="stPopoverButton"] p,
[data-testid="stButtonGroup"] button p, [data-testid="stDownloadButton"] button p,
[data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"] *,
[data-testid="stRadio"] p, [data-testid="stCheckbox"] p,
[data-testid="stMultiSelectTagsContainer"] span, input, textarea, [data-baseweb="select"] div
  {{ font-size: 0.95rem !important; }}
[data-testid="stMarkdownContainer"] code {{ font-size: 0.92em; }}
[data-testid="stExpander"] summary * {{ font-size: 1rem; font-weight: 600; }}
[data-testid="stTab"] * {{ font-size: 1rem; }}
[data-testid="stWidgetLabel"] * {{ font-size: 0.95rem; }}
[data-testid="stAlert"] * {{ font-size: 1rem; }}
[data-testid="stTooltipContent"] * {{ font-size: 0.95rem; }}
[data-testid="stCode"] code {{ font-size: 0.95rem; }}
[data-testid="stDataFrame"] {{ zoom: {grid_zoom(16)}; max-width: 100% !important; }}
[data-testid="stDataFrame"]:has([style*="--gdg-base-font-style:"][style*=" {GRID_FONT_REM * ROOT_PX:g}px;"])
  {{ zoom: {grid_zoom(ROOT_PX)}; }}
[data-testid="stDataFrameResizable"] {{ max-width: 100% !important; }}
"""


def normalise_url() -> None:
    """Accept ``?presenter=1`` (or yes/on) for the bound toggle, which only parses true/false.

    Run before the toggle is drawn: the value is rewritten in the URL and the run starts again,
    so the toggle is seeded from ``true`` or ``false`` and the value survives page switches.
    """
    raw = st.query_params.get(PRESENTER_KEY)
    if raw is None or raw.lower() in ("true", "false"):
        return
    set_url_param(PRESENTER_KEY, "true" if raw.lower() in _ON else "false")
    st.rerun()


def toggle() -> bool:
    """The sidebar's presenter toggle, bound to the URL so a copied link keeps presenter mode."""
    normalise_url()
    return st.toggle(
        "Presenter mode",
        key=PRESENTER_KEY,
        bind="query-params",
        help="Projector-size text and figures, explanations folded away, sidebar "
        "collapsed on opening. Shareable: the link carries ?presenter=true.",
    )


def requested_in_url() -> bool:
    """Whether the URL asks for presenter mode (before the toggle has been drawn in this run)."""
    return (st.query_params.get(PRESENTER_KEY) or "").lower() in _ON


def page_config() -> dict:
    """``st.set_page_config`` arguments: always wide; a presenter link opens with the sidebar closed."""
    return {"layout": "wide", "initial_sidebar_state": "collapsed" if requested_in_url() else "auto"}


def apply(on: bool) -> None:
    """Inject the page CSS: projector sizes when ``on``, otherwise a readable maximum width."""
    st.html(f"<style>{PRESENTER_CSS if on else NORMAL_CSS}</style>")
