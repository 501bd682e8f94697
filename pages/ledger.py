"""Where should KV live? KV size, load vs recompute, storage economics, tiers and Strata's I/O."""

import streamlit as st

from ui.kit import frame
from ui.ledger import inputs as ledger_inputs
from ui.ledger import tiers as ledger_tiers
from ui.ledger import views as ledger_views
from ui.ledger.inputs import Q

VIEWS = ("Size", "Load or recompute", "Economics", "Tiers")

frame.header(
    "ledger",
    "How big KV is, when loading it beats recomputing it, what keeping it costs, "
    "and what a tier of CPU memory or SSD buys. (How the copy back to the GPU behaves: "
    "the Strata I/O page.)",
)
view = (
    st.segmented_control("View", VIEWS, default="Size", key="ledger_view", label_visibility="collapsed", **Q) or "Size"
)

models, gpus, links = ledger_inputs.presets()


if view == "Tiers":
    ledger_tiers.view(*ledger_inputs.sidebar(models, gpus))
else:
    ledger_views.VIEWS[view](models, gpus, links)
