"""The Tiers page's "What to buy" section: the cheapest deployment meeting the TTFT target (instances,
DRAM in DIMMs, SSD in drives, exact on those steps), then each tier's exact 80/90/95% capacities and
the DRAM and storage mixes for the instances as set, with the cost–TTFT front of the mixes tried.

The search is cut into cached steps (the capacities, then the mixes with one DRAM size at a time)
so the page draws a progress bar between them and a rerun finds every step cached. The steps run
in this process: a page must not start a process pool per viewer.
"""

from __future__ import annotations

from dataclasses import astuple

import pandas as pd
import streamlit as st

from kvviz.tiers.config import TierConfig
from kvviz.tiers.plan import Plan, Reach, default_sizes, pareto_front, plan, reaches, search_replays
from kvviz.tiers.replay import cost
from kvviz.tiers.search import Found, Targets
from kvviz.tiers.search import search as cheapest_search
from kvviz.traces import Trace
from ui.kit import figures
from ui.kit.work import confirm_cost, stepped
from ui.prefix_cache.views import prepared
from ui.tiers.cached import STORAGE_NAMES, Deployment

TIER_NAMES = {"gpu": "GPU memory", "dram": "host DRAM", **STORAGE_NAMES}
STORAGE_GIB = {"ssd": "SSD, GiB per instance", "remote": "The remote pool, GiB for the whole cluster"}
REACH_COLUMNS = {
    "tier": "Tier",
    "share": st.column_config.NumberColumn("Reaches", format="%d%%", help="This share of an infinite cache's hits."),
    "needs": st.column_config.TextColumn(
        "Needs",
        alignment="right",
        help="GiB per instance, with the tiers above it as set: none (reached without it) or never.",
    ),
    "cost": st.column_config.TextColumn(
        "Cluster $/h", alignment="right", help="What that capacity costs an hour on every instance together."
    ),
}
"""The capacity table's columns, short enough to read in full at projector size."""


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def capacities_reaching(key: str, chosen: tuple, _trace: Trace) -> tuple[list[Reach], int]:
    """Each tier's capacity at 80/90/95% of the ceiling, found by bisection; and the replays it took."""
    return reaches(prepared(key, _trace), Deployment(*chosen).config())


PAGE_REPLAYS = 40
"""The most deployments the page replays in its search (asked first when they are long); the command
line searches on."""


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Searching the cheapest deployment…")
def cheapest(key: str, chosen: tuple, target: float, _trace: Trace) -> Found:
    """The cheapest deployment of this model and GPU meeting the target (instances searched, DRAM and SSD
    in the sizes one buys); SSD only: a remote pool is sized by the mixes below."""
    config = Deployment(*chosen).config()
    return cheapest_search(prepared(key, _trace), config, Targets(target), max_replays=PAGE_REPLAYS)


def cheapest_sentence(found: Found, storage: str) -> tuple[bool, str]:
    """The search's answer as one sentence an engineer could forward (and whether there is one)."""
    best, target = found.best, found.targets.p90_s
    if best is None and found.exhausted:
        return False, (
            f"No deployment among the {len(found.tried):,} cheapest tried keeps TTFT p90 within {target:g} s; the "
            "page stops there: the command line's plan searches further."
        )
    if best is None:
        return False, (
            f"No deployment of up to 4,096 instances of these GPUs keeps TTFT p90 within {target:g} s on this trace: "
            "choose faster GPUs or relax the target."
        )
    dram = f"{gib(best['dram_gib'])} GiB of host DRAM" if best["dram_gib"] else "no host DRAM"
    ssd = f"{best['ssd_tb']:g} TB of {storage} ({best['ssd_drives']} drive(s))" if best["storage_gib"] else "no SSD"
    return True, (
        f"**Cheapest deployment that keeps TTFT p90 within {target:g} s: {best['instances']:,} instance(s), each with "
        f"{best['gpus']} GPU(s), {dram} and {ssd}**, at ${best['cost_per_hour']:,.2f} per hour for the whole cluster "
        f"(${best['cost_per_instance_hour']:,.2f} per instance; {found.config.prices.basis}). Its TTFT p50 "
        f"{best['ttft_p50_s']:.3g} s, p90 {best['ttft_p90_s']:.3g} s, p99 {best['ttft_p99_s']:.3g} s. Searched exactly "
        f"on {found.steps.describe()}: "
        f"{len(found.tried):,} deployment(s) replayed, cheapest first."
    )


