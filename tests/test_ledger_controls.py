"""AppTest: no dead controls on the ledger and Strata pages, every control in the URL.

For each view, every enabled control is changed in turn and something the viewer sees (a
figure's data or title, a metric, a table, a caption) must change with it; the controls a view
cannot use are disabled, and say why in their help. Every control's key is bound to the URL.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1.element_tree import ButtonGroup, Multiselect, NumberInput, Selectbox, Toggle, Widget

from tests.conftest import assert_clean, open_page

VIEW_KEYS = {"ledger_view", "ledger_lr", "strata_view"}   # they switch the view; the test opens each one
EDITORS = "ledger_edit_"                                  # the presets tables: edits, not in the URL


def _widgets(at) -> list[Widget]:
    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)
    return [w for w in walk(at._tree) if isinstance(w, Widget) and w.key and w.key != "presenter"
            and not w.key.startswith(("kvviz_", EDITORS))]


def _shown(at) -> tuple:
    """What the viewer sees: figures (data and layout), metrics, tables and captions."""
    return (tuple(el.proto.spec for el in at.get("plotly_chart")),
            tuple((m.label, m.value) for m in at.metric),
            tuple(df.value.to_csv() for df in at.dataframe),
            tuple(t.value.to_csv() for t in at.table),
            tuple(c.value for c in at.caption))


# Any threshold between the two kinds of pair in the burst (two document questions: 57,344 / 512 = 112
# cached per new token; a question with a fresh prompt: 7.5) batches alike; crossing 112 changes it.
OVERRIDES = {"strata_thr": 200.0}


def _another_value(w: Widget):
    """A different, valid value for ``w``: as a viewer would pick one."""
    if w.key in OVERRIDES:
        return OVERRIDES[w.key]
    if isinstance(w, NumberInput):
        v = w.value
        new = v * 1.5 if v else 1
        if w.max is not None and new > w.max:
            new = v / 2
        if w.min is not None and new < w.min:
            new = w.min
        return round(new) if isinstance(v, int) else new
    if isinstance(w, Toggle):
        return not w.value
    if isinstance(w, Multiselect):
        return list(w.value)[:-1] if w.value else w.options[:1]
    if isinstance(w, (Selectbox, ButtonGroup)):
        return w.options[-1] if w.options[-1] != w.value else w.options[0]   # h100 → h200 is the same FLOP/s
    raise AssertionError(f"no rule for {type(w).__name__} {w.key}")


LEDGER = {"ledger_model", "ledger_gpu", "ledger_mfu"}
STRATA = {"strata_model", "strata_gpu", "strata_mfu"}
VIEWS = [
    ("ledger", {}, {"ledger_gpu", "ledger_mfu"}),
    ("ledger", {"ledger_view": "Load or recompute"}, {"ledger_model"}),
    ("ledger", {"ledger_view": "Load or recompute", "ledger_lr": "One context, every link"}, set()),
    ("ledger", {"ledger_view": "Load or recompute", "ledger_lr": "20-turn chat"}, set()),
    ("ledger", {"ledger_view": "Economics"}, {"ledger_model"}),
    ("ledger", {"ledger_view": "Tiers", "ledger_users": "60", "ledger_tturns": "6", "ledger_gpu_gb": "4",
                "ledger_cpu_gb": "6", "ledger_ssd_gb": "10"}, set()),   # small, and every tier overflows
    ("strata", {}, {"strata_gpu", "strata_mfu"}),
    ("strata", {"strata_view": "Loading-bound"}, set()),
    ("strata", {"strata_view": "Balanced batching"}, STRATA),
]


@pytest.mark.parametrize("stem,query,disabled", VIEWS, ids=[f"{s}-{'-'.join(q.values()) or 'default'}"
                                                            for s, q, _ in VIEWS])
def test_every_enabled_control_changes_what_is_shown(stem, query, disabled):
    at = open_page(stem, query)
    assert_clean(at)
    widgets = _widgets(at)
    assert {w.key for w in widgets if w.disabled} == disabled
    for w in widgets:
        assert w.key.startswith(f"{stem}_"), w.key               # ui.links' reset finds it by this prefix
        assert w.proto.query_param_key == w.key, f"{w.key} is not bound to the URL"
        if w.disabled:
            assert w.help.startswith("Not used here"), w.key
    for key in [w.key for w in widgets if not w.disabled and w.key not in VIEW_KEYS]:
        before = _shown(at)
        w = next(x for x in _widgets(at) if x.key == key)
        value = _another_value(w)
        w.set_value(value).run()
        assert_clean(at)
        assert not at.error, (key, value, [e.value for e in at.error])
        assert _shown(at) != before, f"changing {key} to {value!r} changed nothing shown"


@pytest.mark.parametrize("query", [
    {"ledger_view": "Load or recompute", "ledger_links": "no-such-link", "ledger_models": "gpt-9"},
    {"ledger_view": "Tiers", "ledger_users": "-5", "ledger_rps": "nan", "ledger_fill": "sideways"},
    {"ledger_view": "Load or recompute", "ledger_lr": "20-turn chat", "ledger_turns": "1e9", "ledger_overlap": "x"},
])
def test_bad_view_parameters_in_the_url_are_ignored(query):
    at = open_page("ledger", query)
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) >= 1


@pytest.mark.parametrize("query", [{"strata_flight": "0", "strata_platform": "Mars"},
                                   {"strata_view": "Balanced batching", "strata_batch": "1e6", "strata_thr": "-inf"}])
def test_bad_strata_parameters_in_the_url_are_ignored(query):
    at = open_page("strata", query)
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 1
