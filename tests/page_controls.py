"""Change each control of a page in AppTest and require that something the viewer sees changes.

A control that changes nothing on the view shown is a dead control (issue 14): it must be hidden,
or disabled with its reason. ``shown`` is everything visible as text or data — figure specs,
tables, dataframes, markdown, captions, metrics — so a change anywhere counts.
"""

from __future__ import annotations

from collections.abc import Iterable

from tests.conftest import assert_clean

Change = tuple[str, str, object]          # (widget kind as AppTest names it, key, new value)


def shown(at) -> tuple:
    return (tuple(c.proto.spec for c in at.get("plotly_chart")),
            tuple(df.value.to_csv() for df in at.dataframe), tuple(t.value.to_csv() for t in at.table),
            tuple(m.value for m in at.markdown), tuple(c.value for c in at.caption),
            tuple((m.label, m.value) for m in at.metric))


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
