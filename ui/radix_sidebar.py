"""The Radix page's sidebar: the request script's source and preset, the cache and the scheduler,
every control in the URL; what they choose, as a replay configuration."""

from __future__ import annotations

import streamlit as st

from kvviz.common import glossary
from kvviz.radix.hiradix_cache import WRITE_POLICIES
from kvviz.radix.presets import PRESETS, Preset
from kvviz.radix.radix_cache import POLICIES
from kvviz.radix.replay import ReplayConfig, hit_counts_decide
from ui.radix_controls import BY_TITLE, LIMITS, TREES, apply_suggested, preset_settings


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
                    disabled=source == "Trace",
                )
            ]
        ]
        st.header("Cache")
        kind = {v: k for k, v in TREES.items()}[
            st.segmented_control(
                "Tree",
                list(TREES.values()),
                required=True,
                key="radix_cache",
                bind="query-params",
                help="RadixCache: GPU only. HiRadixCache: GPU plus a CPU tier (SGLang HiCache).",
            )
        ]
        device = st.number_input(
            "GPU capacity (tokens)", *LIMITS["radix_device"], key="radix_device", bind="query-params"
        )
        only_hi = " Only the HiRadixCache has a CPU tier: pick it under Tree to use this." if kind != "hiradix" else ""
        host = st.number_input(
            "CPU capacity (tokens)",
            *LIMITS["radix_host"],
            key="radix_host",
            bind="query-params",
            disabled=kind != "hiradix",
            help="CPU (host) memory for HiCache's second tier." + only_hi,
        )
        page = st.number_input("Page size (tokens)", *LIMITS["radix_page"], key="radix_page", bind="query-params")
        policy = st.selectbox("Eviction policy", POLICIES, key="radix_policy", bind="query-params")
        write = st.selectbox(
            "Write policy",
            WRITE_POLICIES,
            key="radix_write",
            bind="query-params",
            disabled=kind != "hiradix",
            help="When a node gets its CPU copy (HiCache)." + only_hi,
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
            disabled=not strata,
            help="Strata's delay-hit threshold." + ("" if strata else " Turn deferral on to use it."),
        )
        auto_ack = st.toggle(
            "Acknowledge transfers every round",
            suggested["radix_ack"],
            key="radix_ack",
            bind="query-params",
            disabled=kind != "hiradix",
            help="SGLang checks finished host writes and loads once per scheduler loop; until then the "
            "node stays locked. " + glossary.define("lock_ref") + only_hi,
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
                "needs lfu, slru or a HiRadixCache write-through policy."
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
