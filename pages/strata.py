"""Strata's I/O: why copying KV back to the GPU is slower than the link, and how Strata fixes it."""

import streamlit as st

from kvviz.common import hardware as hw
from kvviz.strata import io as sio
from ui.kit import frame, links
from ui.kit.errors import user_errors
from ui.ledger import inputs as ledger_inputs
from ui.strata import views as strata_views

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
    name, gpu_name, mfu = ledger_inputs.model_gpu_mfu(
        "strata",
        hw.MODEL_TITLES,
        hw.GPU_TITLES,
        ("The model whose KV is copied.", "The GPU that computes the new tokens."),
        (model_unused, gpu_unused),
        gpu="h200",
    )


@links.view_fragment("strata")
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
        settings = {"model": hw.MODEL_TITLES[name], "L0 µs": overhead, "GPU I/O GB/s": gpu_io}
        shared = strata_views.Shared(m, hw.GPU_TITLES[gpu_name], mfu, compute, overhead, gpu_io, knee, settings)
        {"Page size": strata_views.page_size, "Loading-bound": strata_views.loading_bound}.get(
            view, strata_views.balanced_batching
        )(c, shared)

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
        sio.paper_rows(ledger_inputs.titled(hw.MODELS, hw.MODEL_TITLES)["llama-3-8b"], overhead, knee, *fcfs_bal),
        note="The overhead is one "
        "number fitted to two paper points, not a measurement. The burst uses Qwen2.5-14B on an H200 with "
        "GPU-assisted I/O; the notes' request lengths are not given, so 28K-token documents, 256-token "
        "questions and 3.5K-token fresh prompts were chosen to land near the notes' totals (a calibration); "
        f"balanced batching's stall comes out {stall} than the notes' "
        f"({fcfs_bal[1].stall_s:.2f} s against {sio.PAPER_BURST_STALL_S[1]:.2f} s).",
    )


body()
