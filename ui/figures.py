"""Figures built and styled once per input, then replayed on every rerun.

Building a plotly figure and styling it (``kvviz.style.style_figure``) takes 0.2–0.6 s per
figure on this machine, most of a warm rerun: plotly validates every property it is given. The
same inputs give the same figure, so it is kept in ``st.cache_resource`` (shared, never copied;
``st.plotly_chart`` only reads it through ``to_dict``, which deep-copies) and keyed on the
builder's name, presenter mode and the inputs. A builder is named, not passed: a cached function
never receives a callable. Positional inputs that are costly to hash (a whole trace) go with a
small ``cache_key`` that stands for them (its fingerprint) and are then not hashed; keyword
inputs are always hashed.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from kvviz.figures import cluster, eviction, prefix_cache, radix, radix_schedule, trace
from kvviz.style import style_figure
from ui import frame

BUILDERS = {name: getattr(module, name) for module in (cluster, eviction, prefix_cache, radix, radix_schedule, trace)
            for name in dir(module) if name.startswith("fig_")}
NO_KEY = ""


@st.cache_resource(max_entries=96, ttl="1h", show_spinner=False)
def _styled(name: str, presenter: bool, cache_key: str, args: tuple, kwargs: tuple, _args: tuple) -> go.Figure:
    """The styled figure; with a ``cache_key`` the positional inputs travel unhashed in ``_args``."""
    return style_figure(BUILDERS[name](*_args, **dict(kwargs)), presenter)


def figure(name: str, *args: Any, key: str, cache_key: str = NO_KEY, **kwargs: Any) -> None:
    """Draw ``BUILDERS[name](*args, **kwargs)`` full width in the kvviz style, from the cache."""
    fig = _styled(name, frame.presenter(), cache_key, () if cache_key else args, tuple(sorted(kwargs.items())), args)
    st.plotly_chart(fig, width="stretch", theme=None, key=key)
