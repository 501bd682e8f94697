"""The Ledger page's shared inputs: the editable presets, the sidebar's model, GPU and MFU (which Strata's page
shares), and metric cards."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

import pandas as pd
import streamlit as st

from kvviz.common import glossary
from kvviz.common import hardware as hw
from ui.kit import links
from ui.kit.errors import user_errors
from ui.kit.tables import Header, readable

Q = dict(bind="query-params")
PRESET_HEADERS = {
    "head_dim": Header("Head dim", "Head dimension."),
    "bytes_per_value": Header("Bytes/value", "Bytes per KV value: 2 for fp16 or bf16."),
    "params_b": Header("Params (B)", "The matmul parameters a token goes through, in billions."),
    "d_attn": Header("Attn width", "Attention width: query heads × head dimension."),
}
"""The presets' long column names under short headers, so that the editor fits its box."""
Spec = TypeVar("Spec", hw.ModelSpec, hw.GPUSpec, hw.LinkSpec)


def titles(table: Mapping[str, object], known: Mapping[str, str]) -> dict[str, str]:
    """Each row of a preset table (by id) as the page names it: a preset by its title (``known``), a row
    the reader added in the Presets expander by the name they typed, in lower case as every id is (every
    title has a capital, so the two never meet)."""
    return {k: known.get(k, k) for k in table}


def titled(table: Mapping[str, Spec], known: Mapping[str, str]) -> dict[str, Spec]:
    """The presets, still by id, each named as the page names it (``titles``): the tables, figures and
    notes drawn from them print the names. The lecture's rows (``ledger.size_rows``) take the presets
    as they are."""
    return {k: replace(v, name=name) for (k, v), name in zip(table.items(), titles(table, known).values(), strict=True)}


def by_title(table: Mapping[str, Spec], known: Mapping[str, str]) -> pd.DataFrame:
    """A preset table for the Presets editor, each preset named by its title in the name column."""
    frame = hw.to_frame(table)
    return frame.assign(name=frame["name"].map(lambda n: known.get(n, n)))


def by_id(edited: pd.DataFrame, known: Mapping[str, str]) -> pd.DataFrame:
    """The edited table with each title back to its preset's id (what links, the lecture's rows and the
    command line know it by); a row the reader added keeps the name typed."""
    ids = {title: k for k, title in known.items()}
    return edited.assign(name=edited["name"].map(lambda n: ids.get(n, n)))


def presets() -> tuple[dict[str, hw.ModelSpec], dict[str, hw.GPUSpec], dict[str, hw.LinkSpec]]:
    """The models, GPUs and links, as edited in the Presets expander (each checked before use)."""
    with st.expander("Presets: edit any model, GPU or link, or add your own", icon=":material/edit:"):
        st.caption(
            "Parameters: the matmul parameters a token goes through, in billions; attention width: query "
            "heads × head dimension; peak TFLOP/s: dense BF16; links: nominal GB/s × efficiency. Edits last "
            "for your session (they are not in a copied link)."
        )
        tables = {
            k: by_id(
                tab.data_editor(
                    frame,
                    key=f"ledger_edit_{k}",
                    num_rows="dynamic",
                    hide_index=True,
                    width="stretch",
                    column_config=readable(frame.columns, headers=PRESET_HEADERS),
                ),
                known,
            )
            for tab, (k, frame, known) in zip(
                st.tabs(["Models", "GPUs", "Links"]),
                (
                    ("models", by_title(hw.MODELS, hw.MODEL_TITLES), hw.MODEL_TITLES),
                    ("gpus", by_title(hw.GPUS, hw.GPU_TITLES), hw.GPU_TITLES),
                    ("links", by_title(hw.LINKS, hw.LINK_TITLES), hw.LINK_TITLES),
                ),
                strict=True,
            )
        }
    with user_errors():
        return (
            hw.models_from_frame(tables["models"]),
            hw.gpus_from_frame(tables["gpus"]),
            hw.links_from_frame(tables["links"]),
        )


def model_gpu_mfu(
    page: str,
    models: Mapping[str, str],
    gpus: Mapping[str, str],
    uses: tuple[str, str],
    unused: tuple[str, str] = ("", ""),
    gpu: str | None = None,
    mfu_note: str = "",
) -> tuple[str, str, float]:
    """The model, GPU and MFU controls (keys ``{page}_model``, ``{page}_gpu``, ``{page}_mfu``, in the URL),
    drawn where the caller is (its sidebar), offering ``models`` and ``gpus`` (id → name shown) by name;
    returns the ids. ``uses`` says what the model and the GPU are for; one that the view does not use is
    disabled, its reason in ``unused`` shown as its help."""
    model_unused, gpu_unused = unused
    name = links.worded(
        st.selectbox, "Model", models, f"{page}_model", disabled=bool(model_unused), help=model_unused or uses[0]
    )
    gpu_name = links.worded(
        st.selectbox,
        "GPU",
        gpus,
        f"{page}_gpu",
        index=list(gpus).index(gpu) if gpu else 0,
        disabled=bool(gpu_unused),
        help=gpu_unused or uses[1],
    )
    mfu = st.number_input(
        "MFU (model FLOPs utilisation)",
        0.01,
        1.0,
        hw.DEFAULT_MFU,
        0.05,
        format="%.3f",
        key=f"{page}_mfu",
        disabled=bool(gpu_unused),
        help=f"{gpu_unused}\n\n{glossary.define('MFU')}{mfu_note}".strip(),
        **Q,
    )
    return name, gpu_name, float(mfu)


def sidebar(
    models: dict[str, hw.ModelSpec], gpus: dict[str, hw.GPUSpec], model_unused: str = "", gpu_unused: str = ""
) -> tuple[str, hw.ModelSpec, hw.Compute]:
    """The sidebar's model, GPU and MFU: the model's name, and the model and compute named as the page
    names them (``titled``). One this view does not use is disabled, its help saying why."""
    uses = (
        "The model whose KV this view sizes, loads or recomputes.",
        "The GPU that would recompute the KV (its peak FLOP/s).",
    )
    with st.sidebar:
        name, gpu_name, mfu = model_gpu_mfu(
            "ledger",
            titles(models, hw.MODEL_TITLES),
            titles(gpus, hw.GPU_TITLES),
            uses,
            (model_unused, gpu_unused),
            mfu_note=" 0.735 reproduces the lecture notes' times.",
        )
    with user_errors():
        m = titled(models, hw.MODEL_TITLES)[name]
        return m.name, m, hw.Compute(titled(gpus, hw.GPU_TITLES)[gpu_name], mfu)


def cards(metrics: list[tuple[str, str, str]]) -> None:
    """A row of bordered metrics: (label, value, why)."""
    with st.container(horizontal=True):
        for label, value, why in metrics:
            st.metric(label, value, border=True, help=why or None)
