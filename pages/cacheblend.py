"""CacheBlend: reusing non-prefix KV on a tiny trained LLaMA, and which tokens to recompute."""

import streamlit as st

from kvviz.cacheblend import blend
from kvviz.cacheblend import report as R
from kvviz.cacheblend.figures import METHOD_NAMES
from kvviz.cacheblend.record_world import N_RECORDS
from kvviz.common import glossary
from ui import cacheblend as cached
from ui import cachegen as shown_figure
from ui import frame
from ui.cacheblend import EVAL_SEED, N_DOCS
from ui.errors import user_errors
from ui.tables import download_csv

STEM = "cacheblend"
RATIOS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
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
    variant = st.selectbox(
        "Token selection",
        tuple(blend.VARIANTS),
        key=f"{STEM}_variant",
        bind="query-params",
        format_func=lambda v: blend.VARIANTS[v].label,
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
            with st.spinner("Blending one document…"):
                strip, heat = cached.document_figures(int(seed), chunk_len, float(ratio), variant, presenter)
            st.subheader(f"Document {int(seed)}: which tokens are recomputed")
            shown_figure.show(strip, f"{STEM}_strip")
            st.caption(
                "Blue: keys, orange: values, pink: values cut from their key. Filled squares: tokens whose "
                "KV that layer recomputes; ✓/✗: each record's question answered right or wrong."
            )
            st.subheader("KV deviation from full prefill, per token and layer")
            shown_figure.show(heat, f"{STEM}_heat")
            frame.terms("HKVD")
        elif view == VIEWS[1]:
            ratios = tuple(sorted(set(RATIOS) | {float(ratio)}))
            with st.spinner(f"Answering {N_DOCS} documents × {N_RECORDS} questions at {len(ratios)} ratios…"):
                table = cached.sweep(chunk_len, variant, ratios)
            st.subheader(f"Answer accuracy over {N_DOCS} fresh documents, chunk length {chunk_len}")
            shown_figure.show(cached.accuracy_figure(chunk_len, variant, ratios, presenter), f"{STEM}_acc")
            shown = table.astype({c: float for c in ("acc_cut", "acc_uncut", "acc_all")}).rename(  # None->NaN->"–"
                columns={"acc_cut": "cut records", "acc_uncut": "uncut records", "acc_all": "all"}
            )
            shown["method"] = shown["method"].map(METHOD_NAMES)
            st.dataframe(
                shown.style.format(
                    {"ratio": "{:.0%}", "cut records": "{:.1%}", "uncut records": "{:.1%}", "all": "{:.1%}"}, na_rep="–"
                ),
                hide_index=True,
                width="stretch",
            )
            download_csv(
                table,
                STEM,
                "accuracy table",
                {
                    "chunk length": chunk_len,
                    "token selection": variant,
                    "documents": N_DOCS,
                    "document seed": EVAL_SEED,
                },
                trace=f"{N_DOCS} record-world documents (seed {EVAL_SEED})",
            )
            frame.terms("HKVD")
        elif view == VIEWS[2]:
            c1, c2 = st.columns(2)
            preset = (
                c1.segmented_control(
                    "Model", tuple(blend.SERVING_MODELS), default="7B MHA", key=f"{STEM}_preset", bind="query-params"
                )
                or "7B MHA"
            )
            context = c2.slider("Context (tokens)", 512, 32768, 4096, 512, key=f"{STEM}_context", bind="query-params")
            served, runs = blend.SERVING_MODELS[preset], R.controller_runs(preset, context)
            shown_figure.show(cached.controller_figure(preset, context, presenter), f"{STEM}_ctl")
            table = R.controller_table(runs)
            st.dataframe(
                table.style.format(
                    {
                        "load ms": "{:.1f}",
                        "recompute ms": "{:.1f}",
                        "picked r": "{:.0%}",
                        "TTFT blend s": "{:.2f}",
                        "TTFT prefill s": "{:.2f}",
                    }
                ),
                hide_index=True,
                width="stretch",
            )
            download_csv(table, STEM, "loading controller", {"model": served.name, "context (tokens)": context})
            gpu = served.compute.gpu
            st.caption(
                f"Per layer: load = KV bytes ÷ bandwidth ({served.model.bytes_per_value:g}-byte values); "
                f"prefill = the paper GPU's FLOPs ÷ ({served.compute.n_gpus}× {gpu.name.upper()} at "
                f"{gpu.peak_tflops:g} TFLOPS × MFU {served.compute.mfu:.0%}, the MFU calibrated to the paper's "
                "per-layer examples). "
                "Loading layer l+1 overlaps recomputing layer l, so a layer costs max(load, r × prefill)."
            )
            frame.terms("TTFT", "MFU")
        else:
            recipe = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in net.info.get("recipe", {}).items())
            st.subheader("Training the record-world model")
            shown_figure.show(cached.loss_figure(presenter), f"{STEM}_loss")
            st.caption(
                f"{net.config.n_layers} layers, d = {net.config.d_model}, {net.config.n_heads} heads, SwiGLU "
                f"{net.config.d_ff}, RoPE; {sum(p.size for p in net.params.values()):,} parameters. "
                f"Recipe: {recipe}; trained in {net.info.get('train_seconds', '?')} s. "
                "Full-prefill accuracy on fresh documents: "
                f"{net.info.get('full_prefill_accuracy', float('nan')):.1%}. "
                "Retraining is a command-line step (see the CacheBlend notes in the project's documentation)."
            )
        with st.spinner("Reproducing the lecture's setting (chunk length 5, r = 20%, 200 documents)…"):
            ours = cached.lecture()

frame.explain(R.EXPLAIN)
frame.what_to_notice(R.NOTICE)


frame.terms("lecture 27", "HKVD", "TTFT")
frame.paper_vs_sim(R.paper_rows(ours), note=R.paper_note(N_DOCS))
