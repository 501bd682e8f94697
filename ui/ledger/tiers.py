"""The ledger page's Tiers view (lecture 27 §6.3, ``kvviz.ledger.tiers``): chat sessions served by one GPU
that finds each history in the fastest tier holding it (GPU, CPU, SSD; LRU in each), the tier
setups compared by TTFT."""

from __future__ import annotations

from dataclasses import astuple

import streamlit as st

from kvviz.common import hardware as hw
from kvviz.common.budget import GIB
from kvviz.ledger import notes, tiers
from ui.kit import figures, frame, routing
from ui.kit.errors import user_errors
from ui.kit.tables import data_table

Q = dict(bind="query-params")
GB_KEYS = {"ledger_gpu_gb": "ledger_gpu_gib", "ledger_cpu_gb": "ledger_cpu_gib", "ledger_ssd_gb": "ledger_ssd_gib"}
"""The capacities' URL parameters when they were in GB, and in GiB now."""


def gb_links_in_gib() -> None:
    """A link from when the capacities were in GB (``ledger_gpu_gb=58``) opens the same view: each becomes
    its GiB parameter, to 0.01 GiB (a value that is not a number is dropped), then the run starts again,
    Streamlit seeding a control from the URL its run started with."""
    old = {key: raw for key in GB_KEYS if (raw := st.query_params.get(key)) is not None}
    for key, raw in old.items():
        routing.set_url_param(key, None)
        try:
            gib = float(raw) * hw.GB / GIB
        except ValueError:
            continue
        routing.set_url_param(GB_KEYS[key], f"{gib:.2f}")
    if old:
        st.rerun()


@st.cache_data(max_entries=16, ttl="1h", show_spinner="Simulating the tiered cache…")
def run_tiers(model_t: tuple, gpu_t: tuple, mfu_v: float, load: tuple, setups: tuple):
    mm, comp = hw.ModelSpec(*model_t), hw.Compute(hw.GPUSpec(*gpu_t), mfu_v)
    chat = tiers.ChatLoad(*load)
    summary, runs = tiers.compare(mm, comp, chat, [tiers.TierSetup(*s) for s in setups])
    return summary, tiers.ttft_by_source(runs), tiers.ttft_over_time(runs), tiers.total_kv_gib(mm, chat)


def view(name: str, m: hw.ModelSpec, compute: hw.Compute) -> None:
    """The Tiers view, for the sidebar's model (``name``, ``m``) on its GPU at its MFU: memory in GiB,
    links in GB/s."""
    gb_links_in_gib()
    c = st.columns(4)
    load = (
        c[0].number_input("Users", 1, 2000, 200, key="ledger_users", **Q),
        c[1].number_input("Turns each", 1, 100, 12, key="ledger_tturns", **Q),
        c[2].number_input("Requests/s", 0.1, 1000.0, 10.0, key="ledger_rps", **Q),
    )
    gpu_gib = c[3].number_input("GPU KV room (GiB)", 0.1, 10_000.0, 54.0, key="ledger_gpu_gib", **Q)
    c = st.columns(4)
    cpu_gib = c[0].number_input("CPU tier (GiB)", 0.0, 100_000.0, 47.0, key="ledger_cpu_gib", **Q)
    slow, fast = (
        c[1].number_input("Slow CPU reads (GB/s)", 0.01, 10_000.0, 10.0, key="ledger_slow", **Q),
        c[2].number_input("Fast CPU reads (GB/s)", 0.01, 10_000.0, 50.0, key="ledger_fast", **Q),
    )
    ssd_gib = c[3].number_input("SSD tier (GiB)", 0.0, 1_000_000.0, 466.0, key="ledger_ssd_gib", **Q)
    fill = (
        st.segmented_control(
            "Lower tiers hold",
            tiers.FILL_MODES,
            default="spill",
            key="ledger_fill",
            **Q,
            help="spill: what the tier above evicts; write-through: a copy of all new KV, as "
            "LMCache stores to every backend.",
        )
        or "spill"
    )
    with user_errors():
        setups = tiers.default_setups(gpu_gib, cpu_gib, slow, fast, ssd_gib, fill=fill)
        summary, by_source, over_time, total = run_tiers(
            astuple(m), astuple(compute.gpu), compute.mfu, load, tuple(astuple(s) for s in setups)
        )
    settings = {
        "model": name,
        "GPU": compute.gpu.name,
        "MFU": compute.mfu,
        "users, turns, requests/s": load,
        "GPU GiB": gpu_gib,
        "CPU GiB": cpu_gib,
        "slow GB/s": slow,
        "fast GB/s": fast,
        "SSD GiB": ssd_gib,
        "fill": fill,
    }
    figures.figure("ledger.fig_tiers", summary, key="ledger_fig_tiers")
    frame.terms("TTFT", "MFU")
    data_table(
        summary.drop(columns=["p50 TTFT s", "last 1/8: offered load"]).round(2), "ledger", "tier setups", settings
    )
    figures.figure("ledger.fig_tiers_time", over_time, key="ledger_fig_tiers_time")
    st.caption("Mean TTFT by where the history was found (requests in brackets); queueing is included.")
    data_table(by_source, "ledger", "TTFT by source", settings)
    frame.explain(
        "Users chat in sessions; each prompt is the user's whole history plus a new message. One GPU serves "
        "prefills first come, first served: it finds the history in the fastest tier that holds it, loads it, "
        "computes the rest. Every tier evicts the least recently used history."
    )
    frame.what_to_notice(notes.tiers_notes(summary, fill))
    frame.paper_vs_sim(tiers.paper_rows(summary, total), note=notes.TIERS_PAPER_NOTE)
