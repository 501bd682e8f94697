"""The Radix page's controls behind the widgets: presets and the settings they bring, URL values
checked before a preset fills in, and the cached replay.
"""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from kvviz.radix.presets import PRESETS
from kvviz.radix.replay import POLICY_LABELS, WRITE_LABELS, ReplayConfig, replay
from kvviz.radix.script import parse_text

TREES = {"radix": "RadixCache", "hiradix": "HiRadixCache"}  # URL values are the shown labels
BY_TITLE = {p.title: k for k, p in PRESETS.items()}
CONTROL_KEYS = {
    "cache": "radix_cache",
    "device_capacity": "radix_device",
    "host_capacity": "radix_host",
    "page_size": "radix_page",
    "eviction_policy": "radix_policy",
    "write_policy": "radix_write",
    "deferral": "radix_strata",
    "threshold": "radix_threshold",
    "auto_ack": "radix_ack",
}
WORDED = {"radix_cache": TREES, "radix_policy": POLICY_LABELS, "radix_write": WRITE_LABELS}
"""The controls whose options are words for the model's codes (URL values are the words)."""


def preset_settings(title: str) -> dict:
    """The control values a preset was written for, keyed by widget key."""
    values = {**asdict(ReplayConfig()), **PRESETS[BY_TITLE.get(title, "sglang9")].suggested}
    return {key: WORDED[key][values[name]] if key in WORDED else values[name] for name, key in CONTROL_KEYS.items()}


def apply_suggested() -> None:
    """Choosing a preset brings its settings (and the URL then carries them)."""
    for key, value in preset_settings(st.session_state["radix_preset"]).items():
        st.session_state[key] = value
    st.session_state["radix_restart"] = True  # the slider (whose range changes) is reset where it is drawn


LIMITS = {
    "radix_device": (1, 10_000_000),
    "radix_host": (1, 100_000_000),
    "radix_page": (1, 4096),
    "radix_threshold": (0, 1_000_000),
}
CHOICES = {
    **{key: (*words.values(), *words) for key, words in WORDED.items()},  # a code: an old link, put in words
    "radix_strata": ("true", "false"),
    "radix_ack": ("true", "false"),
}


def valid_in_url(key: str) -> bool:
    """Whether the URL holds a value control ``key`` can use."""
    raw = st.query_params.get(key)
    if raw is not None and key in LIMITS:
        return raw.isdigit() and LIMITS[key][0] <= int(raw) <= LIMITS[key][1]
    return raw in CHOICES.get(key, ())


TOGGLES = ("radix_strata", "radix_ack")  # their widget default is the preset's, so "off" is written to the URL


def seed_from_preset() -> None:
    """A fresh view: the preset in the URL fills every control the URL lacks (or gives an unusable value).
    Run before the controls are drawn (a link naming a policy by its code is put in words as it is drawn)."""
    for key, value in preset_settings(st.query_params.get("radix_preset", "")).items():
        if key not in st.session_state and not valid_in_url(key) and key not in TOGGLES:
            st.session_state[key] = value


@st.cache_data(max_entries=32, ttl="1h", show_spinner="Replaying the script…")
def cached_replay(text: str, name: str, config: tuple, window: tuple[int, int] | None = None):
    """Simulate once; the trees of the steps in ``window`` (start, stop) are kept, so moving the
    slider inside it is a lookup (``None``: no tree, only the totals of every step)."""
    return replay(parse_text(text, name), ReplayConfig(*config), snapshots=range(*window) if window else False)
