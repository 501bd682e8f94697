"""Every view of every page, rendered in AppTest, shows its reader no project-internal name.

A page speaks to a lecturer or a student: a dotted module path, a Python identifier, a source or test
file, an issue number, a spec section, a slide number or a command-line option in its text means
the code's vocabulary reached the reader. The scan reads all the text a viewer sees: markdown,
captions, messages, metrics, tables (headers and cells), control labels, options and help, and the
figures' titles, axis titles, legend entries, annotations and hover text (from the plotly JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1.element_tree import Widget

from kvviz.cacheblend import blend
from kvviz.cachegen.figures import POLICY_LABELS as STREAM_LABELS
from kvviz.common import hardware as hw
from kvviz.common.glossary import TERMS
from kvviz.mooncake import overload
from kvviz.radix.replay import POLICY_LABELS, WRITE_LABELS
from tests.conftest import LENGTHS_ONLY, assert_clean, open_page, open_with_session_trace
from tests.e2e.test_layout_browser import VIEWS
from tests.pages.page_controls import keyed_widgets
from ui.cluster.routers import ENGINE_NAMES
from ui.eviction.controls import POLICY_WORDS as EVICTION_WORDS
from ui.kit.traces import FORMAT_WORDS
from ui.prefix_cache.controls import POLICY_WORDS as PREFIX_WORDS

pytestmark = pytest.mark.shared_caches

NAMES = {  # a field of a file the reader writes may be named in `code` or in 'quotes' (a CSV's own header)
    "identifier": re.compile(r"\b[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b"),
    "constant": re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"),
}
QUOTED = re.compile(r"`[^`]*`|'[^'\s]*'|\b(?:SGLang|vLLM|libCacheSim|LMCache)'s \w+")
"""Names the reader may meet as written: in `code` or 'quotes' (a file's own fields), or another
system's option named as its own ("SGLang's mem_fraction_static")."""
INTERNAL = {
    "module path": re.compile(r"\bkvviz\.\w"),
    "source file": re.compile(r"\w\.py\b"),
    "issue number": re.compile(r"\bissues? #?\d", re.I),
    "spec section": re.compile(r"\bspec S\d|\bS\d+[–-]S\d+\b|_spec\b"),
    "slide": re.compile(r"\bslides? \d", re.I),
    "command-line option": re.compile(r"(?<![\w-])--[a-z][a-z-]+"),
    "key=value dump": re.compile(r"\b[a-z]{1,3}=\d"),
}
ALLOWED = {term for term in TERMS if "_" in term}
"""Names the reader meets outside this project: jargon the glossary defines (t_d, lock_ref)."""
WORDED = (
    POLICY_LABELS,
    WRITE_LABELS,
    hw.MODEL_TITLES,
    hw.GPU_TITLES,
    FORMAT_WORDS,
    ENGINE_NAMES,
    overload.POLICY_LABELS,
    overload.PLACEMENT_LABELS,
    STREAM_LABELS,
    {v: blend.VARIANTS[v].label for v in blend.VARIANTS},
    EVICTION_WORDS,
    PREFIX_WORDS,
)
"""Every code → words map behind a control that offers words."""
CODES = frozenset(str(code) for words in WORDED for code, shown in words.items() if str(code) != shown)
"""The models' codes (lru, write_back, mooncake, llama-3-8b, h100, kvcentric): no control offers one as an
option, whatever map a new control takes its options from; they offer words (LRU, Mooncake JSONL, H100)."""
PRESET_ID = re.compile(
    r"(?<![\w.-])(?:" + "|".join(map(re.escape, sorted({*hw.MODELS, *hw.GPUS}, key=len, reverse=True))) + r")(?![\w-])"
)
"""A model or GPU preset by its id (llama-3-8b, h100) in any text: the pages name them (Llama 3 8B, H100)."""
HOVER_FIELD = re.compile(r"%\{[^}]*\}")


def figure_texts(spec: str) -> Iterator[str]:
    """The words a figure shows: titles, axis titles, legend, trace names, annotations, hover text."""
    fig = json.loads(spec)
    layout = fig.get("layout", {})
    yield from (_title(value.get("title")) for value in layout.values() if isinstance(value, dict))
    yield _title(layout.get("title"))
    yield from (a.get("text", "") for a in layout.get("annotations", []))
    for trace in fig.get("data", []):
        yield str(trace.get("name", ""))
        yield HOVER_FIELD.sub("", str(trace.get("hovertemplate", "")))
        for field in ("text", "hovertext"):
            value = trace.get(field)
            yield from (map(str, value) if isinstance(value, list) else [str(value or "")])


def _column_label(column, labels: dict) -> str:
    """The header the reader sees: the column's label when the table gives one, else its name."""
    config = labels.get(str(column))
    return str(config.get("label") or column) if isinstance(config, dict) else str(column)


def _title(title) -> str:
    return str(title.get("text", "")) if isinstance(title, dict) else str(title or "")


def widget_texts(w: Widget) -> Iterator[str]:
    """A control's label, help and options."""
    yield str(getattr(w, "label", "") or "")
    yield str(getattr(w, "help", "") or "")
    yield from map(str, getattr(w, "options", None) or [])


def page_texts(at) -> Iterator[tuple[str, str]]:
    """(where, text) for everything a viewer reads on the page as AppTest ran it."""
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "header", "subheader", "code"):
        yield from ((kind, e.value) for e in getattr(at, kind))
    for m in at.metric:
        yield "metric", f"{m.label} {m.value} {m.proto.help}"
    for kind in ("dataframe", "table"):
        for df in getattr(at, kind):
            frame = df.value
            labels = json.loads(getattr(df.proto, "columns", "") or "{}")
            yield kind, " | ".join(_column_label(c, labels) for c in frame.columns)
            yield from (
                (kind, v) for v in frame.select_dtypes(include=["object", "string"]).to_numpy().ravel().astype(str)
            )
    for w in keyed_widgets(at):
        yield from ((f"control {w.key}", t) for t in widget_texts(w))
    for e in at.expander:
        yield "expander", e.label
    for chart in at.get("plotly_chart"):
        yield from (("figure", t) for t in figure_texts(chart.proto.spec))


