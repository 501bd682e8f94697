"""Controls both views of the Mooncake cluster page share: the TTFT and TBT SLO sliders."""

from __future__ import annotations

import streamlit as st

from kvviz.common import glossary


def slo_sliders(prefix: str, ttft_s: float, tbt_s: float, tbt_low_ms: int, tbt_note: str = "") -> dict:
    """The TTFT SLO (s) and TBT SLO (ms) sliders, keyed ``<prefix>ttft`` and ``<prefix>tbt``, as
    ``ttft_slo_s`` and ``tbt_slo_s`` in seconds; ``tbt_note`` ends the TBT slider's help."""
    return dict(
        ttft_slo_s=st.slider(
            "TTFT SLO (s)",
            1.0,
            120.0,
            ttft_s,
            1.0,
            key=f"{prefix}ttft",
            bind="query-params",
            help=glossary.define("TTFT") + "\n\n" + glossary.define("SLO"),
        ),
        tbt_slo_s=st.slider(
            "TBT SLO (ms)",
            tbt_low_ms,
            1000,
            int(tbt_s * 1000),
            10,
            key=f"{prefix}tbt",
            bind="query-params",
            help=glossary.define("TBT") + tbt_note,
        )
        / 1000,
    )
