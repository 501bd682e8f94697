"""The paper's numbers beside this simulation's, with a status computed from the two, for the page and the CLI.

Paper numbers: CacheGen (SIGCOMM'24) abstract and Table 1 (Mistral-7B, LongChat); the 81% -> 8% adaptation figure is from the lecture notes and its
experimental condition was not found in any source. Every row's ``status`` is computed: ``agrees`` or
``differs`` against the paper's value or range widened by the stated tolerance, ``input`` where the row
states what the simulation was given. "What to notice" claims are chosen by the numbers they quote.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.common import paper
from kvviz.common import hardware
from kvviz.cachegen import levels as L
from kvviz.cachegen import streaming as S
from kvviz.cachegen.streaming import StreamSetup

SIZE_TOL, RATIO_TOL, RATE_TOL_PP, ACCURACY_TOL = 0.10, 0.10, 0.10, 0.01
LECTURE_PREFILL = (9_600, 1.51)      # lecture 9 exercise 3: Mistral-7B recomputes 9,600 tokens on an A40 in ~1.51 s


def in_range(quantity: str, reported: str, sim: str, value: float, low: float, high: float,
             rel: float = RATIO_TOL) -> dict:
    """A row that agrees when ``value`` lies in the paper's range [low, high] widened by ``rel``."""
    lo, hi = low * (1 - rel), high * (1 + rel)
    return paper.check(quantity, reported, sim, bool(lo <= value <= hi),
                   f"{lo:.3g} ≤ {value:.3g} ≤ {hi:.3g} (the paper's {low:g}–{high:g} ± {rel:.0%})")


def within(quantity: str, reported: str, sim: str, pairs: list[tuple[float, float]], tol: float, unit: str) -> dict:
    """A row that agrees when every (paper, simulation) pair differs by at most ``tol`` (absolute)."""
    holds = all(abs(s - p) <= tol + 1e-12 for p, s in pairs)
    shown = " and ".join(f"|{s:.3g} − {p:.3g}| ≤ {tol:g}" for p, s in pairs)
    return paper.check(quantity, reported, sim, holds, f"{shown} {unit}")


