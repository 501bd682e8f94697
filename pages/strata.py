"""Strata's I/O: why copying KV back to the GPU is slower than the link, and how Strata fixes it."""

import streamlit as st

from kvviz.common import glossary
from kvviz.common import hardware as hw
from kvviz.strata import io as sio
from ui import figures, frame
from ui.errors import user_errors
from ui.tables import data_table, download_csv

VIEWS = ("Page size", "Loading-bound", "Balanced batching")
Q = dict(bind="query-params")

frame.header(
    "strata",
    "A CPU→GPU copy pays a fixed cost per transfer: small pages waste the link, long cached "
    "contexts become loading-bound, and Strata's layout and batching win it back.",
)
view = (
    st.segmented_control(
        "Show", VIEWS, default=VIEWS[0], key="strata_view", bind="query-params", label_visibility="collapsed"
    )
    or VIEWS[0]
)
NOTES_SETTING = "Not used here: balanced batching replays the notes' setting, Qwen2.5-14B on an H200."
model_unused = NOTES_SETTING if view == VIEWS[2] else ""
gpu_unused = {
    VIEWS[0]: "Not used here: copy bandwidth depends on the model's KV layout and the link, not on the GPU's compute.",
    VIEWS[2]: NOTES_SETTING,
}.get(view, "")
with st.sidebar:
    name = st.selectbox(
        "Model",
        list(hw.MODELS),
        index=list(hw.MODELS).index("llama-3-8b"),
        key="strata_model",
        disabled=bool(model_unused),
        help=model_unused or "The model whose KV is copied.",
        **Q,
    )
    gpu_name = st.selectbox(
        "GPU",
        list(hw.GPUS),
        index=list(hw.GPUS).index("h200"),
        key="strata_gpu",
        disabled=bool(gpu_unused),
        help=gpu_unused or "The GPU that computes the new tokens.",
        **Q,
    )
    mfu = st.number_input(
        "MFU (model FLOPs utilisation)",
        0.01,
        1.0,
        hw.DEFAULT_MFU,
        0.05,
        format="%.3f",
        key="strata_mfu",
        disabled=bool(gpu_unused),
        help=f"{gpu_unused}\n\n{glossary.define('MFU')}".strip(),
        **Q,
    )


@st.fragment
def body() -> None:
    """Everything under the sidebar: a change of the view's own inputs reruns only this part."""
    fitted = sio.paper_overhead_us()
    c = st.columns(4)
    overhead = c[0].number_input(
        "Per-copy overhead L0 (µs)",
        0.0,
        1000.0,
        round(fitted, 2),
        key="strata_l0",
        **Q,
        help=f"Fitted to Strata's 22% (PCIe 5.0) and 5% (GH200), 64 KiB copies: {fitted:.2f} µs",
    )
    gpu_io = c[1].number_input(
        "GPU-assisted I/O (GB/s)",
        0.1,
        10_000.0,
        sio.GPU_IO_GB_S,
        key="strata_gpu_io",
        **Q,
        help="Strata's GPU copy kernel: its bandwidth, whatever the page size.",
    )
    qwen, h200 = hw.MODELS["qwen2.5-14b"], hw.Compute(hw.GPUS["h200"], hw.DEFAULT_MFU)
    # One container for the view: the teaching text, notes and paper table after it keep their place, so a
    # view switch does not remount them (Streamlit keys an element by its position).
    with user_errors(), st.container():
        m, compute = hw.MODELS[name], hw.Compute(hw.GPUS[gpu_name], mfu)
        knee = sio.knee_ratio(qwen, h200, 256, sio.IOPath(gpu_io_gb_s=gpu_io).bandwidth(qwen, 32, "GPU-assisted"))
        settings = {"model": name, "L0 µs": overhead, "GPU I/O GB/s": gpu_io}
        if view == "Page size":
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
        elif view == "Loading-bound":
            new = c[2].number_input("New tokens per request", 1, 100_000, 256, key="strata_new", **Q)
            paths = {
                "GPU-assisted": min(gpu_io, 64) * hw.GB,
                "DMA page 32": sio.IOPath(64, overhead).bandwidth(m, 32, "layer-first DMA"),
            }
            curve = sio.loading_curve(m, compute, new, sio.log_ratios(), paths)
            knees = {k: sio.knee_ratio(m, compute, new, v) for k, v in paths.items()}
            figures.figure("strata.fig_loading", curve, knees, new, key="strata_fig_loading")
            st.dataframe(curve.iloc[::10].round(1), hide_index=True, width="stretch")
            download_csv(
                curve.round(3),
                "strata",
                "load and compute time",
                settings
                | {
                    "GPU": gpu_name,
                    "MFU": mfu,
                    "new tokens": new,
                    **{f"knee {k}": round(v, 2) for k, v in knees.items()},
                },
            )
        else:
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
            runs = [
                sio.schedule(reqs, qwen, h200, min(gpu_io, 64) * hw.GB, p, size, threshold)
                for p in ("fcfs", "balanced")
            ]
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
                    "model": "qwen2.5-14b",
                    "GPU": "h200",
                    "GPU I/O GB/s": min(gpu_io, 64),
                    "requests per batch": size,
                    "threshold": threshold,
                    "document, question, fresh tokens": f"{doc}, {question}, {fresh}",
                },
            )

    frame.explain(
        "A CPU→GPU copy costs a fixed overhead plus bytes ÷ bandwidth, so one copy in flight reaches "
        "X = C·S/L (Little's law). GPU layouts are layer-first: one page of one layer's K or V per copy. "
        "Strata keeps host memory page-first and copies with a small GPU kernel."
    )
    frame.what_to_notice(
        [
            "Layer-first pages cut KV into tiny copies; a fixed cost per copy then dominates, the more so on a faster "
            "link.",
            "A long cached context with a short question is loading-bound: compute cannot hide the load.",
            "Balanced batching pairs load-heavy with compute-heavy requests so each batch's compute hides its load.",
        ]
    )
    fcfs_bal = [sio.schedule(sio.burst_example(), qwen, h200, 50 * hw.GB, p, 2, knee) for p in ("fcfs", "balanced")]
    stall = "lower" if fcfs_bal[1].stall_s < sio.PAPER_BURST_STALL_S[1] else "not lower"
    frame.paper_vs_sim(
        sio.paper_rows(hw.MODELS["llama-3-8b"], overhead, knee, *fcfs_bal),
        note="The overhead is one "
        "number fitted to two paper points, not a measurement. The burst uses Qwen2.5-14B on an H200 with "
        "GPU-assisted I/O; the notes' request lengths are not given, so 28K-token documents, 256-token "
        "questions and 3.5K-token fresh prompts were chosen to land near the notes' totals (a calibration); "
        f"balanced batching's stall comes out {stall} than the notes' "
        f"({fcfs_bal[1].stall_s:.2f} s against {sio.PAPER_BURST_STALL_S[1]:.2f} s).",
    )


body()
