"""kvviz: the router and shared frame of the dashboard.

Every page file in ``pages/`` that the catalog names is listed in the navigation under its
section (``ui.kit.routing.sections``). The sidebar's presenter mode applies to every page; after a
page has run, its hidden controls are written back into the URL (``ui.kit.links.keep_hidden_params``).
An unexpected error in a page shows the viewer a short message with an error id; the server log
has its traceback under the same id.
"""

import streamlit as st

from ui.kit import links, presenter, routing
from ui.kit.errors import guarded

st.set_page_config(
    page_title="kvviz",
    page_icon=":material/memory:",
    **presenter.page_config(),
    menu_items={"About": "kvviz: how LLM KV caches behave, simulated from the papers and real systems."},
)

routing.drop_unusable_query_params()
routing.arrival_params()
page = st.navigation(routing.sections())
with st.sidebar:
    presenter.apply(presenter.toggle())
with routing.routed(), links.view_kept(page.url_path):  # a view's controls stay in its link when hidden
    guarded(page.run, page.url_path)
