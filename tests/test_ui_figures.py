"""ui.figures: builders keyed by module and name, so pages share one figure cache without clashes."""

from __future__ import annotations

import pytest

from kvviz.figures import prefix_cache, trace
from ui import figures


def test_builders_are_keyed_by_module_and_name():
    assert figures.BUILDERS["trace.fig_arrivals"] is trace.fig_arrivals
    assert figures.BUILDERS["prefix_cache.fig_prefix_tree"] is prefix_cache.fig_prefix_tree
    assert all(name.count(".") == 1 and name.split(".")[1].startswith("fig_") for name in figures.BUILDERS)
    assert figures.builder_name("trace.fig_arrivals") == "trace.fig_arrivals"


def test_a_bare_name_resolves_only_while_one_module_has_it():
    assert figures.builder_name("fig_arrivals") == "trace.fig_arrivals"
    assert figures.short_names(["radix.fig_tree", "trace.fig_tree", "trace.fig_arrivals"]) == \
        {"fig_arrivals": "trace.fig_arrivals"}
    with pytest.raises(KeyError, match="no figure builder 'nope.fig_y'"):
        figures.builder_name("nope.fig_y")