def _level2(setup: StreamSetup) -> S.Level:
    return next((lv for lv in setup.levels if lv.name == "level2"), setup.levels[len(setup.levels) // 2])


def _ratio(by: pd.DataFrame, a: str, b: str) -> float:
    if {a, b} <= set(by.index):
        return float(by.loc[a, "mean_ttft_s"] / by.loc[b, "mean_ttft_s"])
    return float("nan")


def stream_rows(setup: StreamSetup, summary: pd.DataFrame, source: str, sizes_from: str) -> list[dict]:
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
    return [
        paper.close("KV of a 9,490-token Mistral-7B context at 8 bits", "622 MB (Table 1)",
                f"{mb8:.0f} MB (8-bit quantization + fp16 scales, measured)", (622.0, mb8), SIZE_TOL),
        paper.close("… with CacheGen", "176 MB (Table 1)", f"{mb2:.0f} MB: level 2's {level2.bits_per_value:.2f} "
                f"bits/value, encoded from {sizes_from}", (176.0, mb2), SIZE_TOL),
        within("Answers kept at CacheGen's size (Table 1: accuracy)", "0.98 vs 1.00 for 8-bit",
               f"{level2.quality:.3f} vs {setup.quant8.quality:.3f} (record-world model, same answer as fp16)",
               [(0.98, level2.quality), (1.0, setup.quant8.quality)], ACCURACY_TOL, "(share of answers)"),
        in_range("Size reduction vs the 8-bit quantization baseline", "3.5–4.3×", f"{ratio:.1f}×", ratio, 3.5, 4.3),
        within(f"SLO violations, 8-bit quant → adaptive (SLO {setup.slo_s:g} s)",
               "81% → 8% at SLO 1 s (lecture notes; condition not stated)",
               f"{v8:.0%} → {vp:.0%} (paper rule), {art:.0%} (artifact rule), {source}",
               [(0.81, v8), (0.08, vp)], RATE_TOL_PP, "(violation shares)"),
        in_range("Mean TTFT, 8-bit quant ÷ CacheGen adaptive", "3.2–3.7× lower delay", f"{q8_text:.1f}× (paper rule)",
                 q8_text, 3.2, 3.7),
        in_range("Mean TTFT, text recompute ÷ CacheGen adaptive", "3.1–4.7× faster", f"{text_ratio:.1f}× (paper rule)",
                 text_ratio, 3.1, 4.7),
        paper.close(f"Recomputing {tokens:,} tokens of Mistral-7B on an A40", f"{seconds} s (lecture 9 exercise 3)",
                f"{prefill:.2f} s (kvviz.common.hardware's prefill model)" if setup.recompute == "prefill"
                else f"{prefill:.2f} s (not used: text costs a fixed {setup.fixed_recompute_s:g} s a chunk)",
                (seconds, prefill), 0.05),
    ]


def levels_caption(setup: StreamSetup, sizes_from: str) -> str:
    """What the measured-levels table is, in one line."""
    values = S.kv_values_per_token(hardware.model(setup.model))
    return (f"The configurations, measured: sizes encoded from {sizes_from}, scaled to {setup.model}'s "
            f"{values:,} values per token; quality judged on the record-world model's answers over its KV decoded "
            "at each level.")


def stream_note(setup: StreamSetup, summary: pd.DataFrame) -> str:
    """Where the streaming rows disagree with the paper, and why, with this run's numbers."""
    by = summary.set_index("policy")
    text_ratio = _ratio(by, "text", "paper")
    whole = float(setup.recompute_s().sum())
    return (
        f"Sizes and qualities are measured: every level is encoded by this project's codec and judged on the "
        f"record-world model, so where Table 1's 176 MB differs, the codec on this KV is the reason (the paper's "
        f"Mistral KV has the token locality and outlier channels a synthetic or tiny model's lacks). "
        f"The text-recompute ratio is {text_ratio:.1f}× here: recomputing the whole context costs {whole:.2f} s "
        f"({'kvviz.common.hardware: Mistral-7B on an A40 at its default MFU' if setup.recompute == 'prefill' else 'the artifact fixed cost'}), "
        "and the paper rule itself sends text whenever it fits, so the two policies share their fast chunks; the "
        "paper's 3.1–4.7× spans larger models (Llama-34B and 70B recompute 5–10× longer) and its own 3 Gb/s link, "
        "not a 0.1–10 Gb/s trace. The paper's bandwidth traces are not public; this simulation's violation rates "
        "depend on the trace source, so where they disagree with 81% → 8% the trace, not the rule, is the first "
        "suspect.")


def codec_rows(table: pd.DataFrame, locality: dict[str, float]) -> list[dict]:
    """Locality, per-channel tables, size vs 8-bit, and how close the coder gets to −Σlog2 p."""
    by = table.set_index("variant")
    reported = table.iloc[0]
    glob = by.loc["one global distribution"]
    q8 = by.loc["8-bit quantization"]
    artifact = by.loc["CacheGen (artifact): no delta, shipped tables"]

    def overhead(row) -> float:       # coded words over −Σ log2 p, headers left out of both
        return (row.bits_per_value - row.header_bits_per_value) / (row.ideal_bits_per_value - row.header_bits_per_value) - 1
    saved = 1 - reported.bits_per_value / glob.bits_per_value
    smaller = q8.bits_per_value / reported.bits_per_value
    model = []
    if "accuracy" in table.columns:
        model = [paper.close("Record-world model's answers: CacheGen encoder vs 8-bit vs the artifact's",
                         "lecture 27 §3.4: tuned precision is 1.66× smaller than 8-bit at no accuracy loss; "
                         "the recipe copied as is does worst",
                         f"{reported.accuracy:.1%} at {reported.bits_per_value:.2f} bits ({smaller:.2f}× smaller) vs "
                         f"{q8.accuracy:.1%} at {q8.bits_per_value:.2f} bits vs {artifact.accuracy:.1%} (artifact)",
                         (1.66, smaller), RATIO_TOL)]
    return model + [
        in_range("Variance of raw values ÷ of deltas to the anchor", "2.4–2.9× (LLaMA, §5.1)",
                 f"{locality['raw/delta']:.2f}× raw; {locality['centred/delta']:.2f}× once channel means are removed",
                 locality["raw/delta"], 2.4, 2.9),
        paper.check("Per-(layer, channel) tables vs one global table", "up to 53% smaller", f"{saved:.0%} smaller",
                bool(0 < saved <= 0.53), f"0 < {saved:.1%} ≤ 53%"),
        in_range("Size vs 8-bit quantization", "3.5–4.3× smaller at ≤2% accuracy drop",
                 f"{smaller:.1f}× smaller, relative error {reported.rel_error:.1e} vs {q8.rel_error:.1e}", smaller, 3.5, 4.3),
        paper.check("Coded size vs −Σ log2 p of the symbols", "(not reported; the artifact uses a GPU AC kernel)",
                f"{overhead(artifact):+.2%} with the chunk's own tables (the coder alone, mostly each stream's 4-byte "
                f"final state: short streams pay more); {overhead(reported):+.2%} with "
                f"offline tables (their mismatch included); round trip {reported.roundtrip}",
                bool(0 <= overhead(artifact) < 0.05 and reported.roundtrip == "exact"),
                f"an arithmetic coder's promise: 0 ≤ {overhead(artifact):.2%} < 5% over −Σ log2 p, round trip exact"),
    ]


def slo_grid(slo: float, points: int = 14) -> np.ndarray:
    """SLOs for the sweep: geometric from 0.1 s to 5 s, plus the current SLO."""
    return np.unique(np.round(np.append(np.geomspace(0.1, 5.0, points), slo), 4))


def codec_notice(table: pd.DataFrame, points: pd.DataFrame, rho: float | None) -> list[str]:
    """The codec view's "What to notice", each claim chosen by this run's numbers; ``rho`` None: the model's KV."""
    by = table.set_index("variant")
    reported, plain = table.iloc[0], table.iloc[1]
    fixed, q8 = by.loc["without arithmetic coding (fixed width)"], by.loc["8-bit quantization"]
    zlib = by.loc["zlib on fp16"]
    out = [f"**Entropy coding saves {1 - reported.bits_per_value / fixed.bits_per_value:.0%}** over the same "
           f"quantization sent at fixed width ({reported.bits_per_value:.2f} vs {fixed.bits_per_value:.2f} bits/value); "
           f"zlib on the fp16 floats needs {zlib.bits_per_value:.1f} bits/value, {zlib.bits_per_value / 16:.0%} "
           f"of raw fp16, and 8-bit quantization {q8.bits_per_value:.2f}."]
    helps = reported.bits_per_value < plain.bits_per_value
    out.append(f"**The anchor/delta step {'saves' if helps else 'costs'} "
               f"{abs(plain.bits_per_value - reported.bits_per_value):.2f} bits/value here** ({reported.bits_per_value:.2f} "
               f"with, {plain.bits_per_value:.2f} without): it pays only when neighbouring tokens are alike"
               + (f" (ρ = {rho:g}; try ρ = 0)." if rho is not None else "; the record-world model's are not."))
    glob = by.loc["one global distribution"]
    out.append(f"Per-(layer, channel) tables are {1 - reported.bits_per_value / glob.bits_per_value:.0%} smaller "
               "than one global table" + (" on this KV." if reported.bits_per_value < glob.bits_per_value else
                                          ": here they cost more than they save."))
    if "kl" in points.columns:
        out.append(quality_notice(points))
    return out


def quality_notice(points: pd.DataFrame) -> str:
    """The quality curve's claim: where KL shows a loss that accuracy does not."""
    curve = points[points.variant == "CacheGen (paper)"].sort_values("bits_per_value")
    low, high = curve.iloc[0], curve.iloc[-1]
    return (f"**KL moves before accuracy does**: at {low.bits_per_value:.2f} bits/value the model still answers "
            f"{low.accuracy:.1%} right, yet its answer distribution is {low.kl:.1e} nats from full precision's, "
            f"{low.kl / max(high.kl, 1e-30):,.0f}× the {high.kl:.1e} at {high.bits_per_value:.2f} bits.")


CODEC_NOTE = ("The paper measures LLaMA/Mistral KV and answer accuracy. The synthetic KV has only a relative-error "
              "proxy, so its ratios show the mechanisms, not the paper's gains; the locality ratio depends on ρ and "
              "on the channel offsets (with offsets removed the delta's advantage is only what ρ gives). The "
              "record-world model is real but tiny (4 layers, 64 channels): it shows what happens to answers, "
              "not the paper's sizes.")


def stream_notice(summary: pd.DataFrame, source: str) -> list[str]:
    """The streaming views' "What to notice", each claim chosen by the numbers it quotes."""
    by = summary.set_index("policy")

    def v(p: str) -> float:
        return float(by.loc[p, "violation_rate"]) if p in by.index else float("nan")
    out = []
    if {"quant8", "level2"} <= set(by.index):
        out.append(f"**Compression {'is the biggest win' if v('quant8') > v('level2') + 0.05 else 'decides little here'}**: "
                   f"8-bit quantization misses {v('quant8'):.0%} of SLOs, level 2 {v('level2'):.0%}.")
    if {"paper", "level2"} <= set(by.index):
        better = v("paper") < v("level2")
        out.append(f"**Adaptation {'helps' if better else 'does not help'} on these traces**: the paper rule misses "
                   f"{v('reported'):.0%}, a fixed level 2 {v('level2'):.0%}"
                   + ("." if better else " (the previous chunk does not predict the next). See *Against: Persistence*."))
    if {"paper", "artifact"} <= set(by.index):
        out.append(f"The artifact rule misses {v('artifact'):.0%} against the paper rule's {v('reported'):.0%}: it reads "
                   "the *current* chunk's bandwidth, a glimpse of the future the paper's rule does not have.")
    if "oracle" in by.index:
        out.append(f"The oracle, which knows each trace in advance, misses {v('oracle'):.0%}: no rule can do better "
                   f"on {source}.")
    return out


def persistence_notice(sweep: pd.DataFrame) -> str:
    """The persistence sweep's claim: does the paper rule gain from persistence, with the numbers."""
    rate = sweep.set_index(["policy", "persistence"]).violation_rate
    lo, hi = sweep.persistence.min(), sweep.persistence.max()
    p0, p1 = rate["paper", lo], rate["paper", hi]
    return (f"**Persistence {'helps' if p1 < p0 - 0.02 else 'does not help'} the paper rule**: {p0:.0%} of SLOs "
            f"missed at persistence {lo:g}, {p1:.0%} at {hi:g}; the artifact rule {rate['artifact', lo]:.0%} → "
            f"{rate['artifact', hi]:.0%}.")


CODEC_EXPLAIN = (
    "Every row is encoded **for real**: the bytes are the rANS coder's output plus everything a receiver "
    "needs (each stream's final state, fp16 per-token scales, 8-bit anchors, and the 16-bit CDF tables "
    "when they are shipped). `ideal_bits_per_value` replaces the coded bytes by −Σ log₂ p under the "
    "data's own histograms. The paper's encoder uses anchors + deltas and tables profiled offline on "
    "other contexts; the released artifact quantizes raw values and ships each chunk's tables. With the "
    "record-world model as the source, `kl` is the mean KL divergence of its answer distribution from "
    "full precision's: it shows the loss at low bits long before an answer flips.")

TIMELINE_EXPLAIN = (
    "Each chunk (1,500 tokens by default) is pre-encoded at three levels; it can also be sent as **text** "
    "and recomputed on the GPU over the earlier chunks' KV. **Paper rule** (§5.3): estimate the bandwidth "
    "from the previous chunk's throughput, then pick the least-loss configuration whose expected delay fits "
    "this chunk's share of the remaining SLO. **Artifact rule** (`run_adaptation.py`): a fixed budget SLO/n "
    "per chunk, the *current* chunk's bandwidth, levels best first, else text. Bars are as tall as the "
    "bandwidth the transfer saw.")


def sweep_explain(traces: int, fresh: int) -> str:
    """How the sweep views are computed, with their trace counts."""
    return (f"Every point runs each policy over the same {traces:,} trace(s): at each SLO (the dashed line is "
            "the sidebar's), or at the sidebar's SLO with the traces grouped by the mean bandwidth their chunks "
            f"see, or over {fresh:,} fresh persistent traces per persistence value (same Uniform(0.1, 10) Gb/s "
            "marginal, so only predictability changes). The oracle knows each trace in advance: no policy can "
            "beat it.")
