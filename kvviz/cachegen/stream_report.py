"""The streaming views' text: the paper's numbers beside this simulation's, each with a status computed
from the two, and the notes, captions and explanations around the timeline and the sweeps.

Paper numbers: CacheGen (SIGCOMM'24) abstract and Table 1 (Mistral-7B, LongChat); the 81% -> 8%
adaptation figure is from the lecture notes and its experimental condition was not found in any source.
Every row's ``status`` is computed (``kvviz.common.paper``), and every "What to notice" claim is chosen
by the numbers it quotes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.cachegen import levels as L
from kvviz.cachegen import streaming as S
from kvviz.cachegen.streaming import StreamSetup
from kvviz.common import hardware, paper

SIZE_TOL, RATIO_TOL, RATE_TOL_PP, ACCURACY_TOL = 0.10, 0.10, 0.10, 0.01


LECTURE_PREFILL = (9_600, 1.51)  # lecture 9 exercise 3: Mistral-7B recomputes 9,600 tokens on an A40 in ~1.51 s


def _level2(setup: StreamSetup) -> S.Level:
    return next((lv for lv in setup.levels if lv.name == "level2"), setup.levels[len(setup.levels) // 2])


def _ratio(by: pd.DataFrame, a: str, b: str) -> float:
    if {a, b} <= set(by.index):
        return float(by.loc[a, "mean_ttft_s"] / by.loc[b, "mean_ttft_s"])
    return float("nan")


def paper_rows(setup: StreamSetup, summary: pd.DataFrame, source: str, sizes_from: str) -> list[dict[str, str]]:
    """Table 1's sizes against the codec's, the size ratio, violation rates and TTFT ratios at the SLO.

    ``source`` names the bandwidth traces and ``sizes_from`` the KV the levels were encoded from
    (both already made safe for markdown by the caller)."""
    by = summary.set_index("policy")
    level2 = _level2(setup)
    mb8, mb2 = L.context_mb(setup.quant8.bits_per_value, setup.model), L.context_mb(level2.bits_per_value, setup.model)
    ratio = setup.quant8.bits_per_value / level2.bits_per_value
    v8, vp = (float(by.loc[p, "violation_rate"]) if p in by.index else float("nan") for p in ("quant8", "paper"))
    art = float(by.loc["artifact", "violation_rate"]) if "artifact" in by.index else float("nan")
    q8_text, text_ratio = _ratio(by, "quant8", "paper"), _ratio(by, "text", "paper")
    tokens, seconds = LECTURE_PREFILL
    prefill = S.prefill_seconds(tokens, 0, setup.model, setup.gpu)
    prefill_shown = (
        f"{prefill:.2f} s (this dashboard's prefill model: FLOPs ÷ the GPU's peak × MFU)"
        if setup.recompute == "prefill"
        else f"{prefill:.2f} s (not used: text costs a fixed {setup.fixed_recompute_s:g} s a chunk)"
    )
    return [
        paper.close(
            "KV of a 9,490-token Mistral-7B context at 8 bits",
            "622 MB (Table 1)",
            f"{mb8:.0f} MB (8-bit quantization + fp16 scales, measured)",
            (622.0, mb8),
            SIZE_TOL,
        ),
        paper.close(
            "… with CacheGen",
            "176 MB (Table 1)",
            f"{mb2:.0f} MB: level 2's {level2.bits_per_value:.2f} bits/value, encoded from {sizes_from}",
            (176.0, mb2),
            SIZE_TOL,
        ),
        paper.within(
            "Answers kept at CacheGen's size (Table 1: accuracy)",
            "0.98 vs 1.00 for 8-bit",
            f"{level2.quality:.3f} vs {setup.quant8.quality:.3f} (record-world model, same answer as fp16)",
            [(0.98, level2.quality), (1.0, setup.quant8.quality)],
            ACCURACY_TOL,
            "shares of answers",
        ),
        paper.in_range(
            "Size reduction vs the 8-bit quantization baseline", "3.5–4.3×", f"{ratio:.1f}×", ratio, 3.5, 4.3, RATIO_TOL
        ),
        paper.within(
            f"SLO violations, 8-bit quant → adaptive (SLO {setup.slo_s:g} s)",
            "81% → 8% at SLO 1 s (lecture notes; condition not stated)",
            f"{v8:.0%} → {vp:.0%} (paper rule), {art:.0%} (artifact rule), {source}",
            [(0.81, v8), (0.08, vp)],
            RATE_TOL_PP,
            "shares of requests",
        ),
        paper.in_range(
            "Mean TTFT, 8-bit quant ÷ CacheGen adaptive",
            "3.2–3.7× lower delay",
            f"{q8_text:.1f}× (paper rule)",
            q8_text,
            3.2,
            3.7,
            RATIO_TOL,
        ),
        paper.in_range(
            "Mean TTFT, text recompute ÷ CacheGen adaptive",
            "3.1–4.7× faster",
            f"{text_ratio:.1f}× (paper rule)",
            text_ratio,
            3.1,
            4.7,
            RATIO_TOL,
        ),
        paper.close(
            f"Recomputing {tokens:,} tokens of Mistral-7B on an A40",
            f"{seconds} s (lecture 9 exercise 3)",
            prefill_shown,
            (seconds, prefill),
            0.05,
        ),
    ]


def levels_caption(setup: StreamSetup, sizes_from: str) -> str:
    """What the measured-levels table is, in one line."""
    values = S.kv_values_per_token(hardware.model(setup.model))
    return (
        f"The configurations, measured: sizes encoded from {sizes_from}, scaled to {setup.model}'s "
        f"{values:,} values per token; quality judged on the record-world model's answers over its KV decoded "
        "at each level."
    )


def stream_note(setup: StreamSetup, summary: pd.DataFrame) -> str:
    """Where the streaming rows disagree with the paper, and why, with this run's numbers."""
    by = summary.set_index("policy")
    text_ratio = _ratio(by, "text", "paper")
    whole = float(setup.recompute_s().sum())
    recompute = (
        "the dashboard's prefill model: Mistral-7B on an A40 at its default MFU"
        if setup.recompute == "prefill"
        else "the artifact fixed cost"
    )
    return (
        f"Sizes and qualities are measured: every level is encoded by this project's codec and judged on the "
        f"record-world model, so where Table 1's 176 MB differs, the codec on this KV is the reason (the paper's "
        f"Mistral KV has the token locality and outlier channels a synthetic or tiny model's lacks). "
        f"The text-recompute ratio is {text_ratio:.1f}× here: recomputing the whole context costs {whole:.2f} s "
        f"({recompute}), "
        "and the paper rule itself sends text whenever it fits, so the two policies share their fast chunks; the "
        "paper's 3.1–4.7× spans larger models (Llama-34B and 70B recompute 5–10× longer) and its own 3 Gb/s link, "
        "not a 0.1–10 Gb/s trace. The paper's bandwidth traces are not public; this simulation's violation rates "
        "depend on the trace source, so where they disagree with 81% → 8% the trace, not the rule, is the first "
        "suspect."
    )