@st.cache_data(max_entries=128, ttl=3600, show_spinner=False)
def grid_row(key: str, chosen: tuple, dram_gib: float, _trace: Trace) -> pd.DataFrame:
    """The search's mixes with ``dram_gib`` of DRAM: one row per storage size it tries."""
    # Only the plan's best mix reads the target, and only the rows are kept here: any target will do.
    row = plan(prepared(key, _trace), Deployment(*chosen).config(), 1.0, dram_sizes=[dram_gib], shares=(), workers=1)
    return row.grid


def search(key: str, trace: Trace, chosen: Deployment, target: float) -> Plan:
    """The plan for this deployment, step by step under a progress bar (asked first when it is long)."""
    replay = prepared(key, trace)
    config = chosen.config()
    dram, storage = default_sizes(replay, config)
    confirm_cost(cost(replay, search_replays(replay, len(dram) * len(storage))), "tiers_plan")
    plain = astuple(chosen)
    done = stepped(
        lambda d: "Finding each tier's capacities…" if d is None else f"Trying {gib(d)} GiB of DRAM…",
        [None, *dram],
        lambda d: capacities_reaching(key, plain, trace) if d is None else grid_row(key, plain, d, trace),
    )
    (found, runs), grid = done[0], pd.concat(done[1:], ignore_index=True)
    return Plan(config, target, tuple(found), grid, runs + len(grid))


def gib(size: float) -> str:
    """A size in GiB to three figures, in thousands without an exponent: 83.8, 114, 6,220."""
    return f"{size:,.0f}" if size >= 100 else f"{size:.3g}"


def reach_table(plan: Plan) -> pd.DataFrame:
    """One row per tier and share of the ceiling: the GiB per instance it needs and what that costs an hour.

    Stacked rather than a tier × share grid: four narrow columns read in full at projector size.
    """
    rows = []
    for r in plan.reaches:
        needs = "never" if r.gib is None else "none" if r.blocks == 0 else f"{gib(r.gib)} GiB"
        cost = "—" if r.gib is None else "$0.00" if r.blocks == 0 else f"${r.cost_per_hour:,.2f}"
        rows.append({"tier": TIER_NAMES[r.tier], "share": round(100 * r.share), "needs": needs, "cost": cost})
    return pd.DataFrame(rows, columns=list(REACH_COLUMNS))


def mixes(plan: Plan) -> pd.DataFrame:
    """The sizes tried, each labelled, and whether it is on the cost–TTFT front."""
    grid, storage = plan.grid, TIER_NAMES[plan.config.storage]
    sizes = list(zip(grid["dram_gib"], grid["storage_gib"]))
    on_front = set(zip(*(pareto_front(grid)[c] for c in ("dram_gib", "storage_gib"))))
    return grid.assign(
        mix=[f"DRAM {gib(d)} GiB, {storage} {gib(s)} GiB" for d, s in sizes], front=[p in on_front for p in sizes]
    )


def mix_columns(config: TierConfig) -> dict:
    """How the table of mixes names its columns: short names and rounded numbers, so all eight read in
    full at projector size (each explained in its tooltip)."""
    size, storage = st.column_config.NumberColumn, TIER_NAMES[config.storage]
    seconds = {q: size(f"{q} s", format="%.3f", help=f"TTFT {q}, seconds.") for q in ("p50", "p90", "p99")}
    return {
        "dram_gib": size("DRAM", format="%.4g", help="Host DRAM, GiB per instance."),
        "storage_gib": size(storage.removeprefix("the "), format="%.4g", help=f"{STORAGE_GIB[config.storage]}."),
        "cost_per_hour": size("Cluster $/h", format="$%.2f", help="What every instance together costs an hour."),
        "hit_ratio": size("Hits", format="%.0f%%", help="Share of block accesses that hit a tier."),
        **{f"ttft_{q}_s": column for q, column in seconds.items()},
        "front": st.column_config.CheckboxColumn("Front", help="On the cost–TTFT front: no mix is cheaper and faster."),
    }


