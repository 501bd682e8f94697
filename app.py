"""kvviz: the router and shared frame of the dashboard.

Every page file in ``pages/`` that the catalog names is listed in the navigation under its
section; ``url_path`` is the file stem (a different one breaks deep links with a ``pages/``
folder). The sidebar's presenter mode applies to every page; after a page has run, its hidden controls
are written back into the URL (``ui.links.keep_hidden_params``). An unexpected error in a page shows
the viewer a short message with an error id; the server log has its traceback under the same id.
"""

from pathlib import Path

import streamlit as st

from kvviz.common.catalog import PAGES, SECTIONS
from ui.errors import guarded
from ui import links, presenter
from ui.frame import arrival_params, drop_unusable_query_params

ROOT = Path(__file__).resolve().parent

st.set_page_config(
    page_title="kvviz",
    page_icon=":material/memory:",
    **presenter.page_config(),
    menu_items={"About": "kvviz: how LLM KV caches behave, simulated from the papers and real systems."},
)

sections: dict[str, list] = {"": [st.Page(ROOT / "pages" / "home.py", title="Home", icon=":material/home:",
                                          url_path="home", default=True)]}
for section in SECTIONS:
    for info in PAGES:
        path = ROOT / "pages" / f"{info.stem}.py"
        if info.section == section and path.exists():
            sections.setdefault(section, []).append(
                st.Page(path, title=info.title, icon=info.icon, url_path=info.stem))

drop_unusable_query_params()
arrival_params()
page = st.navigation(sections)
with st.sidebar:
    presenter.apply(presenter.toggle())
with links.hidden_params_kept(page.url_path):   # a view's controls stay in its link when hidden
    guarded(page.run, page.url_path)
