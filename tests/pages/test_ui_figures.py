"""ui.kit.figures: builders keyed by module and name, so pages share one figure cache without clashes."""

from __future__ import annotations

import pytest

from kvviz.prefix_cache import figures as prefix_cache
from kvviz.traces import figures as trace
from ui.kit import figures


def test_builders_are_keyed_by_module_and_name():
    assert figures.BUILDERS["trace.fig_arrivals"] is trace.fig_arrivals
    assert figures.BUILDERS["prefix_cache.fig_prefix_tree"] is prefix_cache.fig_prefix_tree
    assert all(name.count(".") == 1 and name.split(".")[1].startswith("fig_") for name in figures.BUILDERS)
    assert figures.builder_name("trace.fig_arrivals") == "trace.fig_arrivals"


def test_a_name_without_its_module_or_unknown_is_refused_with_the_list():
    for name in ("fig_arrivals", "nope.fig_y"):  # a bare name could mean two modules' fig_timeline
        with pytest.raises(KeyError, match=f"no figure builder '{name}'.*trace.fig_arrivals"):
            figures.builder_name(name)
