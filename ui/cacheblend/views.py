"""The CacheBlend page's four views: one document blended, accuracy against the recompute ratio, the
loading controller on a serving-size model, and how the tiny model was trained."""

from __future__ import annotations

import streamlit as st

from kvviz.cacheblend import blend
from kvviz.cacheblend import report as R
from kvviz.cacheblend.figures import METHOD_NAMES
from kvviz.cacheblend.record_world import N_RECORDS
from kvviz.common.numbers import readable
from ui.cacheblend import cached
from ui.cacheblend.cached import EVAL_SEED, N_DOCS
from ui.cachegen import cached as shown_figure
from ui.kit.tables import download_csv

STEM = "cacheblend"
RATIOS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)


def one_document(seed: int, chunk_len: int, ratio: float, variant: str, presenter: bool) -> None:
    """Which tokens one document recomputes, and how far each token's KV deviates, per layer."""
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


def accuracy(chunk_len: int, ratio: float, variant: str, presenter: bool) -> None:
    """Answer accuracy over fresh documents at each recompute ratio (the chosen one included)."""
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
        {"chunk length": chunk_len, "token selection": variant, "documents": N_DOCS, "document seed": EVAL_SEED},
        trace=f"{N_DOCS} record-world documents (seed {EVAL_SEED})",
    )


def controller(presenter: bool) -> None:
    """The loading controller on a serving-size model: the recompute ratio that loading hides."""
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


RECIPE_WORDS = {
    "steps": "steps",
    "batch": "documents a step",
    "n_questions": "questions a document",
    "min_records": "records a document at least",
    "repeat_share": "share of documents repeating records",
    "lr": "peak learning rate",
    "warmup": "warm-up steps",
    "min_lr_frac": "final learning rate as a share of the peak",
    "clip": "gradient norm clipped at",
    "weight_decay": "weight decay",
    "seed": "seed",
}
"""The training recipe's settings (``kvviz.cacheblend.train.Recipe``) in words."""


def the_model(net, presenter: bool) -> None:
    """How the record-world model was trained: its loss curve and its recipe."""
    recipe = ", ".join(
        f"{RECIPE_WORDS.get(k, k.replace('_', ' '))} {readable(v) if isinstance(v, (int, float)) else v}"
        for k, v in net.info.get("recipe", {}).items()
    )
    seconds = readable(net.info["train_seconds"]) if "train_seconds" in net.info else "?"
    st.subheader("Training the record-world model")
    shown_figure.show(cached.loss_figure(presenter), f"{STEM}_loss")
    st.caption(
        f"{net.config.n_layers} layers, d = {net.config.d_model}, {net.config.n_heads} heads, SwiGLU "
        f"{net.config.d_ff}, RoPE; {sum(p.size for p in net.params.values()):,} parameters. "
        f"Recipe: {recipe}; trained in {seconds} s. "
        "Full-prefill accuracy on fresh documents: "
        f"{net.info.get('full_prefill_accuracy', float('nan')):.1%}. "
        "Retraining is a command-line step (see the CacheBlend notes in the project's documentation)."
    )
