"""AppTest: no dead controls on the CacheGen page, every control in the URL.

For each view, every enabled control is changed in turn (and put back) and something the viewer
sees — a figure's data, a table, a caption, a message — must change with it; the controls a view
cannot use are disabled and say why in their help. Every control's key starts with the page stem
and is bound to the URL. ``tests/test_cacheblend_controls.py`` uses the same helpers.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1.element_tree import (ButtonGroup, Multiselect, NumberInput, Selectbox, SelectSlider,
                                               Slider, Widget)

from tests.conftest import assert_clean, open_page

NOT_USED = "Not used here"


def widgets(at, stem: str) -> list[Widget]:
    """The page's own controls (not presenter mode, the frame's buttons or the view switcher)."""
    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)
    return [w for w in walk(at._tree) if isinstance(w, Widget) and w.key and w.key.startswith(f"{stem}_")
            and w.key != f"{stem}_view" and not w.key.endswith("_confirm")]


def shown(at) -> tuple:
    """What the viewer sees: figures (data and layout), tables, captions, messages."""
    return (tuple(el.proto.spec for el in at.get("plotly_chart")),
            tuple(df.value.to_csv() for df in at.dataframe),
            tuple(t.value.to_csv() for t in at.table), tuple(c.value for c in at.caption),
            tuple(m.value for m in (*at.info, *at.error, *at.warning)))


def another_value(w: Widget):
    """A different, valid value a viewer might pick: the next step, the neighbouring option."""
    if isinstance(w, (Slider, NumberInput)):
        step = w.step or 1
        up = w.value + step
        return up if w.max is None or up <= w.max else w.value - step
    if isinstance(w, SelectSlider):
        i = w.options.index(w.format_func(w.value)) if hasattr(w, "format_func") else w.options.index(str(w.value))
        return type(w.value)(w.options[i - 1 if i else 1])
    if isinstance(w, Multiselect):
        return list(w.value)[:-1] if len(w.value) > 1 else w.options[:2]
    if isinstance(w, ButtonGroup):
        return w.options[1] if w.value == w.options[0] else w.options[0]
    raise AssertionError(f"no rule for {type(w).__name__} {w.key}")


def assert_every_control_counts(at, stem: str, disabled: set[str], view_keys: set[str] = frozenset()) -> list[str]:
    """The disabled controls are exactly ``disabled`` (with the reason), and every other one changes
    what is shown; each change is put back before the next. Returns the keys changed."""
    assert_clean(at)
    changed: list[str] = []
    found = widgets(at, stem)
    assert {w.key for w in found if w.disabled} == disabled
    for w in found:
        assert w.proto.query_param_key == w.key, f"{w.key} is not bound to the URL"
        if w.disabled:
            assert w.help.startswith(NOT_USED), (w.key, w.help)
    for key in [w.key for w in found if not w.disabled and w.key not in view_keys]:
        before = shown(at)
        w = next(x for x in widgets(at, stem) if x.key == key)
        if isinstance(w, Selectbox):          # its options are the labels shown: pick by position
            old, new = w.index, 1 if w.index == 0 else 0
            w.select_index(new).run()
        else:
            old, new = w.value, another_value(w)
            w.set_value(new).run()
        assert_clean(at)
        assert shown(at) != before, f"changing {key} from {old!r} to {new!r} changed nothing shown"
        w = next(x for x in widgets(at, stem) if x.key == key)
        (w.select_index(old) if isinstance(w, Selectbox) else w.set_value(old)).run()
        changed.append(key)
    return changed


SMALL_CODEC = {"cachegen_view": "Codec", "cachegen_layers": "3", "cachegen_tokens": "256", "cachegen_channels": "16"}
SIDEBAR = {"cachegen_bw", "cachegen_persist", "cachegen_seed", "cachegen_k", "cachegen_slo", "cachegen_context",
           "cachegen_chunk", "cachegen_sizes", "cachegen_recompute"}
CODEC = {"cachegen_kvsource", "cachegen_kvseed", "cachegen_layers", "cachegen_tokens", "cachegen_channels",
         "cachegen_rho", "cachegen_offset", "cachegen_outliers", "cachegen_outscale", "cachegen_group",
         "cachegen_level", "cachegen_sens"}
VIEWS = [
    ({}, set()),
    ({"cachegen_view": "Violation vs SLO", "cachegen_k": "100"}, set()),
    ({"cachegen_view": "Violation vs SLO", "cachegen_against": "Mean bandwidth", "cachegen_k": "100"}, set()),
    ({"cachegen_view": "Violation vs SLO", "cachegen_against": "Persistence", "cachegen_k": "100",
      "cachegen_bw": "Step"}, {"cachegen_persist"}),       # the sweep draws its own K traces: seed and K count
    (SMALL_CODEC, set()),
]


@pytest.mark.parametrize("query,disabled", VIEWS, ids=["timeline", "slo", "mean-bandwidth", "persistence", "codec"])
def test_every_enabled_control_changes_what_is_shown(query, disabled):
    at = open_page("cachegen", query, timeout=120)
    changed = set(assert_every_control_counts(at, "cachegen", disabled, {"cachegen_against"}))
    expected = CODEC if query.get("cachegen_view") == "Codec" else SIDEBAR - disabled
    assert changed == expected | ({"cachegen_policies"} if not query else set())


def test_a_fixed_trace_disables_its_random_knobs_and_says_why():
    at = open_page("cachegen", {"cachegen_bw": "Step"})
    assert_clean(at)
    off = {w.key: w.help for w in widgets(at, "cachegen") if w.disabled}
    assert set(off) == {"cachegen_persist", "cachegen_seed", "cachegen_k"}
    assert "one fixed trace" in off["cachegen_k"] and "AR(1)" in off["cachegen_persist"]


def test_policies_come_from_the_url_and_a_bad_name_is_ignored():
    at = open_page("cachegen", {"cachegen_policies": ["oracle (bound)", "text only"]})   # the labels shown
    assert_clean(at)
    assert at.multiselect(key="cachegen_policies").value == ["oracle", "text"]
    rows = next(d.value for d in at.dataframe if "config" in d.value.columns)
    assert list(dict.fromkeys(rows.policy)) == ["oracle", "text"]
    at = open_page("cachegen", {"cachegen_policies": ["oracle (bound)", "no-such-rule"]})
    assert_clean(at)
    assert at.multiselect(key="cachegen_policies").value == ["oracle"]           # the bad name alone is dropped
