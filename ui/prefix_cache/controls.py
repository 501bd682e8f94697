"""The Prefix-cache page's sidebar cache controls, which of them each view can use, and the replay
setup they choose.

A control a view cannot change is disabled, and its help says why first ("Not used here: ..."), so a
reader who tries it learns the reason instead of seeing nothing happen.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import streamlit as st

from kvviz import prefix_cache as pc
from kvviz.common import budget, glossary, hardware
from kvviz.eviction.grid import INFINITE, log_capacities
from kvviz.traces import Trace, fingerprint
from ui.kit import links
from ui.kit.errors import user_errors
from ui.kit.text import plain
from ui.prefix_cache import views

WORDED = {"prefix_model": hardware.MODEL_TITLES, "prefix_gpu": hardware.GPU_TITLES}
"""The controls whose options are names for the presets' ids (URL values are the names)."""
POLICY_WORDS = {p: pc.label(p) for p in pc.POLICY_NAMES}
"""The radix policies by their names (LRU): the URL carries these; a link with the codes (lru) opens too."""
SAMPLES = ("exact", "50%", "20%", "10%")
LADDER = [m * 10**k for k in range(7) for m in (1, 2, 5)]  # 1 … 5,000,000 blocks
TREE_VIEW = "Prefix tree"
CURVES_VIEW = "Curves"
OWN_POLICY_VIEWS = ("Per request", "Over time")  # each picks the policies it draws above its figure
SAMPLE_HELP = (
    "SHARDS over whole requests: keep a request when its first block's hash falls in the sampled share; "
    "replay at the scaled capacity."
)


def why_unused(control: str, view: str, engine: str) -> str | None:
    """Why ``control`` ("engine", "policies", "capacities", "model", "gpu", "sample") cannot change
    ``view`` under ``engine``; ``None`` when it can."""
    if view == TREE_VIEW:
        return "Not used here: the prefix tree is the trace's own, the same for any cache, engine or model."
    if control == "policies" and view in OWN_POLICY_VIEWS:
        return "Not used here: this view replays the policy you pick above its figure."
    if control == "gpu" and view != CURVES_VIEW:
        return "Not used here: only the Curves view prices the memory."
    if control == "sample" and view != CURVES_VIEW:
        return "Not used here: this view replays every request exactly; only the Curves view can use a sample."
    if control == "sample" and engine == "vLLM":
        return "Not used here: vLLM's pool always replays exactly."
    return None


def unused(control: str, help_text: str = "", *, view: str, engine: str) -> dict:
    """``disabled`` and ``help`` for a control: off, with the reason first, on a view it cannot change."""
    why = why_unused(control, view, engine)
    return {"disabled": why is not None, "help": "\n\n".join(filter(None, (why, help_text))) or None}


def pick_one(label: str, options: tuple[str, ...], key: str, **kwargs) -> str:
    """A required choice bound to the URL; its first option when an empty URL value (``key=``) leaves
    Streamlit's control unset."""
    return (
        st.segmented_control(label, options, default=options[0], required=True, key=key, bind="query-params", **kwargs)
        or options[0]
    )


@dataclass(frozen=True)
class CacheChoice:
    """What the sidebar's cache controls chose."""

    policies: tuple[str, ...]  # SGLang policy names, as shown (upper case is only their label)
    low: int  # capacity range, blocks
    high: int
    points: int  # finite capacities on the curve
    model: str
    gpu: str
    sample: float | None  # share of requests the curves replay; None: exact (or a view that cannot sample)


def cache_controls(view: str, engine: str) -> CacheChoice:
    """The sidebar's cache controls, each disabled with its reason on a view it cannot change; stops the
    run, saying what to do, when no policy is picked on a view that replays them."""
    off = partial(unused, view=view, engine=engine)
    with st.sidebar:
        st.header("Cache")
        policies = links.worded(
            st.multiselect,
            "Radix eviction policies" if engine == "SGLang" else "SGLang policies beside vLLM",
            POLICY_WORDS,
            "prefix_policies",
            default=list(pc.BLOCK_TWINS),
            **off("policies", "LRU, LFU and FIFO also run on the block cache, for the side-by-side view."),
        )
        low, high = st.select_slider(
            "Capacity range (blocks)",
            LADDER,
            value=(100, 100_000),
            key="prefix_range",
            bind="query-params",
            **off("capacities"),
        )
        points = st.slider(
            "Points on the curve", 4, 30, 16, key="prefix_points", bind="query-params", **off("capacities")
        )
        model = links.worded(
            st.selectbox,
            "Model (KV bytes per token)",
            WORDED["prefix_model"],
            "prefix_model",
            **off("model", "Sets the GiB of a block."),
        )
        gpu = links.worded(
            st.selectbox,
            "GPU (HBM price)",
            WORDED["prefix_gpu"],
            "prefix_gpu",
            **off("gpu", "HBM is priced as the GPU-hour it comes with: GPU price ÷ HBM capacity."),
        )
        sample = pick_one(
            "Curves from a sample of requests",
            SAMPLES,
            "prefix_sample",
            **off("sample", SAMPLE_HELP + "\n\n" + glossary.define("SHARDS")),
        )
    if not policies and why_unused("policies", view, engine) is None:
        st.info("Pick at least one radix eviction policy in the sidebar.")
        links.stop()
    exact = sample == SAMPLES[0] or why_unused("sample", view, engine) is not None
    return CacheChoice(
        tuple(policies), int(low), int(high), int(points), model, gpu, None if exact else float(sample[:-1]) / 100
    )


def setup(choice: CacheChoice, trace: Trace, engine: str) -> views.Setup:
    """The replay every trace view reads: the trace's prefix replay, the policies (vLLM's pool first
    when it is the engine), capacities up to the trace's distinct prefixes (a bigger cache never
    evicts) and the memory model."""
    with user_errors():
        key = fingerprint(trace)
        budget.replay_memory(budget.PREFIX, trace).check()
        replay = views.prepared(key, trace)
        top = max(choice.low, min(choice.high, replay.n_nodes))
        return views.Setup(
            key,
            trace,
            replay,
            (("vllm",) if engine == "vLLM" else ()) + pc.parse_policies(list(choice.policies or pc.BLOCK_TWINS)),
            log_capacities(choice.low, top, choice.points) + (INFINITE,),
            pc.block_bytes(hardware.model(choice.model), trace.block_size),
            hardware.MODEL_TITLES[choice.model],
            pc.memory_price(hardware.gpu(choice.gpu)),
            choice.sample,
        )


def trace_caption(s: views.Setup, choice: CacheChoice, view: str) -> None:
    """The trace, its size in blocks and prefixes, and (on views that use them) a block's memory and the
    capacities replayed."""
    top = int(s.finite[-1])
    capped = f" (capped at the trace's {s.replay.n_nodes:,} distinct prefixes)" if top < choice.high else ""
    memory = (
        f" · one block = {s.bytes_per_block / pc.GIB * 1024:,.1f} MiB of {s.model} KV · capacities "
        f"{choice.low:,}–{top:,} blocks{capped}"
        if why_unused("capacities", view, s.engine) is None
        else ""
    )
    st.caption(
        f"**{plain(s.trace.name)}** · {s.trace.n_requests:,} requests · {s.replay.accesses:,} block "
        f"accesses · {s.replay.n_nodes:,} distinct prefixes of {s.trace.block_size:,} tokens{memory}"
    )
