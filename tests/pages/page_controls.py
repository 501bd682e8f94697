"""Change each control of a page in AppTest and require that something the viewer sees changes.

A control that changes nothing on the view shown is a dead control (issue 14): it must be hidden,
or disabled with its reason ("Not used here: ..."). ``shown`` is everything visible as text or
data — figure specs, tables, dataframes, markdown, captions, metrics, messages — so a change
anywhere counts. Two ways to use it:

* ``assert_each_changes_the_view(at, changes)``: a page's test lists the changes (kind, key, value);
* ``assert_every_control_counts(at, stem, disabled)``: every control found on the page is changed
  in turn to ``another_value`` (and put back); the disabled ones must be exactly ``disabled``, each
  saying why in its help, and every control must be bound to the URL under the page's prefix.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from streamlit.testing.v1.element_tree import (
    ButtonGroup,
    Multiselect,
    NumberInput,
    Selectbox,
    SelectSlider,
    Slider,
    Toggle,
    Widget,
)

from tests.conftest import assert_clean

Change = tuple[str, str, object]  # (widget kind as AppTest names it, key, new value)
NOT_USED = "Not used here"
FRAME = ("kvviz_", "presenter")  # the shared frame's controls (reset, presenter mode), not the page's


def shown(at) -> tuple:
    """What the viewer sees: figures (data and layout), tables, text, metrics and messages."""
    return (
        tuple(c.proto.spec for c in at.get("plotly_chart")),
        tuple(df.value.to_csv() for df in at.dataframe),
        tuple(t.value.to_csv() for t in at.table),
        tuple(m.value for m in at.markdown),
        tuple(c.value for c in at.caption),
        tuple((m.label, m.value) for m in at.metric),
        tuple(m.value for m in (*at.info, *at.error, *at.warning)),
    )


def assert_each_changes_the_view(at, changes: Iterable[Change]) -> None:
    """Apply ``changes`` one at a time (each kept); every one must change ``shown(at)``."""
    for kind, key, value in changes:
        widget = getattr(at, kind)(key=key)
        assert not widget.disabled, f"{key} is disabled on this view"
        before = shown(at)
        widget.set_value(value).run()
        assert_clean(at)
        assert getattr(at, kind)(key=key).value == value or kind == "select_slider", key
        assert shown(at) != before, f"changing {key} to {value!r} changed nothing shown"


def keyed_widgets(at) -> Iterator[Widget]:
    """Every widget with a key on the page as AppTest ran it, hidden ones included."""

    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)

    return (w for w in walk(at._tree) if isinstance(w, Widget) and w.key)


def widgets(at, skip: tuple[str, ...] = ()) -> list[Widget]:
    """Every keyed control on the page but the frame's, the confirm buttons and keys starting with ``skip``."""
    return [w for w in keyed_widgets(at) if not w.key.startswith(FRAME + skip) and not w.key.endswith("_confirm")]


def another_value(w: Widget):
    """A different, valid value a viewer might pick: a number half as large again, the next slider
    step, the last option (the neighbouring one can be equivalent: h100 → h200 is the same FLOP/s)."""
    if isinstance(w, NumberInput):
        v = w.value
        new = v * 1.5 if v else 1
        if w.max is not None and new > w.max:
            new = v / 2
        if w.min is not None and new < w.min:
            new = w.min
        return round(new) if isinstance(v, int) else new
    if isinstance(w, Slider):
        up = w.value + (w.step or 1)
        return up if w.max is None or up <= w.max else w.value - (w.step or 1)
    if isinstance(w, SelectSlider):
        i = w.options.index(w.format_func(w.value)) if hasattr(w, "format_func") else w.options.index(str(w.value))
        return type(w.value)(w.options[i - 1 if i else 1])
    if isinstance(w, Toggle):
        return not w.value
    if isinstance(w, Multiselect):
        return list(w.value)[:-1] if len(w.value) > 1 else w.options[:2]
    if isinstance(w, ButtonGroup):
        return w.options[-1] if w.options[-1] != w.value else w.options[0]
    raise AssertionError(f"no rule for {type(w).__name__} {w.key}")


def _set(w: Widget, value) -> None:
    """Set ``value``; a select box by position (its options are the labels shown)."""
    (w.select_index(value) if isinstance(w, Selectbox) else w.set_value(value)).run()


def _pick(w: Widget, values: Mapping[str, object]):
    if w.key in values:
        return values[w.key]
    if isinstance(w, Selectbox):
        last = len(w.options) - 1
        return last if w.index != last else 0
    return another_value(w)


def assert_every_control_counts(
    at,
    stem: str,
    disabled: set[str],
    view_keys: Iterable[str] = (),
    *,
    values: Mapping[str, object] | None = None,
    skip: tuple[str, ...] = (),
) -> list[str]:
    """The disabled controls are exactly ``disabled`` (with the reason), every control is bound to the
    URL under the page's prefix, and every enabled one but the view switches (``{stem}_view`` and
    ``view_keys``) changes what is shown, with no error; each change is put back before the next.
    ``values`` gives a key the value to try where ``another_value`` would not do. Returns the keys changed."""
    assert_clean(at)
    found = widgets(at, skip)
    assert {w.key for w in found if w.disabled} == disabled
    for w in found:
        assert w.key.startswith(f"{stem}_"), w.key  # ui.kit.links' reset finds it by this prefix
        assert w.proto.query_param_key == w.key, f"{w.key} is not bound to the URL"
        if w.disabled:
            assert w.help.startswith(NOT_USED), (w.key, w.help)
    fixed = {f"{stem}_view", *view_keys}
    changed: list[str] = []
    for key in [w.key for w in found if not w.disabled and w.key not in fixed]:
        before = shown(at)
        w = next(x for x in widgets(at, skip) if x.key == key)
        old, new = (w.index if isinstance(w, Selectbox) else w.value), _pick(w, values or {})
        _set(w, new)
        assert_clean(at)
        assert not at.error, (key, new, [e.value for e in at.error])
        assert shown(at) != before, f"changing {key} from {old!r} to {new!r} changed nothing shown"
        _set(next(x for x in widgets(at, skip) if x.key == key), old)
        changed.append(key)
    return changed
