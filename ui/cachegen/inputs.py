"""The CacheGen page's streaming controls: the bandwidth trace, context, SLO and level sizes, in the sidebar."""

from __future__ import annotations

import streamlit as st

from kvviz.cachegen.inputs import BandwidthSpec, StreamInputs
from kvviz.common import glossary
from ui.cachegen.codec import STEM, slider
from ui.kit import links
from ui.kit.traces import upload_name

SOURCES = {"Persistent": "persistent", "i.i.d.": "iid", "Step": "step", "Upload": "upload"}  # label -> kind
SIZES = {"Synthetic KV": "synthetic", "Record-world KV": "model"}
RECOMPUTE = {"Prefill model": "prefill", "Fixed 0.2 s": "fixed"}
NOT_RANDOM = "Not used here: the step trace and an upload are one fixed trace, with nothing to draw at random."


def choice(label: str, options: dict, key: str, **kw) -> str:
    """A required segmented control over ``options``' labels, bound to the URL; the chosen label's value."""
    first = next(iter(options))
    picked = st.segmented_control(
        label, list(options), default=first, required=True, key=f"{STEM}_{key}", bind="query-params", **kw
    )
    return options[picked or first]


def stream_inputs(fresh_traces: bool) -> StreamInputs:
    """The sidebar's streaming controls; ``fresh_traces``: the view draws K random traces of its own."""
    with st.sidebar:
        st.header("Bandwidth")
        source = choice(
            "Bandwidth trace",
            SOURCES,
            "bw",
            help="Persistent: each chunk's bandwidth follows the "
            "last one's. i.i.d.: the artifact's Uniform(0.1, 10) Gb/s per chunk. Step: 10 → 1 → 5 Gb/s "
            f"(lecture 27 §4.2).\n\n{glossary.define('AR(1)')}\n\n{glossary.define('i.i.d.')}",
        )
        random = source in ("persistent", "iid") or fresh_traces
        persistence = slider(
            "Persistence (lag-1 correlation per chunk)",
            0.0,
            0.99,
            0.9,
            "persist",
            0.01,
            disabled=source != "persistent",
            help="Not used here: only the Persistent (AR(1)) trace has a persistence."
            if source != "persistent"
            else glossary.define("AR(1)"),
        )
        seed = st.number_input(
            "Trace seed",
            0,
            10**6,
            0,
            key=f"{STEM}_seed",
            bind="query-params",
            disabled=not random,
            help=None if random else NOT_RANDOM,
        )
        traces = st.select_slider(
            "Random traces (K)",
            [100, 300, 1000, 3000],
            1000,
            key=f"{STEM}_k",
            bind="query-params",
            disabled=not random,
            help=None if random else NOT_RANDOM,
        )
        csv, csv_name = None, ""
        if source == "upload":
            up = st.file_uploader(
                "Bandwidth CSV (`time_s, gbps`)",
                type=["csv", "txt"],
                key=f"{STEM}_csv",
                max_upload_size=1,
                help="Parsed as numbers only; it stays in your session.",
            )
            csv, csv_name = (up.getvalue(), upload_name(up.name)) if up else (None, "")
        st.header("Context and SLO")
        slo = slider(
            "SLO (s)",
            0.1,
            5.0,
            1.0,
            "slo",
            0.05,
            help=f"The TTFT each request must meet. {glossary.define('SLO')}\n\n{glossary.define('TTFT')}",
        )
        context = st.number_input(
            "Context (tokens)", 1, 1_000_000, 9_500, 100, key=f"{STEM}_context", bind="query-params"
        )
        chunk = st.number_input("Chunk (tokens)", 1, 1_000_000, 1_500, 100, key=f"{STEM}_chunk", bind="query-params")
        sizes = choice(
            "Level sizes encoded from",
            SIZES,
            "sizes",
            help="A synthetic chunk with "
            "Mistral-7B's 32 layers, or the record-world model's real KV; quality is always measured on "
            "the record-world model.",
        )
        recompute = choice(
            "Text recompute",
            RECOMPUTE,
            "recompute",
            help="How long the GPU takes to recompute a "
            "chunk sent as text: the prefill model of Mistral-7B on an A40, or the artifact's 0.2 s.",
        )
    if source == "upload" and csv is None:
        st.info(
            "Upload a CSV with two columns, `time_s, gbps` (header optional, times increasing, "
            "bandwidth > 0), up to 1 MiB.",
            icon=":material/upload_file:",
        )
        links.stop()
    bandwidth = BandwidthSpec(source, int(traces), float(persistence), int(seed), csv, csv_name)
    return StreamInputs(sizes, int(context), int(chunk), float(slo), recompute, bandwidth)
