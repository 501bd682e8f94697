"""The Mooncake cluster page's scheduling view text, generated from the numbers the page shows.

"What to notice" and the paper note (§5, Algorithm 1, Fig. 8) read the four schedulers' results
(``kvviz.mooncake.conductor.ScheduleResult``): every comparison is made on the numbers as the page
prints them, so a claim is never finer than what a viewer can check. The overload view's text is
in ``kvviz.mooncake.overload.report``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kvviz.mooncake import conductor


def _than(a: float, b: float, shown: Callable[[float], str], more: str, less: str) -> str:
    """``more`` or ``less`` as ``a`` stands to ``b``, or "the same as" when the two print alike
    through ``shown`` (a claim is never finer than the numbers on the screen)."""
    if shown(a) == shown(b):
        return "the same as"
    return more if a > b else less


HOT_SPOT = 0.05  # busiest ÷ mean load this much above load balancing's counts as a hot spot


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _secs(x: float) -> str:
    return f"{x:.2f} s"


def _times(x: float) -> str:
    return f"{x:.2f}×"


def scheduling_notes(
    results: dict[str, conductor.ScheduleResult], config: conductor.ConductorConfig, block_size: int
) -> list[str]:
    """What to notice on the scheduling view, each claim read off this run's table (needs all four
    schedulers): reuse and TTFT of scattering vs cache-aware placement, the hot spot, fetching,
    what the balancing threshold decided, and what admission did."""
    rand, bal, cache, kv = (results[s] for s in conductor.SCHEDULERS)
    return [
        _scatter_note(rand, bal, cache),
        _hot_spot_note(bal, cache),
        _fetch_note(cache, kv, config, block_size),
        _threshold_note(kv, config.balancing_threshold),
        _admission_note(kv, config),
    ]


def _scatter_note(
    rand: conductor.ScheduleResult, bal: conductor.ScheduleResult, cache: conductor.ScheduleResult
) -> str:
    h_r, h_b, h_c = _pct(rand.hit_ratio), _pct(bal.hit_ratio), _pct(cache.hit_ratio)
    scattered = all(_than(r.hit_ratio, cache.hit_ratio, _pct, "more", "less") == "less" for r in (rand, bal))
    why = (
        "they place a session's or a document's requests without looking at the caches, so instances "
        "recompute prefixes another one holds"
        if scattered
        else "here placing requests blind to the caches did not cost reuse against cache-aware placement"
    )
    m_r, m_b, m_c = _secs(rand.mean_ttft_s), _secs(bal.mean_ttft_s), _secs(cache.mean_ttft_s)
    return (
        f"**Random** and **load balancing** serve {h_r} and {h_b} of the requested blocks from a cache, "
        f"cache-aware placement {h_c}: {why}. Mean TTFT: {m_r} and {m_b}, against {m_c}."
    )


def _hot_spot_note(bal: conductor.ScheduleResult, cache: conductor.ScheduleResult) -> str:
    i_b, i_c = _times(bal.imbalance), _times(cache.imbalance)
    extra = cache.imbalance - bal.imbalance
    spot = (
        "the instances holding hot prefixes got more of the work"
        if extra >= HOT_SPOT
        else "its load was about as even as load balancing's"
        if extra > -HOT_SPOT
        else "its load was more even than load balancing's"
    )
    return (
        f"**Cache-aware** placement reuses local prefixes ({_pct(cache.hit_ratio)} of blocks against load "
        f"balancing's {_pct(bal.hit_ratio)}). Its busiest instance worked {i_c} the mean, load balancing's "
        f"{i_b}: {spot}. P90 TTFT {_secs(cache.p90_ttft_s)} against {_secs(bal.p90_ttft_s)}."
    )


def _fetch_note(
    cache: conductor.ScheduleResult, kv: conductor.ScheduleResult, config: conductor.ConductorConfig, block_size: int
) -> str:
    return _fetch_cost(config, block_size) + " " + _fetch_outcome(cache, kv)


def _fetch_cost(config: conductor.ConductorConfig, block_size: int) -> str:
    """One block fetched against one block recomputed; the first block of a prompt is the cheapest
    to recompute (attention grows with the position), so "pays" holds for every block."""
    fetch_ms, latency_ms = config.transfer_s_per_block(block_size) * 1e3, config.transfer_latency_s * 1e3
    compute_ms = (config.prefill.time(block_size) - config.prefill.overhead_s) * 1e3
    verdict = "fetching pays" if fetch_ms + latency_ms < compute_ms else "fetching can cost more than recomputing"
    return (
        f"At {config.bandwidth_gbps:g} Gb/s a {block_size}-token block takes {fetch_ms:,.1f} ms to fetch "
        f"(+{latency_ms:g} ms per fetch) and at least {compute_ms:,.0f} ms to recompute: {verdict}."
    )


def _fetch_outcome(cache: conductor.ScheduleResult, kv: conductor.ScheduleResult) -> str:
    m_k, m_c = _secs(kv.mean_ttft_s), _secs(cache.mean_ttft_s)
    if kv.remote_fetches == 0:
        return (
            f"**KVCache-centric** fetched nothing here: its mean TTFT {m_k} comes from local prefixes "
            f"alone (cache-aware: {m_c})."
        )
    than = _than(kv.mean_ttft_s, cache.mean_ttft_s, _secs, "higher than", "lower than")
    return (
        f"**KVCache-centric** fetched a prefix for {kv.remote_fetches:,} request{'s' * (kv.remote_fetches != 1)} "
        f"and kept the "
        f"{kv.replicated_blocks:,} copied blocks where they went (hot prefixes replicate). Its mean TTFT {m_k} "
        f"is {than} cache-aware's {m_c}; its hit ratio {_pct(kv.hit_ratio)} against {_pct(cache.hit_ratio)}."
    )


def _threshold_note(kv: conductor.ScheduleResult, threshold: float) -> str:
    ratios = kv.threshold_ratios
    if len(ratios) == 0:
        return (
            "The **balancing threshold** decided nothing on this run: no instance ever held part of a "
            "request's longest prefix (an instance holds it whole, and computes from it, or holds none of it, "
            "and is costed with a fetch), so any threshold gives this same view."
        )
    at = ratios[ratios >= threshold]
    below = ratios[ratios < threshold]
    # Every threshold in (largest ratio below, smallest ratio at or above] takes the same branches,
    # hence makes this very run; the bounds are rounded inwards so the printed range is inside it.
    low, high = (
        f"{math.ceil(below.max() * 100) / 100:.2f}" if len(below) else None,
        f"{math.floor(at.min() * 100) / 100:.2f}" if len(at) else None,
    )
    same = (
        f"every threshold from 1.00 up to {high}"
        if low is None
        else f"every threshold above {low}"
        if high is None
        else f"every threshold above {low} and up to {high}"
    )
    return (
        f"The **balancing threshold** ({threshold:.2f}) decided a branch {len(ratios):,} times, on "
        f"{kv.threshold_requests:,} requests where an instance held part of the longest prefix (prefix ratios "
        f"{ratios.min():.2f}–{ratios.max():.2f}): {len(at):,} at or above it were costed with a fetch, "
        f"{len(below):,} below it with their own prefix. Any other instance holds the prefix whole or none of "
        f"it, where the threshold plays no part; {same} gives exactly this KVCache-centric run."
    )


def _admission_note(kv: conductor.ScheduleResult, config: conductor.ConductorConfig) -> str:
    """What rejection did to KVCache-centric's requests, or what admitting them all cost."""
    n, admitted = len(kv.ttft_s), int(kv.accepted.sum())
    slos = f"{config.ttft_slo_s:g} s TTFT and {config.tbt_slo_s * 1000:g} ms TBT SLOs"
    goodput = f"{kv.goodput_rps:.2f} requests a second were served within the {slos}"
    if config.reject:
        return (
            f"With **rejection** on, KVCache-centric admitted {admitted:,} of {n:,} requests and turned away "
            f"{kv.rejected(conductor.REJECTED_TTFT):,} whose predicted TTFT missed its SLO and "
            f"{kv.rejected(conductor.REJECTED_TBT):,} whose predicted TBT did. The admitted requests' p90 TTFT "
            f"is {_secs(kv.p90_ttft_s)}: a prediction is the time the request then takes, so an admitted "
            f"request never misses. {goodput[0].upper()}{goodput[1:]}."
        )
    if kv.within_slo == n:
        return (
            f"Every request was admitted and met the {slos}: at this speed-up the pool keeps up, so "
            "rejection would turn nobody away. Raise the speed-up to overload it."
        )
    return (
        f"Every request was admitted: {_pct(kv.over_ttft_slo)} of KVCache-centric's missed the TTFT SLO (p90 "
        f"{_secs(kv.p90_ttft_s)}) and {_pct(kv.over_tbt_slo)} the TBT SLO, so only {goodput}. Turn on "
        "**rejection** to see Algorithm 1 turn away, on arrival, the requests it predicts will miss."
    )


def scheduling_paper_note(results: dict[str, conductor.ScheduleResult]) -> str:
    """Whether this run orders the schedulers as Fig. 8 does, and why the sizes differ."""
    same = conductor.fig8_order_holds(results)
    return (
        f"This run {'orders' if same else 'does not order'} the four schedulers' average TTFT as Fig. 8 does "
        "(random slowest, KVCache-centric fastest); the sizes are not the paper's. Fig. 8 replays 23,000 real "
        "requests on 8P+8D with decode and real queueing; this replays the chosen trace on the prefill pool "
        "alone with a model of prefill time, so absolute TTFTs depend on the speed-up. The hit ratios come "
        "from the lecture notes' synthetic workload; this one's depend on its reuse."
        + (_REJECTED_NOTE if any(not r.accepted.all() for r in results.values()) else "")
    )


_REJECTED_NOTE = (
    " Fig. 8 serves every request; here some were rejected, and each scheduler's average counts only the "
    "requests it admitted, which the TTFT SLO caps: compare how many each one turned away instead."
)
