"""Where a page gets its trace: the session's trace, the synthetic generator, the bundled example,
or an upload. Parsing and generation are cached on their inputs (file bytes, never the upload
object), and an upload stays in the uploader's session.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import streamlit as st

from kvviz.trace import DEFAULT_BLOCK_SIZE, MAX_BYTES, MAX_REQUESTS, Trace, fingerprint, load_trace
from kvviz.workload import WorkloadConfig, generate
from ui.frame import plain, user_errors

EXAMPLE = Path(__file__).resolve().parents[1] / "assets" / "example_trace.jsonl"
SESSION_KEY = "kvviz_trace_spec"
HASH_TRACE = {Trace: fingerprint}
"""``hash_funcs`` for ``st.cache_data`` functions that take a Trace: key them on its content."""
SOURCES = ("Session trace", "Synthetic", "Example", "Upload")


@st.cache_data(max_entries=8, ttl="1h", show_spinner="Parsing the trace…")
def parse_trace(data: bytes, block_size: int, name: str) -> Trace:
    """Parse trace bytes (cached on the bytes themselves)."""
    return load_trace(data, block_size, name=name)


@st.cache_data(max_entries=16, ttl="1h", show_spinner="Generating the synthetic workload…")
def synthetic_trace(**knobs) -> Trace:
    """Generate a synthetic trace (cached on the generator's knobs)."""
    return generate(WorkloadConfig(**knobs))


def trace_from_spec(spec: dict) -> Trace:
    """Rebuild a trace from the small description kept in the session."""
    if spec["kind"] == "synthetic":
        return synthetic_trace(**spec["knobs"])
    if spec["kind"] == "example":
        return parse_trace(EXAMPLE.read_bytes(), DEFAULT_BLOCK_SIZE, "example trace")
    return parse_trace(spec["data"], spec["block_size"], spec["name"])


def session_trace() -> Trace | None:
    """The trace this browser session loaded on the Trace page, if any."""
    spec = st.session_state.get(SESSION_KEY)
    return trace_from_spec(spec) if spec else None


# Trace controls live in the URL (a shareable view) and in the session (kept across pages).
KEEP = {"bind": "query-params", "persist_state": "session"}


def _synthetic_knobs(prefix: str) -> dict:
    d = WorkloadConfig()
    st.caption("Synthetic workload")
    knobs = dict(
        requests=st.number_input("Requests", 100, 50_000, d.requests, 100, key=f"{prefix}_requests", **KEEP),
        seed=st.number_input("Seed", 0, 10**6, d.seed, key=f"{prefix}_seed", **KEEP),
        share_doc_qa=st.slider("Share: document QA", 0.0, 1.0, d.share_doc_qa, 0.05, key=f"{prefix}_qa", **KEEP),
        share_chat=st.slider("Share: multi-turn chat", 0.0, 1.0, d.share_chat, 0.05, key=f"{prefix}_chat",
                             **KEEP),
        share_oneshot=st.slider("Share: one-shot", 0.0, 1.0, d.share_oneshot, 0.05, key=f"{prefix}_oneshot",
                                **KEEP),
        documents=st.number_input("Documents in the pool", 1, 100_000, d.documents, key=f"{prefix}_docs", **KEEP),
        doc_zipf=st.slider("Document popularity skew (Zipf)", 0.0, 2.0, d.doc_zipf, 0.05, key=f"{prefix}_zipf",
                           **KEEP),
        rate=st.number_input("Arrival rate (requests/s)", 0.1, 1000.0, d.rate, 0.5, key=f"{prefix}_rate", **KEEP),
    )
    return {**{f.name: getattr(d, f.name) for f in fields(d)}, **knobs}


def _upload(prefix: str) -> dict | None:
    block_size = st.number_input("Block size (tokens per hash id)", 1, 1 << 20, DEFAULT_BLOCK_SIZE,
                                 key=f"{prefix}_block_size", persist_state="session")
    file = st.file_uploader(
        "Trace file (Mooncake JSONL or CSV)", type=["jsonl", "json", "csv", "txt"], key=f"{prefix}_upload",
        max_upload_size=MAX_BYTES // 2**20,
        help=f"Up to {MAX_BYTES // 2**20} MiB and {MAX_REQUESTS:,} requests. Parsed as data only; "
             "it stays in your session.")
    if file is None:
        # Widgets forget a file when you leave the page; the session still has the last upload.
        earlier = st.session_state.get(SESSION_KEY)
        if earlier and earlier["kind"] == "upload":
            st.caption("Showing the trace you uploaded earlier in this session.")
            return {**earlier, "block_size": int(block_size)}
        return None
    return {"kind": "upload", "data": file.getvalue(), "block_size": int(block_size), "name": "uploaded trace"}


def trace_picker(prefix: str, *, keep: bool = False) -> Trace | None:
    """Sidebar controls that choose a trace; returns it, or None while an upload is awaited.

    With ``keep`` the choice becomes the session's trace, which other pages can replay.
    Bad uploads show a message naming the line and field and stop this page's run.
    """
    has_session = SESSION_KEY in st.session_state and not keep
    options = SOURCES if has_session else SOURCES[1:]
    with st.sidebar:
        st.header("Trace")
        source = st.segmented_control("Source", options, default=options[0], required=True,
                                      key=f"{prefix}_source", **KEEP)
        if source == "Session trace":
            spec = st.session_state[SESSION_KEY]
        elif source == "Synthetic":
            spec = {"kind": "synthetic", "knobs": _synthetic_knobs(prefix)}
        elif source == "Example":
            spec = {"kind": "example"}
        else:
            spec = _upload(prefix)
    if spec is None:
        return None
    with user_errors():
        trace = trace_from_spec(spec)
    if keep:
        st.session_state[SESSION_KEY] = spec
    for warning in trace.warnings:
        st.warning(plain(warning, 500))
    return trace

