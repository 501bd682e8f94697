"""What the radix page says about a replay: each step's marks, "What to notice", and the paper rows.

Everything here is computed from a ``kvviz.radix.replay.Replay`` (its per-step events,
``kvviz.radix.events``) and the settings it ran with, so every claim follows the numbers on the
screen. The papers: SGLang (Zheng et al., arXiv 2312.07104, §3 and Fig. 3), Strata (Xie et al.,
arXiv 2508.18572, §4.3.1, §5.3.3), HiCache's ``hiradix_cache.py`` and SGLang issue #27206.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kvviz.common import paper
from kvviz.radix.events import EventKind, quote
from kvviz.radix.hiradix_cache import LOAD_BACK_THRESHOLD
from kvviz.radix.replay import Replay, eviction_steps, repeat_prompt_hit
from kvviz.radix.scheduler import DEFAULT_THRESHOLD

FIGURE_EVICTS = (5, 8, 9)
"""The steps of SGLang's Fig. 3 whose caption evicts: (5) node c, (8) nodes g and h, (9) i, k and l."""


@dataclass(frozen=True)
class StepMarks:
    """What the tree figure marks at one step: evicted nodes (as ghosts), split and loaded-back ids."""

    ghosts: pd.DataFrame  # id, parent, tokens, length of the nodes that left the tree
    marks: dict[str, set[int]]  # "split" / "loaded" -> node ids


def step_marks(rep: Replay, step: int) -> StepMarks:
    """The marks of ``step``, from the events the cache recorded during it."""
    events = rep.steps["events"].iloc[step]
    vocab = dict(rep.vocab)
    gone = [
        dict(id=e.node, parent=e.parent, tokens=quote(e.key, vocab).strip("'"), length=e.tokens)
        for e in events
        if e.kind in (EventKind.EVICT, EventKind.EVICT_HOST)
    ]
    return StepMarks(
        pd.DataFrame(gone, columns=["id", "parent", "tokens", "length"]),
        {
            "split": {e.node for e in events if e.kind is EventKind.SPLIT},
            "loaded": {e.node for e in events if e.kind is EventKind.LOAD_BACK},
        },
    )


def step_metrics(rep: Replay, other: Replay, step: int) -> list[tuple[str, int, str]]:
    """The metric cards of ``step``: (label, value, help); each label says now / this step / so far."""
    row, before, cfg = rep.steps.iloc[step], rep.steps.iloc[max(step - 1, 0)], rep.config
    hit = lambda r: int(r.device_hit + r.loaded_back)  # noqa: E731 (cumulative GPU hits plus loads)
    on = "on" if cfg.deferral else "off"
    cards = [
        (
            "On GPU now",
            int(row.device_tokens),
            f"of {cfg.device_capacity:,} tokens; {row.reserved:,} more held by running requests",
        )
    ]
    if cfg.cache == "hiradix":
        cards.append(("On CPU now", int(row.host_tokens), f"of {cfg.host_capacity:,} tokens"))
    return cards + [
        (
            "Cache hits this step",
            hit(row) - hit(before),
            f"Tokens reused this step (GPU hits and loads from CPU). So far: {hit(row):,} of {row.prompt_tokens:,} "
            f"admitted prompt tokens; {row.host_recomputed:,} found on CPU but recomputed.",
        ),
        (
            "Evicted this step",
            int(row.evicted_device - before.evicted_device),
            f"GPU tokens evicted this step. So far: {row.evicted_device:,} from the GPU, {row.evicted_host:,} from "
            "the CPU.",
        ),
        (
            "Redundant so far",
            int(row.redundant),
            f"Cumulative: tokens recomputed while another request was computing them. Whole script: "
            f"{rep.steps.iloc[-1].redundant:,} with deferral {on}, {other.steps.iloc[-1].redundant:,} with it "
            f"{'off' if cfg.deferral else 'on'}.",
        ),
    ]


def figure_steps(rep: Replay) -> list[int]:
    """The steps that evict, in the figure's numbering ((1) is the empty tree, this page's step 0)."""
    return [k + 1 for k in eviction_steps(rep)]


def _deferral(rep: Replay, other: Replay) -> tuple[int, int]:
    """Redundant prefill tokens (with deferral on, with it off) over the whole script."""
    here, there = int(rep.steps.iloc[-1].redundant), int(other.steps.iloc[-1].redundant)
    return (here, there) if rep.config.deferral else (there, here)


def notice(rep: Replay, other: Replay) -> list[str]:
    """'What to notice', generated from this replay and its twin with deferral flipped (``other``)."""
    with_on, with_off = _deferral(rep, other)
    evicting = eviction_steps(rep)
    points = [
        f"A repeated prompt's last token is never reused: the same 10-token prompt twice reports "
        f"{repeat_prompt_hit(10, 1)} cached tokens; with pages of 128 a 256-token repeat reports "
        f"{repeat_prompt_hit(256, 128)} and a 257-token one {repeat_prompt_hit(257, 128)}.",
        (
            f"This script evicts at step{'s' if len(evicting) > 1 else ''} {', '.join(map(str, evicting))}: "
            "step there and read which leaf went and why (grey outlines on the tree)."
            if evicting
            else "This script never evicts at these settings: lower the GPU capacity to see leaves go."
        ),
        "Page size loses partial pages: raise it to 4 and watch branches start only at page boundaries — the "
        "tokens of the page where two prompts diverge are recomputed by both.",
    ]
    if rep.config.cache == "hiradix":
        points.append(
            "Write-through versus write-back changes what survives eviction: under write-through every "
            "node is on CPU (green) from its first insert, so GPU eviction only turns it orange; under "
            "selective write-through a node seen once has no CPU copy and is simply deleted; "
            "write-back copies at eviction time."
        )
    points.append(
        f"Deferral avoids recomputing the same document twice: over this script, redundant prefill is "
        f"{with_off:,} tokens with deferral off and {with_on:,} with it on."
        if with_on < with_off
        else f"On this script deferral saves nothing: redundant prefill is {with_off:,} tokens with deferral off and "
        f"{with_on:,} with it on (*Delay hits (Strata)* is a script where it does)."
    )
    return points


