"""The paper's numbers beside this simulation's, as rows for the page and the CLI.

Paper numbers: CacheGen (SIGCOMM'24) abstract and Table 1 (Mistral-7B, LongChat) as quoted in
``research/algorithms.md`` §A.0; the 81% -> 8% adaptation figure is from the lecture notes and its
experimental condition was not found in any source.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz import streaming as S
from kvviz.streaming import StreamSetup

CONTEXT_TABLE1 = 9_490            # tokens that make 622 MB at 8 bits on Mistral-7B


def _mb(bits_per_value: float) -> float:
    return bits_per_value * S.MISTRAL_VALUES_PER_TOKEN * CONTEXT_TABLE1 / 8e6


def _row(quantity: str, paper: str, sim: str) -> dict:
    return {"quantity": quantity, "paper": paper, "this simulation": sim}


def stream_rows(setup: StreamSetup, summary: pd.DataFrame, source: str) -> list[dict]:
    """Sizes, size ratio, violation rates and TTFT ratios at the current SLO."""
    by = summary.set_index("policy")
    level2 = next((lv for lv in setup.levels if lv.name == "level2"), setup.levels[len(setup.levels) // 2])
    ratio = setup.quant8.bits_per_value / level2.bits_per_value

    def viol(p):
        return f"{by.loc[p, 'violation_rate']:.0%}" if p in by.index else "–"

    def speedup(a, b):
        return f"{by.loc[a, 'mean_ttft_s'] / by.loc[b, 'mean_ttft_s']:.1f}×" if {a, b} <= set(by.index) else "–"

    return [
        _row("KV of a ~9.5K-token Mistral-7B context: 8-bit vs CacheGen",
             "622 MB vs 176 MB (Table 1)",
             f"{_mb(setup.quant8.bits_per_value):.0f} MB vs {_mb(level2.bits_per_value):.0f} MB (level 2)"),
        _row("Size reduction vs the 8-bit quantization baseline", "3.5–4.3×", f"{ratio:.1f}×"),
        _row(f"SLO violations, 8-bit quant → adaptive (SLO {setup.slo_s:g} s)",
             "81% → 8% at SLO 1 s (lecture notes; condition not stated)",
             f"{viol('quant8')} → {viol('paper')} (paper rule), {viol('artifact')} (artifact rule), {source}"),
        _row("Mean TTFT, 8-bit quant ÷ CacheGen adaptive", "3.2–3.7× lower delay",
             f"{speedup('quant8', 'paper')} (paper rule)"),
        _row("Mean TTFT, text recompute ÷ CacheGen adaptive", "3.1–4.7× faster",
             f"{speedup('text', 'paper')} (paper rule)"),
    ]


def codec_rows(table: pd.DataFrame, locality: dict[str, float]) -> list[dict]:
    """Locality, per-channel tables, size vs 8-bit, and how close the coder gets to −Σlog2 p."""
    by = table.set_index("variant")
    paper = table.iloc[0]
    glob = by.loc["one global distribution"]
    q8 = by.loc["8-bit quantization"]
    artifact = by.loc["CacheGen (artifact): no delta, shipped tables"]

    def overhead(row) -> float:       # coded words over −Σ log2 p, headers left out of both
        return (row.bits_per_value - row.header_bits_per_value) / (row.ideal_bits_per_value - row.header_bits_per_value) - 1
    model = []
    if "accuracy" in table.columns:
        model = [_row("Record-world model's answers: CacheGen encoder vs 8-bit vs the artifact's",
                      "lecture 27 §3.4: tuned precision is 1.66× smaller than 8-bit at no accuracy loss; "
                      "the recipe copied as is does worst",
                      f"{paper.accuracy:.1%} at {paper.bits_per_value:.2f} bits vs {q8.accuracy:.1%} at "
                      f"{q8.bits_per_value:.2f} bits vs {artifact.accuracy:.1%} (artifact)")]
    return model + [
        _row("Variance of raw values ÷ of deltas to the anchor", "2.4–2.9× (LLaMA, §5.1)",
             f"{locality['raw/delta']:.2f}× raw; {locality['centred/delta']:.2f}× once channel means are removed"),
        _row("Per-(layer, channel) tables vs one global table", "up to 53% smaller",
             f"{1 - paper.bits_per_value / glob.bits_per_value:.0%} smaller"),
        _row("Size vs 8-bit quantization", "3.5–4.3× smaller at ≤2% accuracy drop",
             f"{q8.bits_per_value / paper.bits_per_value:.1f}× smaller, relative error "
             f"{paper.rel_error:.1e} vs {q8.rel_error:.1e}"),
        _row("Coded size vs −Σ log2 p of the symbols", "(not reported; the artifact uses a GPU AC kernel)",
             f"{overhead(artifact):+.2%} with the chunk's own tables (the coder alone, mostly each stream's 4-byte "
             f"final state: short streams pay more); {overhead(paper):+.2%} with "
             f"offline tables (their mismatch included); round trip {paper.roundtrip}"),
    ]


def slo_grid(slo: float, points: int = 14) -> np.ndarray:
    """SLOs for the sweep: geometric from 0.1 s to 5 s, plus the current SLO."""
    return np.unique(np.round(np.append(np.geomspace(0.1, 5.0, points), slo), 4))


def codec_notice(table: pd.DataFrame, rho: float | None) -> list[str]:
    """The codec view's "What to notice", with this run's numbers; ``rho`` None: the model's KV."""
    paper, plain = table.iloc[0], table.iloc[1]
    delta = (f"here, with deltas {paper.bits_per_value:.2f} bits/value at error {paper.rel_error:.1e}, without "
             f"{plain.bits_per_value:.2f} at {plain.rel_error:.1e}. ")
    delta += ("Compare the curves at ρ = 0.97 and at ρ = 0, where the 8-bit anchors cost more than the deltas save."
              if rho is not None else "The record-world model's neighbouring tokens are not alike (raw/delta "
              "variance below 1), so anchors + deltas only cost bits, as the lecture notes found.")
    points = [
        "**Quantization + entropy coding is the big win**: compare the curves with the stars (fixed-width "
        "quantization) and zlib, which barely compresses floats.",
        "**The delta step helps only when neighbouring tokens are correlated**: " + delta,
        "Per-(layer, channel) tables beat one global table, most when channels differ (offsets, outliers).",
        "Layer-wise bins spend bits on shallow layers; they pay off only where shallow layers are more sensitive.",
    ]
    if "accuracy" in table.columns:
        full = table.accuracy.iloc[-1]
        kept = table[table.accuracy >= full - 1e-9]
        points.append(f"**The answers survive far more than the error suggests**: {len(kept)} of {len(table)} rows "
                      f"keep the fp16 accuracy ({full:.1%}), down to {kept.bits_per_value.min():.2f} bits/value; "
                      "try level 0.")
    return points


