"""The Tiers page's router section: the deployment's instances, each keeping its own GPU cache, behind
each router chosen and at each number of instances chosen; a table, a figure and what to notice.

The runs are :mod:`kvviz.cluster`'s (through :func:`kvviz.cluster.deployment.cluster_config`, which turns the
sidebar's deployment into the cluster's instances), one cached step per router and instance count under
a progress bar; the one shared cache of the same GPU memory stands beside them, labelled as the reference.
"""

from __future__ import annotations

from dataclasses import astuple, replace

import pandas as pd
import streamlit as st

from kvviz.cluster import REFERENCE, ROUTER_RULES, ROUTERS, cost, reference_row, run, summary_row
from kvviz.cluster.deployment import DECODE_S_PER_TOKEN, cluster_config
from kvviz.cluster.simulate import ClusterConfig, ClusterRun, with_target
from kvviz.common import budget
from kvviz.common import hardware as hw
from kvviz.tiers.config import TierConfig
from kvviz.traces import Trace
from ui.kit import figures
from ui.kit.errors import user_errors
from ui.kit.work import confirm_cost, confirm_memory, stepped
from ui.prefix_cache.views import prepared
from ui.tiers.cached import Deployment

Q = {"bind": "query-params"}
DEFAULT_ROUTERS = ("round-robin", "cache-aware", "kv-aware")
COUNTS = (2, 3, 4, 6, 8, 12, 16)
DEFAULT_COUNTS = (2, 4, 8)
"""Instance counts to compare beside the one the search chose (the comparison starts there)."""
COLUMNS = {
    "router": st.column_config.TextColumn("Router"),
    "instances": st.column_config.NumberColumn("Inst."),
    "hits_pct": st.column_config.NumberColumn(
        "Hits",
        format="%.1f%%",
        help="Share of block accesses found in the instance's own cache (its GPU, and its DRAM and storage when "
        "they are included).",
    ),
    "dram_pct": st.column_config.NumberColumn(
        "DRAM", format="%.1f%%", help="Of the hits, the share of block accesses found in the instance's host DRAM."
    ),
    "storage_pct": st.column_config.NumberColumn(
        "Storage", format="%.1f%%", help="Of the hits, the share of block accesses found in storage."
    ),
    "shared_pct": st.column_config.NumberColumn(
        "One cache",
        format="%.1f%%",
        help="The reference, not a deployment: the hits of one shared cache of all these instances' GPU memory.",
    ),
    "ttft_p50_s": st.column_config.NumberColumn("p50 s", format="%.3g", help="TTFT, seconds."),
    "ttft_p90_s": st.column_config.NumberColumn("p90 s", format="%.3g", help="TTFT, seconds."),
    "ttft_p99_s": st.column_config.NumberColumn("p99 s", format="%.3g", help="TTFT, seconds."),
    "imbalance": st.column_config.NumberColumn(
        "Imbal.", format="%.2f", help="Load imbalance: the busiest instance's prefill time over the mean (1: even)."
    ),
    "dollars_per_hour": st.column_config.NumberColumn("$/h", format="$%.2f", help="The whole cluster."),
    "dollars_per_m_input_tokens": st.column_config.NumberColumn(
        "$/M tok.", format="$%.3f", help="Per million input tokens, at the trace's own rate."
    ),
    "target": st.column_config.TextColumn(
        "p90 target", help="Whether TTFT p90 meets the target; the cheapest that does."
    ),
}
"""The comparison's columns, short enough to read at projector size."""


ONE_REPLICA = (
    "Not used here: behind a router each instance is one model replica, so Tensor parallel must equal the "
    "GPUs per instance."
)


def controls(off: bool) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The routers and instance counts to compare (both in the URL); ``off``: disabled, saying why."""
    left, right = st.columns(2)
    rules = "\n\n".join(f"**{name}**: {rule}" for name, rule in ROUTER_RULES.items())
    routers = left.multiselect(
        "Routers", ROUTERS, default=list(DEFAULT_ROUTERS), key="tiers_routers", **Q, disabled=off,
        help=f"{ONE_REPLICA}\n\n{rules}" if off else rules,
    )  # fmt: skip
    one = "Each instance is one model replica with the GPU memory for KV set in the sidebar."
    counts = right.multiselect(
        "Instances", COUNTS, default=list(DEFAULT_COUNTS), key="tiers_router_counts", **Q, disabled=off,
        help=ONE_REPLICA if off else one,
    )  # fmt: skip
    return tuple(r for r in ROUTERS if r in routers), tuple(sorted(counts))


def with_tiers() -> bool:
    """Whether each instance keeps the sidebar's host DRAM and storage (in the URL)."""
    return st.checkbox(
        "Each instance with the sidebar's host DRAM and storage", False, key="tiers_router_tiers", **Q,
        help="Off: GPU memory only. On: each instance is HiCache with its own DRAM and SSD; a remote pool is one "
        "storage every instance writes through and prefetches from. Every block found is loaded (the sidebar's "
        "loading choices apply to the single instance above).",
    )  # fmt: skip


