"""The views of the Prefix-cache replay page, one function each, and the cached replays they share.

Cached functions take plain inputs (a trace fingerprint, names, capacities) and the trace under
an underscore name; progress bars live in the page through ``ui.kit.work.stepped``.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from kvviz import prefix_cache as pc
from kvviz import vllm
from kvviz.common import budget
from kvviz.eviction import replay as eviction
from kvviz.eviction.figures import short_blocks
from kvviz.eviction.grid import INFINITE
from kvviz.prefix_cache import figures as figs
from kvviz.prefix_cache.example import LITEHIT_SCRIPT, Example, worked_example
from kvviz.prefix_cache.prefix_tree import PrefixTree, hottest, prefix_tree, tree_notes
from kvviz.prefix_cache.sampling import SampledCurves, sampled_sweep
from kvviz.prefix_cache.views import Curves, compare_curves
from kvviz.traces import Trace
from ui.kit import figures, frame, keys, links
from ui.kit.tables import download_csv
from ui.kit.work import confirm_cost, confirm_memory, stepped

TREE_SIZES = (50, 100, 200, 500, 1000, 2000)


@dataclass(frozen=True)
class Setup:
    """What every trace view needs: the trace, its replay, the sweep's grid and the memory model."""

    key: str
    trace: Trace
    replay: pc.PrefixReplay
    policies: tuple[str, ...]
    capacities: tuple[float, ...]  # ascending, ``INFINITE`` last
    bytes_per_block: float
    model: str  # its name as the page shows it (Llama 3 8B)
    price: pc.MemoryPrice
    sample: float | None = None  # share of requests kept (by their first block's hash); None: exact

    @property
    def engine(self) -> str:
        """The engine the view shows: vLLM when its pool is among the curves (beside SGLang's), else SGLang."""
        return "vLLM" if vllm.POLICY in self.policies else "SGLang"

    @property
    def radix(self) -> tuple[str, ...]:
        """The SGLang radix policies among the curves."""
        return tuple(p for p in self.policies if p != vllm.POLICY)

    @property
    def finite(self) -> tuple[float, ...]:
        return self.capacities[:-1]

    def settings(self) -> dict[str, object]:
        """What produced a downloaded table: the policies, the capacities, the memory model, the sample."""
        return {
            "engine": self.engine,
            "policies": ",".join(self.policies),
            "capacities (blocks)": f"{int(self.finite[0])}-{int(self.finite[-1])}, {len(self.finite)} points",
            "block size (tokens)": self.trace.block_size,
            "model": self.model,
            "block (MiB)": round(self.bytes_per_block / 2**20, 3),
            "sample": "exact" if self.sample is None else f"{self.sample:.0%} of requests",
        }

    def label(self, capacity: float) -> str:
        return f"{figs.gib_label(capacity * self.bytes_per_block / pc.GIB)} ({short_blocks(int(capacity))} blocks)"


@st.cache_resource(max_entries=4, ttl=3600, show_spinner="Building the trace's prefix tree…")
def prepared(key: str, _trace: Trace) -> pc.PrefixReplay:
    return pc.prepare(_trace)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def prefix_table(key: str, policy: str, capacities: tuple, _trace: Trace) -> np.ndarray:
    """Matched blocks per (capacity, request) for one radix policy, or for vLLM's block pool."""
    if policy == vllm.POLICY:
        return vllm.hits_table(prepared(key, _trace), capacities)
    return pc.hits_table(prepared(key, _trace), policy, capacities)


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def pool_orphans(key: str, capacity: float, _trace: Trace) -> int:
    """Orphaned blocks in vLLM's pool after the whole trace at ``capacity`` blocks."""
    return vllm.final_state(prepared(key, _trace), capacity).orphans


def _replaying(policy: str) -> str:
    if policy == vllm.POLICY:
        return "Replaying the trace through vLLM's block pool…"
    return f"Replaying the trace through SGLang's radix cache, {policy.upper()}…"


@st.cache_resource(max_entries=4, ttl=3600, show_spinner="Preparing the block sequence…")
def block_replay(key: str, _trace: Trace) -> eviction.Replay:
    return eviction.replay_of(_trace)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def block_sweep(key: str, policy: str, capacities: tuple, _trace: Trace) -> pd.DataFrame:
    return eviction.sweep(block_replay(key, _trace), [policy], capacities)


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Replaying a sample of the requests…")
def sampled(key: str, policies: tuple, twins: tuple, capacities: tuple, rate: float, _trace: Trace) -> SampledCurves:
    return sampled_sweep(_trace, policies, capacities, rate, twins)


