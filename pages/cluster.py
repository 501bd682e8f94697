"""Mooncake cluster: overload admission (early rejection and its oscillation), the Conductor's
KVCache-centric scheduling with rejection, and which router and how many instances meet a TTFT target
at the lowest cost; each view lives in ui/."""

import streamlit as st

from ui.cluster import overload as cluster_overload
from ui.cluster import routers as cluster_routers
from ui.cluster import scheduling as cluster_scheduling
from ui.kit import frame

frame.header(
    "cluster",
    "How Mooncake's disaggregated cluster copes with overload, where its Conductor sends each request so "
    "that KV already computed is reused, and which router and how many instances meet a target at the least cost.",
)
view = st.segmented_control(
    "View",
    ["Overload", "Scheduling", "Routers"],
    default="Overload",
    required=True,
    key="cluster_view",
    bind="query-params",
    label_visibility="collapsed",
)
if view == "Overload":
    cluster_overload.view()
elif view == "Scheduling":
    cluster_scheduling.view()
else:
    cluster_routers.view()