def routed_deployment(chosen: Deployment, instances: int, tiers: bool) -> TierConfig:
    """The sidebar's deployment at ``instances`` instances, GPU memory only or with its DRAM and storage,
    its loads as the routed cluster models them (every block found loaded, whatever the sidebar's load
    choices, which apply to the single instance above)."""
    sizes = {} if tiers else {"dram_gib": 0.0, "ssd_gib": 0.0, "remote_gib": 0.0}
    return chosen.config(instances=instances, overlap=True, load="load", **sizes)


@st.cache_data(max_entries=256, ttl=3600, show_spinner=False)
def served(key: str, cluster: ClusterConfig, router: str, _trace: Trace) -> ClusterRun | dict:
    """One router's run of the trace (fingerprint ``key``) over ``cluster``; ``REFERENCE``: the shared
    cache's row. Keyed on the cluster without its prices, which change no request's path."""
    replay = prepared(key, _trace)
    if router == REFERENCE:
        return reference_row(replay, cluster)
    return run(replay, router, cluster, trace=_trace)


def router_row(key: str, chosen: tuple, router: str, instances: int, trace: Trace, tiers: bool = False) -> dict:
    """One router at one instance count (``REFERENCE``: the shared cache of their GPU memory), priced at
    the sidebar's prices. One instance is the cluster of two with one left: every router sends it every
    request."""
    cluster = cluster_config(routed_deployment(Deployment(*chosen), max(instances, 2), tiers), prepared(key, trace))
    cluster = replace(cluster, instances=instances)
    done = served(key, replace(cluster, gpu_price=None, memory_per_hour=0.0), router, trace)
    return done if router == REFERENCE else summary_row(done, cluster)