def _sample_caption(s: Setup, twins: tuple[str, ...]) -> None:
    out = sampled(s.key, s.policies, twins, s.capacities, float(s.sample), s.trace)
    exact = float(s.replay.seen_before.mean())
    estimated = float(out.prefix.loc[out.prefix["capacity"] == INFINITE, "hit_ratio"].iloc[0])
    st.caption(
        f"**Sampled**: {out.sample.requests_kept:,} of {out.sample.requests:,} requests kept whole, grouped "
        f"by where they leave the {out.sample.trunk:,} blocks many requests share ({out.sample.access_share:.1%} "
        "of the block accesses); those shared blocks keep their place in the cache and the rest of it is scaled. "
        f"Each point may be off by up to {out.prefix['error_estimate'].max():.3f} (the spread of four disjoint "
        f"samples). Check: the estimated infinite-cache ceiling is {estimated:.3f} against {exact:.3f} for "
        "the whole trace. The exact replay is fast enough for most traces."
    )


def replay_all(s: Setup, twins: tuple[str, ...]) -> None:
    """Replay every chosen policy through the radix cache and the ``twins`` through the block cache
    (cached), with progress bars drawn by the page."""
    confirm_memory(budget.replay_memory(budget.PREFIX, s.trace, len(s.policies) * len(s.capacities)), "prefix_sweep")
    confirm_cost(pc.cost(s.replay, len(s.policies) * len(s.capacities)), "prefix_sweep")
    stepped(_replaying, s.policies, lambda p: prefix_table(s.key, p, s.capacities, s.trace))
    stepped(
        lambda p: f"Replaying the block cache, {p.upper()}…",
        twins,
        lambda p: block_sweep(s.key, p, s.capacities, s.trace),
    )


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def curves_of(
    key: str, policies: tuple, twins: tuple, capacities: tuple, sample: float | None, _trace: Trace
) -> Curves:
    """The Curves view's curves and their comparison, from the cached replays (which ``curves_view``
    ran first, with its progress bars), so a rerun neither merges nor hashes them again."""
    if sample:
        out = sampled(key, policies, twins, capacities, sample, _trace)
        return compare_curves(out.prefix, out.block, twins)
    accesses = prepared(key, _trace).accesses
    curve = pd.concat(
        [pc.curve_of_table(p, capacities, prefix_table(key, p, capacities, _trace), accesses) for p in policies],
        ignore_index=True,
    )
    swept = pd.concat([block_sweep(key, p, capacities, _trace) for p in twins], ignore_index=True) if twins else None
    return compare_curves(curve, swept, twins)


def curves_view(s: Setup) -> tuple[list[str], list[dict]]:
    """Prefix against block curves (small multiples and their difference), markers and their cost."""
    twins = tuple(p for p in s.policies if p in pc.BLOCK_TWINS)
    with st.container():  # the sample's caption or the replays' progress: the figures below keep their place
        if s.sample:
            _sample_caption(s, twins)
        else:
            replay_all(s, twins)
    c = curves_of(s.key, s.policies, twins, s.capacities, s.sample, s.trace)
    drawn = f"{s.key}:{s.policies}:{s.capacities}:{s.sample}"  # stands for the curves in the figure cache
    if c.comp is not None:
        figures.figure(
            "prefix_cache.fig_prefix_vs_block",
            c.comp,
            bytes_per_block=s.bytes_per_block,
            model=s.model,
            found=tuple(r for r in c.found if r.policy in twins),
            ceiling=c.ceiling,
            cache_key=drawn,
            key="prefix_vs_block",
        )
    else:
        st.info("The block cache has LRU, LFU and FIFO: pick one of them to see the two caches side by side.")
    figures.figure(
        "prefix_cache.fig_prefix_curves",
        c.curve,
        bytes_per_block=s.bytes_per_block,
        model=s.model,
        cache_key=drawn,
        key="prefix_all",
    )
    table = pc.reach_table(c.found, s.bytes_per_block, s.price)
    st.markdown(
        f"**Where each policy reaches 80/90/95% of the infinite-cache ceiling ({c.ceiling:.3f})**, with the "
        f"memory and its price per hour (HBM ${s.price.hbm:.4f}/GiB·h, DRAM ${s.price.dram:.6f}/GiB·h):"
    )
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            "hit ratio": st.column_config.NumberColumn(format="%.3f"),
            "GiB": st.column_config.NumberColumn(format="%.3g"),
            "HBM $/h": st.column_config.NumberColumn(format="$%.2f"),
            "DRAM $/h": st.column_config.NumberColumn(format="$%.4f"),
            "capacity (blocks)": st.column_config.NumberColumn(format="%d"),
        },
    )
    curve = c.curve
    with st.container(horizontal=True):
        download_csv(table, "prefix_cache", "reach table", s.settings(), trace=s.trace.name)
        download_csv(
            curve.assign(capacity_gib=curve["capacity"] * s.bytes_per_block / pc.GIB),
            "prefix_cache",
            "prefix curve",
            s.settings(),
            trace=s.trace.name,
        )
    example = worked_example()
    notes = (pc.curve_notes(c.comp, s.bytes_per_block) if c.comp is not None else []) + pc.reach_notes(table)
    if s.engine == "vLLM":
        against = "lru" if "lru" in s.radix else s.radix[0]
        orphans = pool_orphans(s.key, s.finite[-1], s.trace)
        notes = vllm.engine_notes(c.curve, orphans, s.bytes_per_block, against) + notes
    return notes, pc.paper_rows(example.prefix_total, example.block_total)


