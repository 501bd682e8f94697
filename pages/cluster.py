"""Mooncake cluster: overload admission (early rejection and its oscillation) and the Conductor's
KVCache-centric scheduling with rejection; each view lives in ui/."""

import streamlit as st

from ui.cluster import overload as cluster_overload
from ui.cluster import scheduling as cluster_scheduling
from ui.kit import frame

frame.header(
    "cluster",
    "How Mooncake's disaggregated cluster copes with overload, and where its Conductor sends "
    "each request so that KV already computed is reused.",
)
view = st.segmented_control(
    "View",
    ["Overload", "Scheduling"],
    default="Overload",
    required=True,
    key="cluster_view",
    bind="query-params",
    label_visibility="collapsed",
)
if view == "Overload":
    cluster_overload.view()
else:
    cluster_scheduling.view()