def starting_at(start: int, counts: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The counts to compare, from ``start`` (the search's answer) up, and those chosen below it (left out)."""
    return tuple(sorted({start, *(c for c in counts if c > start)})), tuple(c for c in counts if c < start)


def compared(
    key: str, trace: Trace, chosen: Deployment, routers: tuple, counts: tuple, target: float, tiers: bool = False
) -> pd.DataFrame:
    """Every router at every count, then the reference for each count, under a progress bar."""
    with user_errors():
        confirm_memory(budget.replay_memory(budget.CLUSTER, trace, max(counts), max(counts)), "tiers_routers")
    replay = prepared(key, trace)
    confirm_cost(cost(replay, len(routers) * len(counts)), "tiers_routers")
    steps = [(r, n) for n in counts for r in (*routers, REFERENCE)]
    plain = astuple(chosen)
    rows = stepped(
        lambda s: f"Serving the trace with {s[1]} instances behind {s[0]}…",
        steps,
        lambda s: router_row(key, plain, s[0], s[1], trace, tiers),
    )
    return with_target(pd.DataFrame(rows), target)


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The routers' rows as the page shows them, each beside the reference at its instance count."""
    served = table["router"] != REFERENCE
    shared = table[~served].set_index("instances")["hit_ratio"]
    rows = table[served].assign(target=[w for w, s in zip(target_words(table), served) if s])
    rows = rows.assign(hits_pct=100 * rows["hit_ratio"], shared_pct=100 * rows["instances"].map(shared).to_numpy())
    rows = rows.assign(**{f"{t}_pct": 100 * rows[f"{t}_hits"] / rows["accesses"] for t in ("dram", "storage")})
    lower = (rows["dram_hits"] + rows["storage_hits"]).sum() > 0
    return rows[[c for c in COLUMNS if lower or c not in ("dram_pct", "storage_pct")]].reset_index(drop=True)


def target_words(table: pd.DataFrame) -> list[str]:
    """Each row against the target: "cheapest", "meets", "misses" (the reference: blank, it is no deployment)."""
    words = []
    for router, meets, cheapest in zip(table["router"], table["meets_target"], table["cheapest"]):
        words.append("" if router == REFERENCE else "cheapest" if cheapest else "meets" if meets else "misses")
    return words


def answer(table: pd.DataFrame, each: str, target: float, tiers: bool = False) -> str:
    """The comparison's answer as one sentence an engineer could forward; ``each``: one instance's GPUs
    ("1 × H100"); ``tiers``: each instance also keeps the sidebar's host DRAM and storage."""
    served = table[table["router"] != REFERENCE]
    if not table["cheapest"].any():
        fast = served.sort_values("ttft_p90_s").iloc[0]
        return (
            f"None of these routers and instance counts keeps TTFT p90 within {target:g} s; the fastest is "
            f"{fast['router']} at {fast['instances']:,} instance(s) (p90 {fast['ttft_p90_s']:.3g} s): add instances."
        )
    c = table[table["cheapest"]].iloc[0]
    where = "one instance of " + each + " (with one instance there is no router to choose)"
    if c["instances"] > 1:
        where = f"{c['instances']:,} instances of {each} behind {c['router']}"
    return (
        f"Behind a router, each instance keeping its own GPU memory{' and DRAM' if tiers else ''}, the cheapest "
        "that keeps TTFT p90 within "
        f"{target:g} s is {where}, at "
        f"${c['dollars_per_hour']:,.2f} per hour for the whole cluster (TTFT p90 {c['ttft_p90_s']:.3g} s, "
        f"p99 {c['ttft_p99_s']:.3g} s)."
    )


def notice(table: pd.DataFrame, each: str, target: float, tiers: bool = False) -> list[str]:
    """ "What to notice" read off the comparison shown, its answer first (``answer``)."""
    served = table[table["router"] != REFERENCE]
    top = int(served["instances"].max())
    at_top = served[served["instances"] == top].sort_values("hits", ascending=False)
    shared = table[(table["router"] == REFERENCE) & (table["instances"] == top)]["hit_ratio"].iloc[0]
    best, worst = at_top.iloc[0], at_top.iloc[-1]
    lines = [answer(table, each, target, tiers)]
    lines.append(
        f"At {top} instances {best['router']} hits {best['hit_ratio']:.1%} of block accesses"
        + (f" and {worst['router']} {worst['hit_ratio']:.1%}" if len(at_top) > 1 else "")
        + f"; one shared cache of all their {'GPU memory and DRAM' if tiers else 'GPU memory'}, the reference, "
        f"would hit {shared:.1%}."
    )
    fetching = served[served["fetched"] > 0]
    if len(fetching):
        most = fetching.sort_values("fetched").iloc[-1]
        lines.append(
            f"{most['router']} at {most['instances']} instances also copied {most['fetched'] / most['accesses']:.1%} "
            "of block accesses from another instance's cache instead of computing them (not counted in Hits)."
        )
    uneven = served.sort_values("imbalance").iloc[-1]
    lines.append(
        f"The most uneven is {uneven['router']} at {uneven['instances']} instances: its busiest instance prefills "
        f"{uneven['imbalance']:.2f} times the mean."
    )
    return lines


def section(key: str, trace: Trace, chosen: Deployment, target: float, start: int) -> tuple[list[str], bool] | None:
    """The controls, the table and the figure, the instance counts starting at ``start`` (the count the
    search above chose); returns what to notice, its answer first, and whether any row meets the target
    (None: nothing compared)."""
    st.caption(
        "Here each instance keeps **its own GPU memory** and a router chooses which instance serves each request, "
        "as real clusters do. The comparison uses the sidebar's GPU memory, model, GPU, MFU, eviction policy and "
        "prices, and, when ticked, its host DRAM and storage for each instance. Prefill is first come first served "
        f"per instance; decode is not simulated (a request holds its place {DECODE_S_PER_TOKEN:g} s per output "
        f"token in the routers' loads). The instance counts start at the {start:,} the search above chose."
    )
    off = chosen.gpus != chosen.tp
    routers, picked = controls(off)
    if off:
        st.info("Behind a router each instance is one model replica: set Tensor parallel to the GPUs per instance.")
        return None
    if not routers:
        st.info("Choose at least one router to compare.")
        return None
    tiers = with_tiers()
    counts, below = starting_at(start, picked)
    table = compared(key, trace, chosen, routers, counts, target, tiers)
    st.dataframe(shown(table), width="stretch", hide_index=True, column_config=COLUMNS)
    if below:
        st.caption(
            f"Left out: {', '.join(map(str, below))} instance(s), fewer than the {start:,} the search chose; "
            "the comparison starts there."
        )
    figures.figure(
        "routers.fig_routers",
        table,
        target,
        cache_key=f"{key}|{chosen}|{routers}|{counts}|{target}|{tiers}",
        key="tiers_routers_fig",
    )
    return notice(table, f"{chosen.gpus} × {hw.GPU_TITLES[chosen.gpu]}", target, tiers), bool(table["cheapest"].any())