@links.view_fragment("prefix_cache")
def _example_step(example: Example, source: str) -> None:
    """The step controls (◀ ▶, ← →, Play), both caches after that step and the requests so far: a step
    reruns only this. In presenter mode the controls and the step's words go beside the figure, so that
    the figure, the words and the arrows fit the first screen of a projector."""
    presenting = frame.presenter()
    figure_col, say_col = st.columns([3, 2]) if presenting else (nullcontext(),) * 2
    with say_col:
        step = keys.step_controls(
            "prefix_step", len(example.steps), "Step (requests served)", stacked=presenting, **links.PART
        )
        now = example.steps[step]
        st.markdown(
            ("**Empty caches**" if now.request == 0 else f"**After request {now.request}: {'·'.join(now.keys)}**")
            + f" — {example.capacity} blocks of cache each. Filled blue = cached; outline green = hit in this "
            "request, red = missed." + (" ▶ or → serves the first request." if now.request == 0 else "")
        )
    with figure_col:
        figures.figure("prefix_cache.fig_example", example, step, key="prefix_example")
    left, right = (f"{side}: hits" for side in example.sides)
    rows = [
        {"request": s.request, "blocks": "·".join(s.keys), left: s.block_hits, right: s.prefix_hits}
        for s in example.steps[1 : step + 1]
    ]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        download_csv(
            pd.DataFrame(rows),
            "prefix_cache",
            "worked example",
            {"example": source, "capacity (blocks)": example.capacity, "requests served": step},
        )


def example_view(engine: str = "SGLang") -> tuple[list[str], list[dict]]:
    """Tair LiteHit's five requests through both caches (SGLang), or the four where vLLM and SGLang part
    ways (vLLM), one request per slider step."""
    if engine == "vLLM":
        return engines_example_view()
    example = worked_example()
    _example_step(example, "Tair LiteHit README §10")
    first_loss = next((s for s in example.steps[1:] if s.prefix_hits > s.block_hits), None)
    notes = [
        f"After {len(LITEHIT_SCRIPT)} requests the prefix cache has {example.prefix_total} prefix hits and the "
        f"block cache {example.block_total}, with the same {example.capacity} blocks and the same LRU."
    ]
    if first_loss is not None:
        kept = sorted(example.steps[first_loss.request - 1].block_cached)
        notes.append(
            f"Request {first_loss.request} ({'·'.join(first_loss.keys)}) shows why: the block cache holds "
            f"{', '.join(kept)} — no {first_loss.keys[0]}, so nothing after it counts, while the prefix "
            f"cache kept the head and hits {first_loss.prefix_hits}."
        )
    return notes, pc.paper_rows(example.prefix_total, example.block_total)


def engines_example_view() -> tuple[list[str], list[dict]]:
    """Four requests through vLLM's pool and SGLang's radix LRU, and the step where they part ways."""
    example = vllm.engines_example()
    _example_step(example, "where vLLM and SGLang part ways")
    notes = [
        f"After {len(example.steps) - 1} requests vLLM's pool has {example.block_total} prefix hits and SGLang's "
        f"radix tree {example.prefix_total}, with the same {example.capacity} blocks and least recently used "
        "first in both."
    ]
    part = next((s for s in example.steps[1:] if s.block_hits != s.prefix_hits), None)
    if part is not None:
        before = example.steps[part.request - 1]
        notes.append(
            f"Request {part.request} ({'·'.join(part.keys)}) shows why: before it, vLLM held "
            f"{', '.join(sorted(before.block_cached))} and SGLang {', '.join(sorted(before.prefix_cached))}. "
            "To make room for one block SGLang evicted a whole leaf of the tree, every block of it; vLLM took "
            "one block from the head of its free queue, the tail its last request freed first. So vLLM hits "
            f"{part.block_hits} blocks of this request and SGLang {part.prefix_hits}."
        )
    return notes, []


