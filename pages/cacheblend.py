"""CacheBlend: reusing non-prefix KV on a tiny trained LLaMA, and which tokens to recompute."""

import streamlit as st

from kvviz.cacheblend import blend
from kvviz.cacheblend import report as R
from kvviz.common import glossary
from ui.cacheblend import cached, views
from ui.cacheblend.cached import EVAL_SEED, N_DOCS
from ui.kit import frame, links
from ui.kit.errors import user_errors

STEM = "cacheblend"
VIEWS = ("One document", "Accuracy vs ratio", "Loading controller", "The model")
OFF_MODEL = "Not used here: this view shows {}, not the tiny model's documents."
OFF_SEED = f"Not used here: the accuracy is over {N_DOCS} fresh documents of its own (seed {EVAL_SEED})."


frame.header(
    STEM,
    "Concatenating chunks' precomputed KV loses cross-chunk attention; CacheBlend recomputes "
    "the few tokens whose KV deviates most. Shown on a 4-layer LLaMA trained here, in numpy.",
)

view = (
    st.segmented_control(
        "View", VIEWS, default=VIEWS[0], key=f"{STEM}_view", bind="query-params", label_visibility="collapsed"
    )
    or VIEWS[0]
)
documents_used = view in VIEWS[:2]
off = (
    None
    if documents_used
    else OFF_MODEL.format(
        "a serving-size model's load and recompute times" if view == VIEWS[2] else "how the model was trained"
    )
)
with st.sidebar:
    st.subheader("CacheBlend")
    chunk_len = st.slider(
        "Chunk length (tokens)",
        1,
        24,
        5,
        key=f"{STEM}_chunk",
        bind="query-params",
        disabled=not documents_used,
        help=off or "Odd lengths cut records: a key ends one chunk and its value starts the next.",
    )
    ratio = st.slider(
        "Recompute ratio r",
        0.0,
        1.0,
        0.2,
        0.05,
        key=f"{STEM}_ratio",
        bind="query-params",
        disabled=not documents_used,
        help=off
        or "Share of the document's tokens whose KV is recomputed at each layer (the HKVD tokens). "
        + glossary.define("HKVD"),
    )
    variant = links.worded(
        st.selectbox,
        "Token selection",
        {v: blend.VARIANTS[v].label for v in blend.VARIANTS},
        f"{STEM}_variant",
        disabled=not documents_used,
        help=off,
    )
    seed = st.number_input(
        "Document seed",
        0,
        1_000_000,
        0,
        key=f"{STEM}_seed",
        bind="query-params",
        disabled=view != VIEWS[0],
        help=off or (OFF_SEED if view == VIEWS[1] else None),
    )

# The view draws into one container, so the teaching text, notes and paper table after it keep their place
# and a view switch does not remount them (Streamlit keys an element by its position).
with st.container():
    if documents_used:
        st.caption(f"Selection: {blend.VARIANTS[variant].source}.")
    with user_errors():
        net = cached.model()
        presenter = frame.presenter()
        if view == VIEWS[0]:
            views.one_document(int(seed), chunk_len, float(ratio), variant, presenter)
        elif view == VIEWS[1]:
            views.accuracy(chunk_len, float(ratio), variant, presenter)
        elif view == VIEWS[2]:
            views.controller(presenter)
        else:
            views.the_model(net, presenter)
        with st.spinner("Reproducing the lecture's setting (chunk length 5, r = 20%, 200 documents)…"):
            ours = cached.lecture()

frame.explain(R.EXPLAIN)
frame.what_to_notice(R.notices(ours))


frame.terms("lecture 27", "HKVD", "TTFT", "MFU")  # one "Terms" for the page, whatever the view
frame.paper_vs_sim(R.paper_rows(ours), note=R.paper_note(N_DOCS, ours))
