"""Prefix-cache replay: a trace cached the way SGLang's RadixCache caches it, beside a block cache."""

import streamlit as st

from kvviz import prefix_cache as pc
from ui.kit import frame
from ui.kit.errors import user_errors
from ui.kit.traces import replay_trace_picker
from ui.prefix_cache import controls, views

VIEWS = ("Curves", "Worked example", "Per request", "Over time", "Prefix tree")
ENGINES = ("SGLang", "vLLM")
EXPLAIN = (
    "A serving engine keeps KV in a **prefix tree** (SGLang's RadixCache): a request reuses the longest cached "
    "prefix of its prompt and recomputes everything after the first block it misses. The tree evicts **leaves "
    "only**, so a shared head outlives the private tails hanging from it. A **block cache** (the Eviction page, "
    "libCacheSim) sees the same blocks as a flat sequence and may evict any of them — the head of a prompt "
    "included, after which the rest is useless. *Prefix mode* counts only the hits a prefix cache could use.\n\n"
    "This replay follows RadixCache's rules at page size = the trace's block size: match, evict the shortfall "
    "(whole leaves in the policy's order, cascading to parents), insert; requests complete instantly, so no "
    "request holds a lock while another is served. The replay equals the Radix cache page's tree hit for hit "
    "(tested). SGLang's policies:\n\n"
    + "\n".join(f"- **{p.label}**: {p.rule}." for p in pc.PrefixPolicy)
    + "\n- **priority** is left out: a trace carries no request priorities, so it would be LRU.\n\n"
    "SGLang's scheduler inserts a prompt into the tree twice — after prefill, so that other requests can "
    "share it, and again when the request finishes. As of SGLang 0.5.23 a request adds one to the hit count "
    "of every node on its path once (the second insert counts only what lies past the first); LFU and SLRU "
    "read that count. A request that finishes at its first token is inserted once. The replay does the same."
    "\n\n"
    "**vLLM** (engine choice above) keeps no tree: each full block has a hash that also covers its parent's, "
    "a request's lookup stops at the first block whose hash is not cached, and blocks that no running request "
    "holds wait in one free queue. A finished request returns its blocks to the queue's tail, its last block "
    "first; a new block is taken from the head, and the hash it held is dropped. So vLLM evicts one block at a "
    "time where SGLang evicts a whole leaf of its tree, however many blocks the leaf holds. Its curve is drawn "
    "beside the SGLang policies you pick."
)


def trace_view(view: str, engine: str) -> tuple[list[str], list[dict]]:
    """A view of a trace: the trace and cache controls in the sidebar, then the view; its notes and paper rows."""
    trace = replay_trace_picker("prefix")
    choice = controls.cache_controls(view, engine)
    setup = controls.setup(choice, trace, engine)
    controls.trace_caption(setup, choice, view)
    with user_errors():
        return {
            "Curves": views.curves_view,
            "Per request": views.requests_view,
            "Over time": views.time_view,
            "Prefix tree": views.tree_view,
        }[view](setup)


frame.header(
    "prefix_cache",
    "How much KV a serving engine's prefix cache reuses from a trace, beside a block cache "
    "with the same policy and memory.",
)
# The view and the engine share a row, so that a stepped view's figure starts higher on the first screen.
with st.container(horizontal=True, gap="large"):
    view = controls.pick_one("View", VIEWS, "prefix_view")
    engine = controls.pick_one(
        "Engine",
        ENGINES,
        "prefix_engine",
        **controls.unused("engine", "SGLang's radix tree, or vLLM's block pool beside it.", view=view, engine=""),
    )
# The view draws into one container, so the teaching text, notes and paper table after it keep their place on
# the page and a view switch does not remount them (Streamlit keys an element by its position).
with st.container():
    notes, rows = views.example_view(engine) if view == "Worked example" else trace_view(view, engine)

frame.explain(EXPLAIN)
frame.what_to_notice(notes)
if rows:
    frame.paper_vs_sim(
        rows,
        note=(
            "Tair KVCache's LiteHit README (§10) works five requests through two blocks by hand; this page "
            "replays the same five with its own kernels, so the counts must match exactly. LiteHit's tail-first LRU "
            "equals SGLang's leaf-only LRU here because every node is one block. The memory prices are the course "
            "notes', which the Ledger page uses too: inputs, not results."
        ),
    )
