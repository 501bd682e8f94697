"""SGLang's scheduler over the tree with Strata's delay hits (S11): deferral, bundles, memory, host hits."""

from __future__ import annotations

import pytest

from kvviz.common.errors import InputError
from kvviz.radix.inflight import StrataHiRadixCache, StrataRadixCache
from kvviz.radix.radix_cache import RadixCache
from kvviz.radix.request import Request
from kvviz.radix.scheduler import Scheduler, SchedulerConfig


def r(a: int, b: int) -> tuple[int, ...]:
    return tuple(range(a, b + 1))


P = r(1, 300)


def _s11(deferral: bool = True, second=P + (902,)):
    cache = StrataHiRadixCache(10_000, 20_000, "write_through")
    s = Scheduler(cache, SchedulerConfig(deferral=deferral))
    log = s.round([Request("R1", P + (901,)), Request("R2", second), Request("R3", r(2001, 2050))])
    return cache, s, tuple(log["arrived"]), log


def test_s11_round_one_defers_the_delay_hit():
    cache, s, (r1, r2, r3), log = _s11()
    assert [q.rid for q in log["admitted"]] == ["R1", "R3"]
    assert [(q.rid, f) for q, f in log["deferred"]] == [("R2", 300)]
    assert [q.rid for q in s.waiting] == ["R2"]
    flight = sorted((len(n.key), sorted(n.owners), n.waiting) for n in cache.nodes() if n.in_flight)
    assert flight == [(1, ["R1"], 0), (50, ["R3"], 0), (300, ["R1"], 1)]  # R1's span split at 300
    assert cache.total_size() == 0


def test_s11_round_two_the_deferred_head_hits_the_device():
    cache, s, (r1, r2, r3), _ = _s11()
    assert [q.rid for q in s.waiting] == ["R2"]
    log = s.round([Request("R4", r(7001, 7010))])
    assert [q.rid for q in log["finished"]] == ["R1", "R3"]
    assert [q.rid for q in log["admitted"]] == ["R2", "R4"]
    assert (r2.device_hit, r2.in_flight, r2.computed) == (300, 0, 1)
    states = {(len(n.key), n.state) for n in cache.nodes()}
    assert {(300, "D+H"), (1, "D+H"), (50, "D+H")} <= states and (1, "in-flight") in states
    assert s.totals["redundant"] == 0


def test_s11_without_deferral_the_document_is_computed_twice():
    cache, s, (r1, r2, r3), log = _s11(deferral=False)
    assert [q.rid for q in log["admitted"]] == ["R1", "R2", "R3"]
    assert r2.in_flight == 300 and r2.computed == 301 and s.totals["redundant"] == 300


def test_s11_boundary_exactly_threshold_is_admitted():
    second = r(1, 100) + r(5001, 5100)
    cache, s, (r1, r2, r3), log = _s11(second=second)
    assert [q.rid for q in log["admitted"]] == ["R1", "R2", "R3"]
    assert r2.in_flight == 100 and s.totals["redundant"] == 100
    shared = next(n for n in cache.nodes() if n.in_flight and len(n.key) == 100)
    assert shared.owners == {"R1", "R2"}
    s.round([])
    assert r2.already_cached == 100  # R1 materialised it first; R2's copies are freed


def test_s11_one_more_token_defers():
    cache, s, (r1, r2, r3), log = _s11(second=r(1, 101) + r(5001, 5100))
    assert [(q.rid, f) for q, f in log["deferred"]] == [("R2", 101)]


def test_bundle_of_deferred_requests_is_released_together():
    cache = StrataRadixCache(capacity=10_000)
    s = Scheduler(cache)
    reqs = [Request(f"R{i}", P + (900 + i,)) for i in range(4)]
    s.round(reqs)
    assert len(s.waiting) == 3
    log = s.round([])
    assert len(log["admitted"]) == 3 and s.totals["bundle_hits"] == 3
    assert all(q.device_hit == 300 for q in log["admitted"])


def test_sequential_request_hits_and_hit_count_two():
    cache = StrataRadixCache(capacity=100)
    s = Scheduler(cache)
    s.round([Request("A", r(1, 10), output=r(11, 12))])
    s.round([])
    assert cache.total_size() == 12 and cache.reserved == 0
    prompt = next(n for n in cache.nodes() if n.key == r(1, 10))
    assert prompt.hit_count == 1  # inserted after prefill and at finish, counted once (SGLang 0.5.23)
    (b,) = s.round([Request("B", r(1, 10))])["arrived"]  # the same prompt again: the last token runs
    assert b.device_hit == 9 and b.computed == 1


def test_memory_pressure_evicts_and_rejects_too_long():
    cache = StrataRadixCache(capacity=20)
    s = Scheduler(cache)
    s.round([Request("A", r(1, 15))])
    s.round([Request("B", r(101, 115))])  # A finishes; B needs 15: A is evicted
    assert s.running[0].rid == "B" and cache.total_size() == 0
    log = s.round([Request("C", r(1, 30))])
    assert [q.rid for q in log["rejected"]] == ["C"]


def test_host_hit_is_loaded_back_at_admission():
    cache = StrataHiRadixCache(40, 100, "write_through")
    s = Scheduler(cache)
    s.round([Request("A", r(1, 30))])
    s.round([Request("B", r(101, 130))])  # A → host to make room for B
    log = s.round([Request("C", r(1, 30))])
    (c,) = log["admitted"]
    assert (c.device_hit, c.host_hit, c.loaded, c.computed) == (0, 29, 29, 1)
    assert [e.kind.value for e in cache.events[-2:]] == ["to host", "load back"]  # B made room for it


def test_bad_threshold():
    with pytest.raises(InputError):
        Scheduler(StrataRadixCache(), SchedulerConfig(threshold=-1))


def test_the_scheduler_needs_in_flight_spans_and_sglangs_tree_has_none():
    with pytest.raises(InputError, match="in-flight"):
        Scheduler(RadixCache())
    plain, strata = RadixCache(), StrataRadixCache()
    for cache in (plain, strata):
        cache.insert(P)
    assert not hasattr(plain, "insert_in_flight") and plain.root.children[1].state == "D"
    assert strata.insert_in_flight(P + r(301, 340), "R1") == 40
    m = strata.match_prefix(P + r(301, 350))
    assert (m.device_len, m.in_flight_len, m.deepest.state) == (300, 40, "in-flight")
    strata.insert(P + r(301, 340))  # the span is computed: materialised
    assert strata.n_in_flight == 0 and strata.match_prefix(P + r(301, 340)).device_len == 340
