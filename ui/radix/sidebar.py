"""The Radix page's sidebar: the request script's source and preset, the cache and the scheduler,
every control in the URL; what they choose, as a replay configuration."""

from __future__ import annotations

import streamlit as st

from kvviz.common import glossary
from kvviz.radix.presets import PRESETS, Preset
from kvviz.radix.replay import ReplayConfig, hit_counts_decide
from ui.kit import links
from ui.radix.controls import BY_TITLE, LIMITS, WORDED, apply_suggested, preset_settings


def off_unless(used: bool, why: str, help_text: str) -> dict:
    """``disabled`` and ``help`` for a control: off unless ``used``, its reason first ("Not used here: ...")."""
    return {"disabled": not used, "help": help_text if used else f"Not used here: {why}\n\n{help_text}"}


def hiradix_only(kind: str, help_text: str) -> dict:
    """A HiCache control: off on the RadixCache, which has no CPU tier."""
    return off_unless(kind == "hiradix", "only the HiRadixCache has a CPU tier; pick it under Tree.", help_text)


def sidebar() -> tuple[str, Preset, ReplayConfig]:
    """The sidebar's controls; the script's source ("Preset", "Type" or "Trace"), the preset and the configuration."""
    with st.sidebar:
        st.header("Request script")
        source = st.segmented_control(
            "Source",
            ["Preset", "Type", "Trace"],
            default="Preset",
            required=True,
            key="radix_source",
            bind="query-params",
        )
        preset = PRESETS[
            BY_TITLE[
                st.selectbox(
                    "Preset",
                    list(BY_TITLE),
                    key="radix_preset",
                    bind="query-params",
                    on_change=apply_suggested,
                    **off_unless(
                        source != "Trace",
                        "the requests come from the trace.",
                        "A worked script, with the cache settings it was written for.",
                    ),
                )
            ]
        ]
        st.header("Cache")
        kind = links.worded(
            st.segmented_control,
            "Tree",
            WORDED["radix_cache"],
            "radix_cache",
            required=True,
            help="RadixCache: GPU only. HiRadixCache: GPU plus a CPU tier (SGLang HiCache).",
        )
        device = st.number_input(
            "GPU capacity (tokens)", *LIMITS["radix_device"], key="radix_device", bind="query-params"
        )
        host = st.number_input(
            "CPU capacity (tokens)",
            *LIMITS["radix_host"],
            key="radix_host",
            bind="query-params",
            **hiradix_only(kind, "CPU (host) memory for HiCache's second tier."),
        )
        page = st.number_input("Page size (tokens)", *LIMITS["radix_page"], key="radix_page", bind="query-params")
        policy = links.worded(st.selectbox, "Eviction policy", WORDED["radix_policy"], "radix_policy")
        write = links.worded(
            st.selectbox,
            "Write policy",
            WORDED["radix_write"],
            "radix_write",
            **hiradix_only(kind, "When a node gets its CPU copy (HiCache)."),
        )
        st.header("Scheduler")
        suggested = preset_settings(preset.title)
        strata = st.toggle(
            "Strata delay-hit deferral", suggested["radix_strata"], key="radix_strata", bind="query-params"
        )
        threshold = st.number_input(
            "Defer when in-flight match exceeds (tokens)",
            *LIMITS["radix_threshold"],
            key="radix_threshold",
            bind="query-params",
            **off_unless(strata, "Turn deferral on to use it.", "Strata's delay-hit threshold."),
        )
        auto_ack = st.toggle(
            "Acknowledge transfers every round",
            suggested["radix_ack"],
            key="radix_ack",
            bind="query-params",
            **hiradix_only(
                kind,
                "SGLang checks finished host writes and loads once per scheduler loop; until then the node stays "
                "locked. " + glossary.define("lock count"),
            ),
        )
        legacy = st.toggle(
            "Legacy hit counts",
            key="radix_legacy",
            bind="query-params",
            help="Before SGLang PR #18843 the RadixCache never counted hits, so LFU behaved like LRU."
            + (
                ""
                if hit_counts_decide(kind, policy, write)
                else " With these settings it changes only "
                "the hit counts shown (hover, text dump), not what is evicted or copied to CPU: that "
                "needs LFU, SLRU or a HiRadixCache write-through policy."
            ),
        )
    return (
        source,
        preset,
        ReplayConfig(
            kind,
            int(device),
            int(host),
            int(page),
            policy,
            write,
            strata,
            int(threshold),
            auto_ack,
            "legacy" if legacy else "upstream",
        ),
    )
