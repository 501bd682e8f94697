"""The Ledger page's Size, Load or recompute and Economics views (Tiers is ``ui.ledger.tiers``), each
drawn from the presets table's models, GPUs and links (``ui.ledger.inputs.presets``)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from kvviz.common import hardware as hw
from kvviz.ledger import ledger, notes
from ui.kit import figures, frame, links
from ui.kit.errors import user_errors
from ui.kit.links import worded
from ui.kit.tables import data_table
from ui.ledger import inputs as ledger_inputs
from ui.ledger.inputs import Q

CONTEXTS = np.unique(np.r_[np.geomspace(256, 1_048_576, 49).astype(int), 2 ** np.arange(8, 21), 8_000])
SLIDE_TIB_PRICE = round(ledger.Prices().storage_per_tb_hour * ledger.TIB / hw.TB, 4)
"""The slide's storage price ($ per decimal TB-hour) per TiB-hour: the page counts memory in binary units."""


def h100(gpus: dict, mfu: float, n_gpus: int = 1) -> hw.Compute:
    """The H100 of the presets (edited or not) at ``mfu``: the paper rows' GPU, whatever the view's."""
    return hw.Compute(gpus.get("h100", hw.GPUS["h100"]), mfu, n_gpus)


def show(table, name: str, settings: dict, formats: dict[str, str] | None = None) -> None:
    data_table(table, "ledger", name, settings, formats=formats)


def size_view(models: dict, gpus: dict, links: dict) -> None:
    """KV size per model at one context, and against context for every model."""
    size_body(
        models,
        *ledger_inputs.sidebar(
            models, gpus, gpu_unused="Not used here: KV size depends on the model alone, not on the GPU or its MFU."
        )[:2],
    )


@links.view_fragment("ledger")
def size_body(models: dict, name: str, m: hw.ModelSpec) -> None:
    """The Size view under the sidebar: its own inputs rerun only this part of the page. ``name`` and ``m``
    are the model as the page names it; the table, figure and notes name every model so too."""
    c1, c2, c3 = st.columns(3)
    context = c1.number_input("Context (tokens)", 1, 10_000_000, 8_000, key="ledger_context", **links.PART)
    capacity = c2.number_input(
        "Memory for KV (GiB)", 0.1, 100_000.0, 40.0, format="%g", key="ledger_capacity", **links.PART
    )
    rate = c3.number_input(
        "Tokens/s a GPU serves",
        1.0,
        1e7,
        2_625.0,
        format="%.0f",
        key="ledger_rate",
        **links.PART,
        help="For the KV-per-day figure; the course notes' DeepSeek-R1 on one MI300X does 2,625.",
    )
    shown = {s.name: s for s in ledger_inputs.titled(models, hw.MODEL_TITLES).values()}
    with user_errors():
        size = ledger.size_table(shown, context, capacity)
        ledger_inputs.cards(ledger.size_metrics(m, context, capacity, rate))
    figures.figure(
        "ledger.fig_size", ledger.size_curve(shown.values(), CONTEXTS), context, capacity, key="ledger_fig_size"
    )
    show(size, "KV size per model", {"context": context, "memory GiB": capacity}, ledger.SIZE_FORMATS)
    frame.explain(
        "Every layer keeps a key and a value vector per KV head for every token: **bytes per token = "
        "layers × 2 × KV heads × head dim × bytes per value**. MLA keeps one 576-wide latent per layer "
        "instead. Edit any model, or add your own, in the Presets table above."
    )
    frame.what_to_notice(notes.size_notes(size, shown, name, context, capacity))
    frame.paper_vs_sim(ledger.size_rows(models), note=notes.SIZE_PAPER_NOTE)


