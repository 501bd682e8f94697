"""Home: what kvviz is, and a map of the pages."""

from pathlib import Path

import streamlit as st

from kvviz.common.catalog import PAGES, SECTION_BLURBS, SECTIONS
from ui.kit.routing import ensure_navigation

PAGES_DIR = Path(__file__).resolve().parent
ensure_navigation()

st.title("kvviz: LLM KV caches")
st.markdown(
    "Serving a large language model keeps a **key/value (KV) cache** for every token it has read. "
    "Reusing it saves the prefill compute, but it is large, it must live somewhere, and it must "
    "move. These pages simulate the mechanisms of real systems (SGLang, Mooncake, CacheGen, "
    "CacheBlend, Strata) so you can see **where KV lives, how it is reused, and how it moves**, "
    "and every page puts the paper's numbers beside the simulation's."
)
st.caption("Use the sidebar to move between pages; **Presenter mode** enlarges everything for a projector.")

for section in SECTIONS:
    built = [p for p in PAGES if p.section == section and (PAGES_DIR / f"{p.stem}.py").exists()]
    if not built:
        continue
    st.subheader(section)
    st.caption(SECTION_BLURBS[section])
    cols = st.columns(2)
    for i, info in enumerate(built):
        with cols[i % 2].container(border=True):
            st.page_link(f"pages/{info.stem}.py", label=f"**{info.title}**", icon=info.icon)
            st.markdown(info.blurb)
