"""The Ledger page's shared inputs: the editable presets, the sidebar's model, GPU and MFU, and metric cards."""

from __future__ import annotations

import streamlit as st

from kvviz.common import glossary
from kvviz.common import hardware as hw
from ui.errors import user_errors
from ui.tables import readable

Q = dict(bind="query-params")


def presets() -> tuple[dict[str, hw.ModelSpec], dict[str, hw.GPUSpec], dict[str, hw.LinkSpec]]:
    """The models, GPUs and links, as edited in the Presets expander (each checked before use)."""
    with st.expander("Presets: edit any model, GPU or link, or add your own", icon=":material/edit:"):
        st.caption(
            "Parameters: the matmul parameters a token goes through, in billions; attention width: query "
            "heads × head dimension; peak TFLOP/s: dense BF16; links: nominal GB/s × efficiency. Edits last "
            "for your session (they are not in a copied link)."
        )
        tables = {
            k: tab.data_editor(
                frame,
                key=f"ledger_edit_{k}",
                num_rows="dynamic",
                hide_index=True,
                width="stretch",
                column_config=readable(frame.columns),
            )
            for tab, (k, frame) in zip(
                st.tabs(["Models", "GPUs", "Links"]),
                (("models", hw.to_frame(hw.MODELS)), ("gpus", hw.to_frame(hw.GPUS)), ("links", hw.to_frame(hw.LINKS))),
                strict=True,
            )
        }
    with user_errors():
        return (
            hw.models_from_frame(tables["models"]),
            hw.gpus_from_frame(tables["gpus"]),
            hw.links_from_frame(tables["links"]),
        )


def sidebar(
    models: dict[str, hw.ModelSpec], gpus: dict[str, hw.GPUSpec], model_unused: str = "", gpu_unused: str = ""
) -> tuple[str, hw.ModelSpec, hw.Compute]:
    """The sidebar's model, GPU and MFU. One this view does not use is disabled, its help saying why."""
    with st.sidebar:
        name = st.selectbox(
            "Model",
            list(models),
            key="ledger_model",
            disabled=bool(model_unused),
            **Q,
            help=model_unused or "The model whose KV this view sizes, loads or recomputes.",
        )
        gpu_name = st.selectbox(
            "GPU",
            list(gpus),
            key="ledger_gpu",
            disabled=bool(gpu_unused),
            **Q,
            help=gpu_unused or "The GPU that would recompute the KV (its peak FLOP/s).",
        )
        mfu = st.number_input(
            "MFU (model FLOPs utilisation)",
            0.01,
            1.0,
            hw.DEFAULT_MFU,
            0.05,
            format="%.3f",
            key="ledger_mfu",
            disabled=bool(gpu_unused),
            **Q,
            help=f"{gpu_unused}\n\n{glossary.define('MFU')} 0.735 reproduces the lecture notes' times.".strip(),
        )
    with user_errors():
        return name, models[name], hw.Compute(gpus[gpu_name], mfu)


def cards(metrics: list[tuple[str, str, str]]) -> None:
    """A row of bordered metrics: (label, value, why)."""
    with st.container(horizontal=True):
        for label, value, why in metrics:
            st.metric(label, value, border=True, help=why or None)
