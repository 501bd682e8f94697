"""Figures built and styled once per input, then replayed on every rerun.

Building a plotly figure and styling it (``ui.kit.redraw.styled``) takes 0.2–0.6 s per
figure on this machine, most of a warm rerun: plotly validates every property it is given. The
same inputs give the same figure, so it is kept in ``st.cache_resource`` (shared, never copied;
``st.plotly_chart`` only reads it through ``to_dict``, which deep-copies) and keyed on the
builder's name, presenter mode and the inputs. A builder is named, not passed (a cached function
never receives a callable), as ``"module.fig_name"``, so every page's figures share the one cache.
Positional inputs that are costly to hash (a whole trace) go with a small ``cache_key`` that
stands for them (its fingerprint) and are then not hashed; keyword inputs are always hashed.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from kvviz.cluster import figures as routers
from kvviz.eviction import figures as eviction
from kvviz.ledger import figures as ledger
from kvviz.mooncake import figures as cluster
from kvviz.prefix_cache import figures as prefix_cache
from kvviz.radix import figures as radix
from kvviz.radix import schedule_figures as radix_schedule
from kvviz.strata import figures as strata
from kvviz.tiers import figures as tiers
from kvviz.traces import figures as trace
from ui.kit import frame
from ui.kit.redraw import styled

MODULES = {
    "cluster": cluster,
    "eviction": eviction,
    "ledger": ledger,
    "prefix_cache": prefix_cache,
    "radix": radix,
    "radix_schedule": radix_schedule,
    "routers": routers,
    "strata": strata,
    "tiers": tiers,
    "trace": trace,
}
# "module.fig_name": two pages' modules may both have a fig_timeline and still share the one cache.
BUILDERS = {
    f"{short}.{name}": getattr(module, name)
    for short, module in MODULES.items()
    for name in dir(module)
    if name.startswith("fig_")
}
NO_KEY = ""


def builder_name(name: str) -> str:
    """``name`` itself when it is a builder's ``"module.fig_name"`` key; else a KeyError listing them."""
    if name not in BUILDERS:
        raise KeyError(f"no figure builder {name!r}: name it as 'module.fig_name' from {', '.join(sorted(BUILDERS))}")
    return name


@st.cache_resource(max_entries=96, ttl="1h", show_spinner=False)
def _styled(name: str, presenter: bool, cache_key: str, args: tuple, kwargs: tuple, _args: tuple) -> go.Figure:
    """The styled figure; with a ``cache_key`` the positional inputs travel unhashed in ``_args``."""
    return styled(BUILDERS[name](*_args, **dict(kwargs)), presenter)


def figure(name: str, *args: Any, key: str, cache_key: str = NO_KEY, **kwargs: Any) -> None:
    """Draw ``BUILDERS[name](*args, **kwargs)`` full width in the kvviz style, from the cache.
    ``name`` is ``"module.fig_name"`` (``"trace.fig_arrivals"``), the module in ``kvviz.figures``."""
    fig = _styled(
        builder_name(name), frame.presenter(), cache_key, () if cache_key else args, tuple(sorted(kwargs.items())), args
    )
    st.plotly_chart(fig, width="stretch", theme=None, key=key)
