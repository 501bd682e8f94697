"""Trace: a request trace's arrivals, lengths, block popularity and reuse."""

import pandas as pd
import streamlit as st

from kvviz.common import budget
from kvviz.traces import UPLOAD_LIMIT_MIB, Trace, fingerprint
from kvviz.traces.stats import is_mooncake_trace, paper_rows, trace_notes, trace_stats
from kvviz.traces.timeunits import on_page
from ui.kit import figures, frame, links
from ui.kit.errors import user_errors
from ui.kit.tables import download_csv
from ui.kit.text import plain
from ui.kit.traces import keep_in_library_button, trace_picker
from ui.kit.work import confirm_memory
from ui.prefix_cache.views import tree_of
from ui.trace.reuse import reuse_of

frame.header(
    "trace",
    "How a serving workload reuses KV: who arrives when, how long the prompts are, "
    "and how often each 512-token block comes back.",
)
frame.explain(
    "A trace in the **Mooncake format** lists requests, one JSON object per line: arrival time (ms), "
    "input and output length (tokens) and `hash_ids`, one id per block of the prompt. The ids are "
    "**chained hashes** — block *k*'s id depends on blocks 1…*k* — so two requests share the *k*-th id "
    "exactly when their first *k* blocks are equal. Equal leading ids are reusable KV. Pick a source in "
    "the sidebar; the trace you load here is the one the other pages replay."
)

trace = trace_picker("trace")
if trace is None:
    st.info(
        f"Pick a trace from the library, or upload one: Mooncake JSONL (`timestamp` in ms, `input_length`, "
        f"`output_length`, `hash_ids` of 512-token blocks), Qwen-Bailian JSONL (seconds, 16-token blocks), or CSV — "
        f"Mooncake's columns, or an arrival, prompt and output column by the names vidur, splitwise, Azure and "
        f"BurstGPT use. Plain, .gz or .zst, up to {UPLOAD_LIMIT_MIB} MiB as uploaded. *How to read the file* sets the"
        f" format, block size and time unit when the defaults do not fit.",
        icon=":material/upload_file:",
    )
    links.stop()


@st.cache_data(max_entries=16, ttl="1h", show_spinner=False)
def stats_of(key: str, _trace: Trace):
    """The trace's statistics (cached on its fingerprint)."""
    return trace_stats(_trace)


fp = fingerprint(trace)
with user_errors():  # the statistics and, with block ids, the reuse distances
    confirm_memory(budget.replay_memory(budget.REUSE if trace.has_block_ids else budget.STATS, trace), "trace_stats")
stats = stats_of(fp, trace)
st.caption(f"**{plain(trace.name)}** · block size {trace.block_size} tokens")
if trace.how_read:
    with st.expander("How the file was read"):
        st.markdown("\n".join(f"- {plain(on_page(note), 500)}" for note in trace.how_read))
keep_in_library_button("trace")
with st.container(horizontal=True):
    st.metric("Requests", f"{stats.requests:,}", border=True)
    st.metric("Time span", f"{stats.time_span_s:,.0f} s", border=True)
    st.metric(
        "Mean input",
        f"{stats.mean_input_tokens:,.0f} tok",
        border=True,
        help=f"median {stats.median_input_tokens:,.0f}",
    )
    st.metric(
        "Mean output",
        f"{stats.mean_output_tokens:,.0f} tok",
        border=True,
        help=f"median {stats.median_output_tokens:,.0f}",
    )
if trace.has_block_ids:
    with st.container(horizontal=True):
        st.metric(
            "Block accesses",
            f"{stats.block_accesses:,}",
            border=True,
            help=f"{stats.distinct_blocks:,} distinct blocks",
        )
        st.metric(
            "Reusable (∞ cache)",
            f"{stats.infinite_cache_hit_fraction:.1%}",
            border=True,
            help="Accesses whose block was seen before: the hit ratio of an infinite cache.",
        )
        st.metric(
            "Never reused",
            f"{stats.never_reused_block_fraction:.1%}",
            border=True,
            help="Share of distinct blocks accessed exactly once.",
        )
        st.metric(
            "Top 1% of blocks",
            f"{stats.top1pct_hit_share:.1%}",
            border=True,
            help="Share of all hits that the most popular 1% of blocks take.",
        )
else:
    st.warning(
        "This trace has no block ids (`hash_ids`): the arrival and length views work, but cache "
        "replay (eviction curves, radix tree, cluster scheduling) needs block ids.",
        icon=":material/warning:",
    )

figures.figure("trace.fig_arrivals", trace, cache_key=fp, key="trace_arrivals")
if trace.has_block_ids:
    counts, distances = reuse_of(fp, trace)
    left, right = st.columns(2) if frame.presenter() else (st.container(), st.container())
    with left:
        figures.figure("trace.fig_popularity", counts, cache_key=fp, key="trace_popularity")
    with right:
        figures.figure("trace.fig_reuse_distances", distances, cache_key=fp, key="trace_reuse")
    frame.explain(
        "The **stack distance** of an access is the number of *other* distinct blocks touched since the "
        "same block was last used. An LRU cache of *C* blocks hits exactly the accesses with distance "
        "below *C*, so the orange curve is the whole LRU hit-ratio curve, read off in one pass "
        "(Mattson et al., 1970). First accesses never hit: they cap it at the infinite-cache line.",
        label="Reading the reuse-distance chart",
    )
    if box := frame.folded("The trace's prefix tree: its 200 most shared prefixes", "trace_tree"):
        with box:
            figures.figure(
                "prefix_cache.fig_prefix_tree", tree_of(fp, 200, trace), cache_key=fp, key="trace_prefix_tree"
            )

with st.container(horizontal=True):
    st.download_button(
        "Download trace (JSONL)",
        trace.to_jsonl,
        file_name="trace.jsonl",
        mime="application/jsonl",
        icon=":material/download:",
        on_click="ignore",
    )
    download_csv(
        pd.DataFrame([stats.to_dict()]), "trace", "stats", {"block size (tokens)": trace.block_size}, trace=trace.name
    )

frame.what_to_notice(trace_notes(stats))
frame.paper_vs_sim(
    paper_rows(stats, graded=is_mooncake_trace(trace)),
    note="Mooncake's numbers come from its own one-hour trace of 23,608 requests, the course notes' from their "
    "synthetic load; only Mooncake's trace is graded against them. Any other trace is shown beside them, not "
    "compared: its numbers describe it, not how well it matches.",
)