def own_choices(s: Setup) -> dict[str, str]:
    """What a view that picks its own policy offers, code → name: every SGLang policy, vLLM's pool first
    under vLLM. Only the policies picked are replayed, so offering them all costs nothing."""
    return {p: pc.label(p) for p in ((vllm.POLICY,) if s.engine == "vLLM" else ()) + pc.POLICY_NAMES}


def follow_engine(s: Setup, key: str) -> None:
    """A new engine picked above shows in the policy control ``key``: vLLM's pool when it is vLLM,
    SGLang's first policy when it is SGLang again. Run before the control is drawn."""
    seen = f"{key}_engine"
    if st.session_state.get(seen, s.engine) != s.engine:
        st.session_state[key] = next(iter(own_choices(s).values()))
    st.session_state[seen] = s.engine


def requests_view(s: Setup) -> tuple[list[str], list[dict]]:
    """Distribution of each request's prefix-hit fraction at one capacity, and by turn when the trace has turns."""
    follow_engine(s, "prefix_req_policy")
    left, right = st.columns(2)
    policy = links.worded(left.selectbox, "Policy", own_choices(s), "prefix_req_policy")
    at = right.select_slider(
        "Capacity",
        s.finite,
        value=s.finite[len(s.finite) // 2],
        format_func=s.label,
        key="prefix_at",
        bind="query-params",
    )
    table = prefix_table(s.key, policy, s.capacities, s.trace)
    fractions = pc.hit_fractions(s.replay, table[s.capacities.index(at)])
    figures.figure(
        "prefix_cache.fig_hit_fractions", fractions, f"{s.label(at)}, {pc.label(policy)}", key="prefix_fractions"
    )
    turns = pc.by_turn(s.trace.requests, fractions)
    if turns is not None:
        figures.figure("prefix_cache.fig_by_turn", turns, key="prefix_turns")
    else:
        st.caption("This trace has no turn column (a Qwen-Bailian trace has one): no view by turn.")
    return pc.fraction_notes(fractions, turns), []


def time_view(s: Setup) -> tuple[list[str], list[dict]]:
    """Hit ratio per time window and capacity for one policy, and its difference from another."""
    follow_engine(s, "prefix_heat_a")
    left, right = st.columns(2)
    a = links.worded(left.selectbox, "Policy", own_choices(s), "prefix_heat_a")
    others = {p: name for p, name in own_choices(s).items() if p != a}
    b = links.worded(right.selectbox, "Compared with", others, "prefix_heat_b")
    labels = [s.label(c) for c in s.finite]
    wa = pc.window_ratios(s.replay, prefix_table(s.key, a, s.capacities, s.trace)[:-1])
    wb = pc.window_ratios(s.replay, prefix_table(s.key, b, s.capacities, s.trace)[:-1])
    figures.figure(
        "prefix_cache.fig_heatmap",
        wa,
        labels,
        f"{pc.label(a)}: prefix hit ratio per time window and capacity",
        key="prefix_heat",
    )
    figures.figure(
        "prefix_cache.fig_heatmap",
        wa - wb,
        labels,
        f"{pc.label(a)} − {pc.label(b)}",
        difference=True,
        key="prefix_diff",
    )
    return pc.window_notes(wa, labels, a, b, wa - wb), []


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Aggregating the prefix tree…")
def tree_of(key: str, top: int, _trace: Trace) -> PrefixTree:
    return prefix_tree(prepared(key, _trace), top)


def tree_view(s: Setup) -> tuple[list[str], list[dict]]:
    """The trace's prefix tree as an icicle of its most shared prefixes, and the hottest segments."""
    top = st.select_slider(
        "Nodes kept",
        TREE_SIZES,
        value=200,
        key="prefix_tree_top",
        bind="query-params",
        help="The prefixes used by the most requests; chains shared by the same requests are drawn as one segment.",
    )
    tree = tree_of(s.key, int(top), s.trace)
    figures.figure("prefix_cache.fig_prefix_tree", tree, cache_key=f"{s.key}:{int(top)}", key="prefix_tree")
    st.markdown("**The hottest segments** (most reusable tokens):")
    segments = hottest(tree)
    st.dataframe(
        segments,
        hide_index=True,
        width="stretch",
        column_config={
            **{c: st.column_config.NumberColumn(format="localized") for c in ("tokens", "requests", "reused tokens")},
            "first use (s)": st.column_config.NumberColumn(format="%.0f"),
            "last use (s)": st.column_config.NumberColumn(format="%.0f"),
        },
    )
    download_csv(segments, "prefix_cache", "hottest segments", {"nodes kept": int(top)}, trace=s.trace.name)
    return tree_notes(tree), []
