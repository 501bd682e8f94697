"""The Strata page's three views, each drawn into the page's row of inputs (``c``, four columns)
with the settings every view shares: the model whose KV is copied, the per-copy overhead and the
GPU-assisted I/O bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from kvviz.common import hardware as hw
from kvviz.strata import io as sio
from ui.kit import figures, frame
from ui.kit.tables import Header, data_table, download_csv, readable

Q = dict(bind="query-params")


@dataclass(frozen=True)
class Shared:
    """What every view reads: the chosen model and GPU, the copy path's overhead and bandwidth,
    the balanced-batching knee, and the settings a CSV download is headed with."""

    model: hw.ModelSpec
    gpu_name: str  # as the page names it (H200)
    mfu: float
    compute: hw.Compute
    overhead: float
    gpu_io: float
    knee: float
    settings: dict


PRESENTER_WORDS = {"GPU-assisted": "GPU", "DMA page 32": "DMA", "cached tokens": "cached"}
"""Shorter words for the loading table's headers in presenter mode, so that it reads in full at 1366 px."""


def short_headers(columns) -> dict | None:
    """In presenter mode, the headers in ``PRESENTER_WORDS`` (each full name in its header's tooltip)."""
    if not frame.presenter():
        return None
    headers = {}
    for column in map(str, columns):
        short = column
        for long, word in PRESENTER_WORDS.items():
            short = short.replace(long, word)
        if short != column:
            headers[column] = Header(short, column)
    return readable(columns, headers=headers)


def page_size(c: list, s: Shared) -> None:
    """Copy bandwidth against page size on one of the paper's platforms."""
    m, overhead, gpu_io, settings = s.model, s.overhead, s.gpu_io, s.settings
    platform = c[2].selectbox("Platform", [p for p, _, _ in sio.PAPER_POINTS], key="strata_platform", **Q)
    link_gb_s, share = next((b, e) for p, b, e in sio.PAPER_POINTS if p == platform)
    flight = c[3].number_input(
        "Copies in flight C",
        1,
        1024,
        1,
        key="strata_flight",
        **Q,
        help="Little's law: C copies in flight multiply throughput, up to the link.",
    )
    io = sio.IOPath(link_gb_s, overhead, flight, gpu_io)
    sweep = sio.page_sweep(m, io, 8192, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    figures.figure("strata.fig_page_sweep", sweep, link_gb_s, platform, [(32, share)], key="strata_fig_pages")
    table = sweep[sweep["page tokens"].isin([1, 32, 1024])].round(3)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={"share of peak": st.column_config.NumberColumn(format="percent")},
    )
    download_csv(
        sweep.round(4),
        "strata",
        "bandwidth by page size",
        settings | {"platform": platform, "link GB/s": link_gb_s, "copies in flight": flight},
    )
    st.caption(
        f"Little's law: X = C·S/L. {flight} × {sio.slice_bytes(m, 32) / 1024:.0f} KiB copies in flight, "
        f"each taking {overhead:.1f} µs + its wire time, move "
        f"{io.bandwidth(m, 32, 'layer-first DMA') / hw.GB:.1f} GB/s at page 32."
    )


def loading_bound(c: list, s: Shared) -> None:
    """Load time against compute time as the cached share of a request grows."""
    m, compute, overhead, gpu_io, settings = s.model, s.compute, s.overhead, s.gpu_io, s.settings
    gpu_name, mfu = s.gpu_name, s.mfu
    new = c[2].number_input("New tokens per request", 1, 100_000, 256, key="strata_new", **Q)
    paths = {
        "GPU-assisted": min(gpu_io, 64) * hw.GB,
        "DMA page 32": sio.IOPath(64, overhead).bandwidth(m, 32, "layer-first DMA"),
    }
    curve = sio.loading_curve(m, compute, new, sio.log_ratios(), paths)
    knees = {k: sio.knee_ratio(m, compute, new, v) for k, v in paths.items()}
    figures.figure("strata.fig_loading", curve, knees, new, key="strata_fig_loading")
    shown = curve.iloc[::10].round(1)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=short_headers(shown.columns))
    download_csv(
        curve.round(3),
        "strata",
        "load and compute time",
        settings
        | {"GPU": gpu_name, "MFU": mfu, "new tokens": new, **{f"knee {k}": round(v, 2) for k, v in knees.items()}},
    )


def balanced_batching(c: list, s: Shared) -> None:
    """The notes' burst scheduled first come first served and by balanced batching."""
    gpu_io, knee = s.gpu_io, s.knee
    qwen, h200 = hw.MODELS["qwen2.5-14b"], hw.Compute(hw.GPUS["h200"], hw.DEFAULT_MFU)
    cc = st.columns(4)
    doc, question, fresh = (
        cc[0].number_input("Document tokens", 1, 1_000_000, 28_672, key="strata_doc", **Q),
        cc[1].number_input("Question tokens", 1, 100_000, 256, key="strata_q", **Q),
        cc[2].number_input("Fresh prompt tokens", 1, 1_000_000, 3_584, key="strata_fresh", **Q),
    )
    reqs = sio.burst_example(doc, question, fresh)
    threshold = cc[3].number_input(
        "Threshold (load/compute)",
        0.1,
        10_000.0,
        round(knee, 1),
        key="strata_thr",
        **Q,
        help="Balanced batching defers a request that would lift the batch's cached "
        f"÷ new tokens above it. In pairs: two document questions make "
        f"{doc / question:,.0f}, one with a fresh prompt "
        f"{doc / (question + fresh):,.1f}; any threshold between batches alike.",
    )
    size = c[2].number_input("Requests per batch", 1, 64, 2, key="strata_batch", **Q)
    runs = [sio.schedule(reqs, qwen, h200, min(gpu_io, 64) * hw.GB, p, size, threshold) for p in ("fcfs", "balanced")]
    st.caption(
        "The notes' setting: Qwen2.5-14B on an H200, GPU-assisted I/O, batches of 2: 8 questions on "
        "different long documents, then 8 fresh prompts, twice, all queued at once."
    )
    figures.figure("strata.fig_timeline", runs, key="strata_fig_timeline")
    table = (
        sio.schedule_frame(runs[0])
        .merge(sio.schedule_frame(runs[1]), on="batch", how="outer", suffixes=(" FCFS", " balanced"))[
            ["batch", "requests FCFS", "stall s FCFS", "requests balanced", "stall s balanced"]
        ]
        .round(3)
    )
    data_table(
        table,
        "strata",
        "batches FCFS vs balanced",
        {
            "model": hw.MODEL_TITLES["qwen2.5-14b"],
            "GPU": hw.GPU_TITLES["h200"],
            "GPU I/O GB/s": min(gpu_io, 64),
            "requests per batch": size,
            "threshold": threshold,
            "document, question, fresh tokens": f"{doc}, {question}, {fresh}",
        },
    )
