"""The Cluster page's Routers view: a trace served by instances that each keep their own GPU cache, behind
each router chosen and at each instance count chosen. The answer comes first, where it is seen at a
glance: the router and instance count that keep TTFT p90 within the target at the lowest cost. Then the
comparison (the Tiers page's table and figure) and what to notice.

Each router at each count is one cached run of :func:`kvviz.cluster.run` under a progress bar; the one
shared cache of the same GPU memory stands beside them, labelled as the reference.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from kvviz.cluster import (
    ENGINES,
    REFERENCE,
    ROUTER_RULES,
    ROUTERS,
    ClusterConfig,
    cost,
    reference_row,
    run,
    summary_row,
)
from kvviz.cluster.simulate import with_target
from kvviz.common import budget
from kvviz.common import hardware as hw
from kvviz.traces import Trace, fingerprint
from ui.kit import figures, frame, links
from ui.kit.errors import user_errors
from ui.kit.traces import trace_picker
from ui.kit.work import confirm_cost, confirm_memory, stepped
from ui.prefix_cache.views import prepared
from ui.tiers.routers import COLUMNS, COUNTS, DEFAULT_COUNTS, DEFAULT_ROUTERS, notice, shown

Q = {"bind": "query-params"}
ENGINE_NAMES = dict(zip(ENGINES, ("SGLang (radix cache)", "vLLM + LMCache (GPU only)"), strict=True))
"""Each engine as the page names it (the URL carries these words; a link with the code opens the same view)."""


@st.cache_data(max_entries=256, ttl=3600, show_spinner=False)
def router_row(key: str, config: ClusterConfig, router: str, _trace: Trace) -> dict:
    """One router's run on ``config``'s instances (``REFERENCE``: the shared cache of their GPU memory)."""
    replay = prepared(key, _trace)
    if router == REFERENCE:
        return reference_row(replay, config)
    return summary_row(run(replay, router, config, trace=_trace), config)


def controls() -> tuple[tuple[str, ...], tuple[int, ...], ClusterConfig, float]:
    """The sidebar's routers, instance counts, each instance's cache and engine, and the TTFT target."""
    st.header("Routers")
    rules = "\n\n".join(f"**{name}**: {rule}" for name, rule in ROUTER_RULES.items())
    routers = st.multiselect("Routers", ROUTERS, default=list(DEFAULT_ROUTERS), key="cluster_routers", **Q, help=rules)
    counts = st.multiselect("Instances", COUNTS, default=list(DEFAULT_COUNTS), key="cluster_router_counts", **Q)
    blocks = st.number_input(
        "GPU cache per instance (blocks)", 16, 1_000_000, 4096, 256, key="cluster_router_blocks", **Q
    )
    engine = links.worded(
        st.selectbox, "Engine", ENGINE_NAMES, "cluster_engine",
        help="Each instance's stack: SGLang's radix cache, or vLLM's block pool (LMCache's backends off).",
    )  # fmt: skip
    target = st.number_input("TTFT p90 target (s)", 0.01, 600.0, 1.0, 0.1, key="cluster_router_target", **Q)
    chosen = tuple(r for r in ROUTERS if r in routers), tuple(sorted(counts))
    return *chosen, ClusterConfig(blocks=int(blocks), engine=engine), float(target)


def compared(trace: Trace, routers: tuple, counts: tuple, config: ClusterConfig, target: float) -> pd.DataFrame:
    """Every router at every count, then the reference for each count, under a progress bar."""
    key = fingerprint(trace)
    with user_errors():
        confirm_memory(budget.replay_memory(budget.CLUSTER, trace, max(counts), max(counts)), "cluster_routers")
        confirm_cost(cost(prepared(key, trace), len(routers) * len(counts), config), "cluster_routers")
    steps = [(r, n) for n in counts for r in (*routers, REFERENCE)]
    rows = stepped(
        lambda s: f"Serving the trace with {s[1]} instances behind {s[0]}…",
        steps,
        lambda s: router_row(key, replace(config, instances=s[1]), s[0], trace),
    )
    return with_target(pd.DataFrame(rows), target)


def view() -> None:
    """The answer first, then the comparison and what to notice."""
    trace = trace_picker("cluster")
    if trace is None or not trace.has_block_ids:
        st.info("Load a trace that lists each request's block ids to compare routers.")
        links.stop()
    with st.sidebar:
        routers, counts, config, target = controls()
    if not routers or not counts:
        st.info("Choose at least one router and one instance count to compare.")
        return
    table = compared(trace, routers, counts, config, target)
    each = f"1 × {hw.GPU_TITLES[config.gpu]} serving {hw.MODEL_TITLES[config.model]}"
    notes = notice(table, each, target)
    (st.success if table["cheapest"].any() else st.warning)(notes[0], icon=":material/hub:")
    st.dataframe(shown(table), width="stretch", hide_index=True, column_config=COLUMNS)
    figures.figure(
        "routers.fig_routers", table, target, cache_key=f"{fingerprint(trace)}|{config}|{routers}|{counts}|{target}",
        key="cluster_routers_fig",
    )  # fmt: skip
    st.caption(
        f"Each instance keeps its own {config.blocks:,} GPU blocks ({ENGINE_NAMES[config.engine]}); prefill is first "
        "come first served per instance; decode is not simulated. One shared cache of all their GPU memory is the "
        "reference, not a deployment."
    )
    frame.what_to_notice(notes)
