"""The cluster page's scheduling notes and paper rows: each claim follows the numbers shown, on hand-made results."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kvviz.common import paper
from kvviz.mooncake.conductor import SCHEDULERS, ConductorConfig, PrefillModel, ScheduleResult, paper_rows, schedule
from kvviz.mooncake.notes import scheduling_notes, scheduling_paper_note
from kvviz.traces import from_records

BS = 512


def _result(
    scheduler: str, *, ttft=(1.0,), hit: float = 0.0, busy=(1.0, 1.0), fetched=(0,), ratios=(), decided: int = 0
) -> ScheduleResult:
    """A result whose shown numbers are known: ``hit`` of 100 blocks reused, the TTFTs given."""
    n = len(ttft)
    n_blocks = np.full(n, 100 // n, np.int64)
    prefix = np.zeros(n, np.int64)
    prefix[0] = round(hit * n_blocks.sum())
    return ScheduleResult(
        scheduler,
        np.asarray(ttft, float),
        np.zeros(n, np.int64),
        prefix,
        np.asarray(fetched, np.int64),
        n_blocks,
        np.asarray(busy, float),
        30.0,
        np.full(n, -1, np.int64),
        np.full(n, np.nan),
        outcome=np.zeros(n, np.int8),
        predicted_tbt_s=np.full(n, 0.05),
        tbt_s=np.full(n, 0.05),
        tbt_slo_s=0.1,
        span_s=10.0,
        peak_tbt_s=0.05,
        threshold_ratios=np.asarray(ratios, float),
        threshold_requests=decided,
    )


def _results(**kv) -> dict[str, ScheduleResult]:
    return {
        "random": _result("random", ttft=(4.0,), hit=0.10),
        "balance": _result("balance", ttft=(3.0,), hit=0.12),
        "cache": _result("cache", ttft=(2.0,), hit=0.30, busy=(1.5, 0.5)),
        "kvcentric": _result("kvcentric", **{"ttft": (1.0,), "hit": 0.35, "fetched": (7,), **kv}),
    }


def _notes(results, **config):
    return scheduling_notes(results, ConductorConfig(**config), BS)


def test_every_note_reads_the_numbers():
    scatter, hot, fetch, threshold, admission = _notes(
        _results(ratios=(1.5, 2.0, 3.0), decided=2), balancing_threshold=2.0
    )
    assert scatter == (
        "**Random** and **load balancing** serve 10% and 12% of the requested blocks from a cache, "
        "cache-aware placement 30%: they place a session's or a document's requests without looking "
        "at the caches, so instances recompute prefixes another one holds. Mean TTFT: 4.00 s and "
        "3.00 s, against 2.00 s."
    )
    assert hot == (
        "**Cache-aware** placement reuses local prefixes (30% of blocks against load balancing's 12%). "
        "Its busiest instance worked 1.50× the mean, load balancing's 1.00×: the instances holding hot "
        "prefixes got more of the work. P90 TTFT 2.00 s against 3.00 s."
    )
    assert fetch == (
        "At 800 Gb/s a 512-token block takes 1.7 ms to fetch (+1 ms per fetch) and at least 57 ms to "
        "recompute: fetching pays. **KVCache-centric** fetched a prefix for 1 request and kept the 7 "
        "copied blocks where they went (hot prefixes replicate). Its mean TTFT 1.00 s is lower than "
        "cache-aware's 2.00 s; its hit ratio 35% against 30%."
    )
    assert threshold == (
        "The **balancing threshold** (2.00) decided a branch 3 times, on 2 requests where an instance "
        "held part of the longest prefix (prefix ratios 1.50–3.00): 2 at or above it were costed "
        "with a fetch, 1 below it with their own prefix. Any other instance holds the prefix whole "
        "or none of it, where the threshold plays no part; every threshold above 1.50 and up to "
        "2.00 gives exactly this KVCache-centric run."
    )
    assert admission == (
        "Every request was admitted and met the 30 s TTFT and 100 ms TBT SLOs: at this speed-up the pool keeps "
        "up, so rejection would turn nobody away. Raise the speed-up to overload it."
    )


def test_the_admission_note_counts_rejections_or_the_requests_served_late():
    results = _results(ttft=(10.0, 40.0, 50.0, 20.0))  # two of four over the 30 s SLO
    assert _notes(results)[4] == (
        "Every request was admitted: 50% of KVCache-centric's missed the TTFT SLO (p90 47.00 s) and 0% the TBT "
        "SLO, so only 0.20 requests a second were served within the 30 s TTFT and 100 ms TBT SLOs. Turn on "
        "**rejection** to see Algorithm 1 turn away, on arrival, the requests it predicts will miss."
    )
    kv = results["kvcentric"]
    results["kvcentric"] = replace(
        kv, outcome=np.array([0, 1, 1, 2], np.int8), tbt_s=np.array([0.05, np.nan, np.nan, np.nan])
    )
    assert _notes(results, reject=True)[4] == (
        "With **rejection** on, KVCache-centric admitted 1 of 4 requests and turned away 2 whose predicted TTFT "
        "missed its SLO and 1 whose predicted TBT did. The admitted requests' p90 TTFT is 10.00 s: a prediction "
        "is the time the request then takes, so an admitted request never misses. 0.10 requests a second were "
        "served within the 30 s TTFT and 100 ms TBT SLOs."
    )


def test_numbers_that_print_alike_make_no_claim():
    results = _results()
    results["random"] = _result("random", hit=0.30)  # 30% as cache-aware's 30%
    results["cache"] = _result("cache", ttft=(2.0,), hit=0.30, busy=(1.02, 0.98))
    results["kvcentric"] = _result("kvcentric", ttft=(2.004,), hit=0.30, fetched=(3,))
    scatter, hot, fetch, *_ = _notes(results)
    assert "here placing requests blind to the caches did not cost reuse against cache-aware placement" in scatter
    assert "1.02× the mean, load balancing's 1.00×: its load was about as even as load balancing's." in hot
    assert "Its mean TTFT 2.00 s is the same as cache-aware's 2.00 s" in fetch
    results["cache"] = _result("cache", ttft=(2.0,), hit=0.30, busy=(1.0, 1.0))
    results["balance"] = _result("balance", hit=0.12, busy=(1.2, 0.8))
    assert "its load was more even than load balancing's" in _notes(results)[1]


def test_slow_links_and_no_fetches_are_said_so():
    results = _results(fetched=(0,))
    fetch = _notes(results, bandwidth_gbps=1.0)[2]
    assert fetch.startswith(
        "At 1 Gb/s a 512-token block takes 1,342.2 ms to fetch (+1 ms per fetch) and at least "
        "57 ms to recompute: fetching can cost more than recomputing."
    )
    assert fetch.endswith(
        "**KVCache-centric** fetched nothing here: its mean TTFT 1.00 s comes from local prefixes "
        "alone (cache-aware: 2.00 s)."
    )


def test_the_threshold_note_gives_the_thresholds_that_make_the_same_run():
    def note(ratios, threshold):
        return _notes(_results(ratios=ratios, decided=len(ratios)), balancing_threshold=threshold)[3]

    assert note((), 1.25).startswith("The **balancing threshold** decided nothing on this run")
    assert note((12 / 11, 8 / 7), 1.25).endswith(  # 1.0909 and 1.1429, both below: any threshold above them
        "0 at or above it were costed with a fetch, 2 below it with their own prefix. Any other instance holds the "
        "prefix whole or none of it, where the threshold plays no part; every threshold above 1.15 gives exactly "
        "this KVCache-centric run."
    )
    assert note((12 / 11, 8 / 7), 1.0).endswith(
        "every threshold from 1.00 up to 1.09 gives exactly this KVCache-centric run."
    )


def test_the_paper_note_says_whether_fig8s_order_holds_as_shown():
    assert scheduling_paper_note(_results()).startswith("This run orders the four schedulers' average TTFT as Fig. 8")
    results = _results(ttft=(2.001,))  # 2.00 s as cache-aware's: not faster as shown
    assert scheduling_paper_note(results).startswith("This run does not order")
    assert "compare how many each one turned away instead" not in scheduling_paper_note(results)
    results["random"] = replace(results["random"], outcome=np.array([1], np.int8))
    assert scheduling_paper_note(results).endswith(
        "Fig. 8 serves every request; here some were rejected, and each scheduler's average counts only the "
        "requests it admitted, which the TTFT SLO caps: compare how many each one turned away instead."
    )


def test_schedule_records_the_ratios_the_threshold_was_compared_with():
    # r0 puts blocks 1-4 on instance 0; r1 (blocks 1, 2, 9) cannot wait for them and computes on
    # instance 1; r2 (blocks 1-5) then finds 4 blocks on instance 0 and 2 on instance 1: ratio 2.
    ids = [[1, 2, 3, 4], [1, 2, 9], [1, 2, 3, 4, 5]]
    trace = from_records([0, 0, 10_000], [len(x) * BS for x in ids], [1] * 3, ids, block_size=BS)
    config = ConductorConfig(instances=2, prefill=PrefillModel(0.0, 1.0 / BS, 0.0))
    kv = schedule(trace, config, "kvcentric")
    assert kv.instance.tolist() == [0, 1, 0]
    assert (kv.threshold_ratios.tolist(), kv.threshold_requests) == ([2.0], 1)
    for other in SCHEDULERS[:3]:
        r = schedule(trace, config, other)
        assert (r.threshold_ratios.tolist(), r.threshold_requests) == ([], 0)


def test_paper_rows_set_fig8_and_the_notes_hit_ratios_beside_the_run():
    rows = paper_rows(_results(hit=0.47))  # KVCache-centric reuses the notes' 47%
    assert isinstance(rows, list) and paper.problems(rows) == []
    assert [(r["quantity"], r["this simulation"], r["status"]) for r in rows] == [
        ("Average TTFT: Random", "4.00 s", "differs"),
        ("Average TTFT: Load balancing", "3.00 s", "differs"),
        ("Average TTFT: Cache-aware", "2.00 s", "differs"),
        ("Average TTFT: KVCache-centric", "1.00 s", "differs"),
        ("Order of average TTFT", "4.00 s > 3.00 s > 2.00 s > 1.00 s", "agrees"),
        ("Load balancing ÷ KVCache-centric, average TTFT", "3.0×", "differs"),
        ("Cache hit ratio: Random (lecture notes)", "0.10", "differs"),
        ("Cache hit ratio: Load balancing (lecture notes)", "0.12", "differs"),
        ("Cache hit ratio: Cache-aware (lecture notes)", "0.30", "differs"),
        ("Cache hit ratio: KVCache-centric (lecture notes)", "0.47", "agrees"),
    ]