def paper_rows(rep: Replay, other: Replay, figure_preset: bool) -> list[dict[str, str]]:
    """The paper-vs-simulation rows; ``figure_preset``: the script is the SGLang Fig. 3 preset."""
    hits = (repeat_prompt_hit(256, 128), repeat_prompt_hit(257, 128))
    with_on, with_off = _deferral(rep, other)
    rows = [
        paper.close(
            "Cached tokens for an identical prompt, page 128 (256 / 257 tokens)",
            "128 / 256 (SGLang's bug report #27206 on GitHub)",
            f"{hits[0]} / {hits[1]}",
            [(128, hits[0]), (256, hits[1])],
            0.0,
        )
    ]
    if figure_preset:
        steps = figure_steps(rep)
        rows.append(
            paper.check(
                "Steps of the SGLang paper's Fig. 3 that evict",
                ", ".join(f"({k})" for k in FIGURE_EVICTS),
                f"{', '.join(f'({k})' for k in steps) or 'none'} (these settings; the figure's numbering)",
                tuple(steps) == FIGURE_EVICTS,
                "the same steps evict",
            )
        )
    threshold = rep.config.threshold
    return rows + [
        paper.given(
            "Strata delay-hit threshold (in-flight tokens)",
            f"more than {DEFAULT_THRESHOLD} (Strata §4.3.1)",
            f"more than {threshold}" if rep.config.deferral else "deferral off",
            "the threshold control",
        ),
        paper.given(
            "HiCache load-back floor",
            f"{LOAD_BACK_THRESHOLD} tokens (SGLang's HiCache source code)",
            f"{LOAD_BACK_THRESHOLD} tokens",
            "SGLang's floor, copied from its source code",
        ),
        _delay_hit_row(rep, other, with_on, with_off),
    ]


def _delay_hit_row(rep: Replay, other: Replay, with_on: int, with_off: int) -> dict[str, str]:
    """Strata's delay-hit fix, graded only where deferral acts: on a script where no request waits
    behind more than the threshold of in-flight tokens, deferral on and off run the same schedule."""
    cells = (
        "Delay-hit fix, min-distance workload",
        "+42% throughput (Strata §5.3.3)",
        f"redundant prefill {with_off:,} → {with_on:,} tokens (off → on)",
    )
    deferred = int((rep if rep.config.deferral else other).steps.iloc[-1].deferrals)
    if not deferred:
        return paper.beside(
            *cells,
            f"no request here waits behind more than {rep.config.threshold:,} tokens being computed, so deferral "
            "never acts and both runs are the same (the Delay hits (Strata) preset has such requests)",
        )
    return paper.check(
        *cells, with_on < with_off, "deferral leaves less redundant prefill than no deferral (tokens, not throughput)"
    )


RULES = (
    "**The rules (SGLang's radix cache and its HiCache extension, as in their source).** Edges hold tokens. "
    "A lookup walks from the "
    "root and **splits** an edge where the match ends, even for a read-only lookup; it never counts a hit. "
    "A request looks up its prompt minus the last token (a forward pass must produce logits), locks the "
    "matched node, allocates the rest (evicting only the shortfall), and inserts its prompt after prefill "
    "and prompt + output at finish; a request adds 1 to the hit count of each node it walks once "
    "(SGLang 0.5.23: the second insert counts only what lies past the first). Eviction "
    "frees whole unlocked leaves in policy order and cascades up. In **HiCache**, a node is copied to CPU "
    "memory when its hit count reaches the write policy's threshold (and is locked until the copy is "
    "acknowledged); evicting a GPU+CPU node keeps it in the tree as CPU-only; a CPU hit of at least 10 "
    "tokens is loaded back, a shorter one recomputed. **Strata** hangs each admitted request's uncached "
    "span in the tree as an in-flight node; a request whose match runs over more than the threshold of "
    "in-flight tokens is deferred a round, to the head of the queue, instead of computing them again."
)

PAPER_NOTE = (
    "The paper figure elides its texts and has no token counts or memory size, so which steps evict depends "
    "on the lengths and the capacity; its numbering starts at (1) = the empty tree, this page's at step 0. "
    "The preset gives the elided turns lengths with which 120 GPU tokens evict at the figure's (5), (8), (9) "
    "and the caption's nodes (121–123 give the same steps): a long reply in the "
    "first session frees, at (5), room for the few-shot branch and batch that follow without evicting. SGLang "
    "inserts a prompt and then prompt + output, so a turn is two nodes: at (5) the reply goes, its question stays. "
    "Strata reports throughput on GPUs; this page counts tokens, so it shows the mechanism, not the speed-up. "
    "The Strata scheduling rules come from secondary sources and the course notes (CS349D lecture 9)."
)