def answer(key: str, trace: Trace, chosen: Deployment, target: float) -> int:
    """Draw the cheapest deployment as a sentence (searched with a local SSD; a remote pool is sized by the
    mixes below); returns the instance count the sections below start from (the sidebar's, when the search
    finds none or does not run)."""
    with st.container():  # always drawn: the elements below keep their places with a remote pool too
        if chosen.remote_gib:
            return chosen.instances
        confirm_cost(cost(prepared(key, trace), PAGE_REPLAYS), "tiers_cheapest")
        found = cheapest(key, astuple(chosen), target, trace)
        ok, sentence = cheapest_sentence(found, TIER_NAMES["ssd"])
        (st.success if ok else st.warning)(sentence, icon=":material/check_circle:" if ok else ":material/speed:")
    return chosen.instances if found.best is None else int(found.best["instances"])


def section(key: str, trace: Trace, chosen: Deployment, target: float) -> None:
    """Draw the capacities and the mixes for the instances as set: the cheapest mix or why there is none,
    the front, and what they say."""
    plan = search(key, trace, chosen, target)
    st.markdown(
        "**Capacity of each tier that reaches a share of an infinite cache's hits** "
        "(per instance, with the tiers above it as set)"
    )
    st.dataframe(reach_table(plan), width="stretch", hide_index=True, column_config=REACH_COLUMNS)
    best, storage = plan.best, TIER_NAMES[plan.config.storage]
    if best is None:
        fastest = plan.grid.sort_values("ttft_p90_s").iloc[0]
        st.warning(
            f"With {plan.config.instances:,} instance(s) as set, no DRAM and {storage} mix tried keeps TTFT p90 within "
            f"{target:g} s: the fastest reaches {fastest['ttft_p90_s']:.3g} s.",
            icon=":material/speed:",
        )
    else:
        st.success(
            f"With {plan.config.instances:,} instance(s) as set, the cheapest mix that keeps TTFT p90 within "
            f"{target:g} s: **{gib(best['dram_gib'])} GiB of DRAM and "
            f"{gib(best['storage_gib'])} GiB of {storage} per instance**, at ${best['cost_per_hour']:,.2f} per hour "
            "for the cluster "
            f"(p90 {best['ttft_p90_s']:.3g} s, hit ratio {best['hit_ratio']:.1%}).",
            icon=":material/check_circle:",
        )
    table = mixes(plan)
    figures.figure("tiers.fig_pareto", table, target, key="tiers_pareto")
    st.markdown("\n".join(f"- {point}" for point in notice(plan, target)))
    with st.expander("Every mix tried (sizes in GiB)"):
        tried = table.drop(columns="mix").assign(hit_ratio=100 * table["hit_ratio"])  # in percent, as its column says
        st.dataframe(tried, column_config=mix_columns(plan.config), width="stretch", hide_index=True)


def notice(plan: Plan, target: float) -> list[str]:
    """ "What to notice" read off the search."""
    gpu90 = next(r for r in plan.reaches if r.tier == "gpu" and r.share == 0.9)
    where = "never, even holding every prefix" if gpu90.gib is None else f"at {gib(gpu90.gib)} GiB per instance"
    prices, front = plan.config.prices, pareto_front(plan.grid)
    hbm, dram = prices.hbm_per_gib_hour(plan.config.gpu), prices.dram_per_gib_hour()
    ratio = f": {hbm / dram:,.0f} times less" if hbm > 0 and dram > 0 else ""
    points = [
        f"GPU memory alone reaches 90% of an infinite cache's hits {where}. A GiB of it costs ${hbm:.4f} per hour "
        f"(its share of the GPU-hour), a GiB of host DRAM ${dram:.4f}{ratio}.",
        f"{len(front)} of the {len(plan.grid)} mixes tried are on the cost–TTFT front: every other one is beaten "
        "on both cost and speed by one of them.",
    ]
    if plan.best is None:
        points.append(f"No mix meets the {target:g} s target: more memory cannot, so compute (GPUs) is the limit.")
    return points