def internal_names(at) -> list[str]:
    """Every internal name found, as "where: what (kind) in '…text…'"."""
    found = []
    for where, text in page_texts(at):
        text = re.sub(r"\\(.)", r"\1", text)  # markdown escapes
        unquoted = QUOTED.sub("", text)
        for kind, pattern in [
            *((k, (p, text)) for k, p in INTERNAL.items()),
            *((k, (p, unquoted)) for k, p in NAMES.items()),
        ]:
            regex, scanned = pattern
            found += [
                f"{where}: {m.group(0)!r} ({kind}) in {scanned[max(0, m.start() - 60) : m.end() + 60]!r}"
                for m in regex.finditer(scanned)
                if m.group(0) not in ALLOWED
            ]
        if where.startswith("control") and text in CODES:
            found.append(f"{where}: {text!r} (code name offered as an option)")
        found += [
            f"{where}: {m.group(0)!r} (preset id) in {text[max(0, m.start() - 60) : m.end() + 60]!r}"
            for m in PRESET_ID.finditer(unquoted)
        ]
    return found


PAGE_VIEWS = [(stem or "home", view.query) for stem, views in VIEWS.items() for view in views]
"""The views the browser's layout test draws: every view of every page, with light settings."""


SCIENTIFIC = re.compile(r"(?<![#\w.])\d+(?:\.\d+)?e[+-]?\d+\b", re.I)
"""A number in scientific notation (2.49e+03): a person reads 2,490. (Not a colour: #009e73.)"""


def scientific(at) -> list[str]:
    """Every number in scientific notation the page shows, as "where: what in '…text…'"."""
    return [
        f"{where}: {m.group(0)!r} in {text[max(0, m.start() - 60) : m.end() + 40]!r}"
        for where, text in page_texts(at)
        for m in SCIENTIFIC.finditer(str(text))
    ]


@pytest.mark.parametrize(("stem", "query"), PAGE_VIEWS, ids=[f"{s}?{q}" if q else s for s, q in PAGE_VIEWS])
def test_no_internal_name_or_scientific_notation_on_any_view(stem, query):
    at = open_page(stem, dict(parse_qsl(query)), timeout=180)
    assert_clean(at)
    assert internal_names(at) == []
    assert scientific(at) == []


def test_no_internal_name_on_a_trace_without_block_ids():
    at = open_with_session_trace("trace", LENGTHS_ONLY, timeout=120)
    assert_clean(at)
    assert internal_names(at) == [] and scientific(at) == []