def recompute_view(models: dict, gpus: dict, links: dict) -> None:
    """Loading KV against recomputing it: break-even curves, one context over every link, a chat."""
    left, right = st.columns([2, 3])
    sub = (
        left.segmented_control(
            "Show",
            ("Break-even curves", "One context, every link", "20-turn chat"),
            default="Break-even curves",
            key="ledger_lr",
            **Q,
        )
        or "Break-even curves"
    )
    curves = sub == "Break-even curves"
    unused = "Not used here: pick the models to compare in 'Models' above the figure." if curves else ""
    name, m, compute = ledger_inputs.sidebar(models, gpus, model_unused=unused)
    named = ledger_inputs.titled(links, hw.LINK_TITLES)  # by id, each named as the page names it
    every = {ln.name: ln for ln in named.values()}
    chosen = {
        named[k].name: named[k]
        for k in worded(  # (``links`` here is the view's link table)
            right.multiselect,
            "Links",
            ledger_inputs.titles(links, hw.LINK_TITLES),
            "ledger_links",
            default=ledger.present(ledger.DEFAULT_LINKS, links),
        )
    }
    settings = {"view": sub, "model": name, "GPU": compute.gpu.name, "MFU": compute.mfu, "links": ", ".join(chosen)}
    with user_errors():
        if curves:
            titled = ledger_inputs.titled(models, hw.MODEL_TITLES)
            picks = [
                titled[k]
                for k in worded(
                    st.multiselect,
                    "Models",
                    ledger_inputs.titles(models, hw.MODEL_TITLES),
                    "ledger_models",
                    default=ledger.present(ledger.BREAKEVEN_MODELS, models),
                )
            ]
            be = ledger.breakeven_table(picks, compute, CONTEXTS)
            figures.figure("ledger.fig_breakeven", be, chosen, key="ledger_fig_be")
            shown = notes.breakeven_notes(be, chosen)
            show(
                ledger.breakeven_pivot(be),
                "break-even bandwidth",
                settings | {"models": ", ".join(p.name for p in picks)},
            )
        elif sub == "One context, every link":
            context = st.number_input("Context (tokens)", 1, 10_000_000, 8_000, key="ledger_context", **Q)
            lr = ledger.load_or_recompute(m, compute, context, chosen or every).round(2)
            figures.figure("ledger.fig_load_vs_recompute", lr, context, name, key="ledger_fig_lr")
            show(lr, "load or recompute", settings | {"context": context})
            shown = notes.load_notes(lr, name, context)
        else:
            c1, c2, c3, c4 = st.columns(4)
            chat = ledger.Chat(
                c1.number_input("Turns", 1, 200, 20, key="ledger_turns", **Q),
                c2.number_input("User tokens/turn", 1, 100_000, 230, key="ledger_user", **Q),
                c3.number_input("Reply tokens/turn", 0, 100_000, 370, key="ledger_reply", **Q),
            )
            overlap = c4.toggle(
                "Overlap",
                key="ledger_overlap",
                **Q,
                help="Load layer by layer while computing "
                "(LMCache, Mooncake); off = load first, then compute, as the lecture notes' ledger "
                "does.",
            )
            mt = ledger.multi_turn_ttft(m, compute, chat, chosen, overlap)
            figures.figure("ledger.fig_multi_turn", mt, key="ledger_fig_mt")
            frame.terms("TTFT", "MFU")
            last = ledger.last_turn(mt, chat.turns)
            show(last, "last turn TTFT", settings | {**vars(chat), "overlap": overlap})
            shown = notes.chat_notes(last, chat.turns)
    frame.explain(
        "Recomputing costs a prefill: 2 FLOPs per parameter per token plus causal attention, which grows "
        "with the square of the length, at peak × MFU. Loading costs bytes ÷ (link bandwidth × efficiency). "
        "Per token, their ratio is the **break-even bandwidth**."
    )
    frame.what_to_notice(shown)
    frame.paper_vs_sim(ledger.recompute_rows(models, h100(gpus, compute.mfu), links), note=notes.RECOMPUTE_PAPER_NOTE)


def economics_view(models: dict, gpus: dict, links: dict) -> None:
    """What keeping a context costs against the GPU time its hits save."""
    _, m, compute = ledger_inputs.sidebar(
        models, gpus, model_unused="Not used here: the figure compares four preset models side by side."
    )
    c = st.columns(4)
    prices = dict(
        gpu=c[0].number_input("$ per GPU-hour", 0.01, 1000.0, 2.0, key="ledger_gpu_price", **Q),
        tib=c[1].number_input(
            "$ per TiB-hour of storage",
            0.0001,
            100.0,
            SLIDE_TIB_PRICE,
            format="%.4f",
            key="ledger_tib_price",
            help="The course notes' slide prices storage at $0.15 per TB-hour (decimal), which is "
            f"${SLIDE_TIB_PRICE:.4f} per TiB-hour.",
            **Q,
        ),
    )
    node_gpus = c[2].number_input("GPUs per node", 1, 64, 8, key="ledger_node_gpus", **Q)
    storage_tib = c[3].number_input("Storage per node (TiB)", 0.001, 10_000.0, 1.0, key="ledger_storage_tib", **Q)
    with user_errors():
        p = ledger.Prices(prices["gpu"], prices["tib"] * hw.TB / ledger.TIB)
        node = hw.Compute(compute.gpu, compute.mfu, node_gpus)
        named = ledger_inputs.titled(models, hw.MODEL_TITLES)
        picks = [named[k] for k in ledger.present(ledger.ECONOMICS_MODELS, models)]
        econ = ledger.economics_curve(picks or [m], node, CONTEXTS[CONTEXTS <= 262_144], p)
        ledger_inputs.cards(ledger.economics_metrics(node_gpus, storage_tib * ledger.TIB / hw.TB, p))
    figures.figure("ledger.fig_economics", econ, key="ledger_fig_econ")
    show(
        ledger.economics_table(econ),
        "storage economics",
        {
            "GPU": node.gpu.name,
            "MFU": node.mfu,
            "GPUs per node": node_gpus,
            "$ per GPU-hour": p.gpu_per_hour,
            "$ per TiB-hour": prices["tib"],
            "storage per node TiB": storage_tib,
        },
        ledger.ECONOMICS_FORMATS,
    )
    frame.explain(
        "Keeping a context costs its KV bytes × the storage price per hour; each hit saves the GPU time of "
        "recomputing it. Their ratio is how many hits per hour the context needs to pay its way."
    )
    frame.what_to_notice(notes.economics_notes(econ))
    frame.paper_vs_sim(ledger.economics_rows(models, h100(gpus, compute.mfu, 8), p), note=notes.ECONOMICS_PAPER_NOTE)


VIEWS = {"Size": size_view, "Load or recompute": recompute_view, "Economics": economics_view}