CODEC_NOTE = ("The paper measures LLaMA/Mistral KV and answer accuracy. The synthetic KV has only a relative-error "
              "proxy, so its ratios show the mechanisms, not the paper's gains; the locality ratio depends on ρ and "
              "on the channel offsets (with offsets removed the delta's advantage is only what ρ gives). The "
              "record-world model is real but tiny (4 layers, 64 channels): it shows what happens to answers, "
              "not the paper's sizes.")

def stream_notice(summary: pd.DataFrame, source: str) -> list[str]:
    """The streaming views' "What to notice", ending with this run's numbers."""
    by = summary.set_index("policy")
    shown = [p for p in ("paper", "artifact", "level2", "quant8", "oracle") if p in by.index]
    here = ", ".join(f"{p} {by.loc[p, 'violation_rate']:.0%} at quality {by.loc[p, 'mean_quality']:.3f}"
                     for p in shown)
    return STREAM_NOTICE + [f"**This run** ({source}): SLO violations {here}."]


STREAM_NOTICE = [
    "**Compression itself is the biggest win**: 8-bit quantization misses most SLOs a CacheGen level meets.",
    "**Adaptation helps when bandwidth is persistent** (the last chunk predicts the next) **and can hurt when "
    "it is i.i.d.**: the paper rule then chases noise and misses more SLOs than a fixed level. See "
    "*Violation vs SLO → Against: Persistence*.",
    "The artifact rule reads the *current* chunk's bandwidth, a glimpse of the future the paper's rule "
    "does not have; on i.i.d. traces that alone makes it look far better.",
    "Text is lossless but costs a GPU recompute: the paper rule sends it whenever it fits the budget, the "
    "artifact rule only when no level fits.",
]

STREAM_NOTE = ("Sizes follow Table 1 by construction in the paper preset (levels 1 and 3 are derived from the "
               "artifact's bin tables, their qualities illustrative). The paper's adaptation experiment used "
               "bandwidth traces whose construction is not public; this simulation's violation rates depend on the "
               "trace source, so where they disagree with 81% → 8% the trace, not the rule, is the first suspect.")