def slo_grid(slo: float, points: int = 14) -> np.ndarray:
    """SLOs for the sweep: geometric from 0.1 s to 5 s, plus the current SLO."""
    return np.unique(np.round(np.append(np.geomspace(0.1, 5.0, points), slo), 4))


def stream_notice(summary: pd.DataFrame, source: str) -> list[str]:
    """The streaming views' "What to notice", each claim chosen by the numbers it quotes."""
    by = summary.set_index("policy")

    def v(p: str) -> float:
        return float(by.loc[p, "violation_rate"]) if p in by.index else float("nan")

    out = []
    if {"quant8", "level2"} <= set(by.index):
        verdict = "is the biggest win" if v("quant8") > v("level2") + 0.05 else "decides little here"
        out.append(
            f"**Compression {verdict}**: 8-bit quantization misses {v('quant8'):.0%} of SLOs, "
            f"level 2 {v('level2'):.0%}."
        )
    if {"paper", "level2"} <= set(by.index):
        better = v("paper") < v("level2")
        out.append(
            f"**Adaptation {'helps' if better else 'does not help'} on these traces**: the paper rule misses "
            f"{v('paper'):.0%}, a fixed level 2 {v('level2'):.0%}"
            + ("." if better else " (the previous chunk does not predict the next). See *Against: Persistence*.")
        )
    if {"paper", "artifact"} <= set(by.index):
        out.append(
            f"The artifact rule misses {v('artifact'):.0%} against the paper rule's {v('paper'):.0%}: it "
            "reads the *current* chunk's bandwidth, a glimpse of the future the paper's rule does not have."
        )
    if "oracle" in by.index:
        out.append(
            f"The oracle, which knows each trace in advance, misses {v('oracle'):.0%}: no rule can do better "
            f"on {source}."
        )
    return out


def persistence_notice(sweep: pd.DataFrame) -> str:
    """The persistence sweep's claim: does the paper rule gain from persistence, with the numbers."""
    rate = sweep.set_index(["policy", "persistence"]).violation_rate
    lo, hi = sweep.persistence.min(), sweep.persistence.max()
    p0, p1 = rate["paper", lo], rate["paper", hi]
    return (
        f"**Persistence {'helps' if p1 < p0 - 0.02 else 'does not help'} the paper rule**: {p0:.0%} of SLOs "
        f"missed at persistence {lo:g}, {p1:.0%} at {hi:g}; the artifact rule {rate['artifact', lo]:.0%} → "
        f"{rate['artifact', hi]:.0%}."
    )


TIMELINE_EXPLAIN = (
    "Each chunk (1,500 tokens by default) is pre-encoded at three levels; it can also be sent as **text** "
    "and recomputed on the GPU over the earlier chunks' KV. **Paper rule** (§5.3): estimate the bandwidth "
    "from the previous chunk's throughput, then pick the least-loss configuration whose expected delay fits "
    "this chunk's share of the remaining SLO. **Artifact rule** (the adaptation script of CacheGen's released "
    "code): a fixed budget SLO/n "
    "per chunk, the *current* chunk's bandwidth, levels best first, else text. Bars are as tall as the "
    "bandwidth the transfer saw."
)


def sweep_explain(traces: int, fresh: int) -> str:
    """How the sweep views are computed, with their trace counts."""
    return (
        f"Every point runs each policy over the same {traces:,} trace(s): at each SLO (the dashed line is "
        "the sidebar's), or at the sidebar's SLO with the traces grouped by the mean bandwidth their chunks "
        f"see, or over {fresh:,} fresh persistent traces per persistence value (same Uniform(0.1, 10) Gb/s "
        "marginal, so only predictability changes). The oracle knows each trace in advance: no policy can "
        "beat it."
    )
