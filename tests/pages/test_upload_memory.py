"""Uploads in server memory (ui.kit.uploads): held while a connected session shows them, released after
a session has been gone GRACE_S, large parses one at a time.

Time is a fake clock and sessions are connected or not by hand: nothing here sleeps.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
import streamlit as st
from hypothesis import given, settings
from hypothesis import strategies as hs

from kvviz.traces import MIB, load_trace
from tests.conftest import assert_clean, open_page, shown
from ui.kit import uploads
from ui.kit.traces import SESSION_KEY
from ui.kit.uploads import GRACE_S, PARSES_KEPT, ParseQueue, Registry, Upload

TRACE = b'{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'
BOUND = 30  # seconds a test thread may take to reach a point (a bound, never the assertion)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class World:
    """A registry with sessions connected by hand and a fake clock; records the sessions closed."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.online: set[str] = set()
        self.closed: list[str] = []
        self.clock = Clock()
        self.registry = Registry(lambda s: s in self.online, self.closed.append, self.clock, grace_s)

    def connect(self, *sessions: str) -> None:
        self.online.update(sessions)

    def leave(self, session: str) -> None:
        self.online.discard(session)

    def after(self, seconds: float) -> list[Upload]:
        self.clock.now += seconds
        return self.registry.sweep()


def test_an_upload_is_held_once_and_released_after_its_session_is_gone_grace_seconds():
    w = World()
    w.connect("a")
    assert w.registry.show("a", "trace", "d1", b"bytes") == []
    w.leave("a")
    assert w.after(0) == [] and "d1" in w.registry.uploads  # first seen gone: the grace starts
    assert w.after(GRACE_S - 1) == [] and w.closed == []
    dropped = w.after(1)
    assert [u.data for u in dropped] == [b"bytes"]
    assert w.closed == ["a"] and w.registry.uploads == {} and w.registry.shown == {}


@pytest.mark.parametrize(
    ("name", "read", "default", "good", "bad"),
    [
        (uploads.GRACE_ENV, uploads.grace_s, GRACE_S, ("1", "5", "86400"), ("0.9", "86401")),
        (uploads.SWEEP_ENV, uploads.sweep_s, uploads.SWEEP_S, ("0.5", "5", "3600"), ("0.4", "3601")),
    ],
    ids=["grace", "sweep"],
)
def test_a_server_sets_its_upload_times_in_the_environment_and_a_bad_value_is_refused(
    name, read, default, good, bad, monkeypatch, caplog
):
    for value in good:  # the bounds are allowed, just past them is not
        monkeypatch.setenv(name, value)
        assert read() == float(value)
    for value in (*bad, "0", "-3", "nan", "inf", "1e9", "half a minute"):
        monkeypatch.setenv(name, value)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger=uploads.__name__):
            assert read() == default  # refused: the default holds
        assert name in caplog.text and repr(value) in caplog.text
    monkeypatch.delenv(name)
    assert read() == default


def test_a_session_ends_after_the_grace_the_server_set():
    w = World(grace_s=5)
    w.connect("a")
    w.registry.show("a", "trace", "d1", b"bytes")
    w.leave("a")
    w.after(0)
    assert w.after(4) == [] and len(w.after(1)) == 1 and w.closed == ["a"]


def test_the_sweeper_collects_garbage_every_sweep_s_while_uploads_are_held_however_often_it_looks(monkeypatch):
    w = World(grace_s=5)
    monkeypatch.setattr(uploads, "REGISTRY", w.registry)
    collections = []
    monkeypatch.setattr(uploads, "_collect", lambda: collections.append(w.clock.now))
    last = uploads.Sweeps()

    def look(at: float) -> int:
        w.clock.now = at
        uploads.sweep(last, at)
        return len(collections)

    assert look(1000) == 0  # nothing held: nothing to collect
    w.connect("a")
    w.registry.show("a", "trace", "d1", b"bytes")
    assert look(1000.5) == 1  # held, never collected
    assert look(1001) == 1 and look(1000.5 + uploads.SWEEP_S - 0.5) == 1  # a short sweep interval
    assert look(1000.5 + uploads.SWEEP_S) == 2  # collects no more often than the default's
    w.registry.let_go("a", "trace")  # dropped between two looks
    assert look(1011) == 3 and look(1012) == 3  # the look after the last went collects once
    w.registry.show("a", "trace", "d2", b"other")
    assert look(1010 + uploads.SWEEP_S) == 3  # held again, collected SWEEP_S - 1 seconds ago
    w.leave("a")
    assert look(1011 + uploads.SWEEP_S) == 4  # due again; the browser is gone: its grace starts
    assert look(1015 + uploads.SWEEP_S) == 4
    assert look(1016 + uploads.SWEEP_S) == 5  # the session ends, its upload is dropped: collected at once


def test_a_session_back_within_the_grace_keeps_its_upload():
    w = World()
    w.connect("a")
    w.registry.show("a", "trace", "d1", b"bytes")
    w.leave("a")
    w.after(0)
    w.connect("a")  # a network blip: the browser reconnected
    assert w.after(GRACE_S - 1) == []
    w.leave("a")
    w.after(0)
    assert w.after(GRACE_S - 1) == [] and "d1" in w.registry.uploads  # the grace started again
    assert len(w.after(1)) == 1 and w.closed == ["a"]


def test_an_upload_two_sessions_show_stays_until_both_are_gone():
    w = World()
    w.connect("a", "b")
    w.registry.show("a", "trace", "d1", b"bytes")
    assert w.registry.show("b", "eviction", "d1") == []  # the same content: no bytes needed again
    assert len(w.registry.uploads) == 1
    w.leave("a")
    w.after(0)
    assert w.after(GRACE_S) == [] and w.closed == ["a"]
    w.leave("b")
    w.after(0)
    assert len(w.after(GRACE_S)) == 1 and w.closed == ["a", "b"]


def test_a_slot_that_shows_something_else_lets_its_upload_go():
    w = World()
    w.connect("a")
    w.registry.show("a", "trace", "d1", b"one")
    w.registry.show("a", "eviction", "d1")
    assert w.registry.let_go("a", "trace") == []  # the eviction page still shows it
    assert [u.data for u in w.registry.show("a", "eviction", "d2", b"two")] == [b"one"]  # replaced there
    assert list(w.registry.uploads) == ["d2"]
    assert [u.data for u in w.registry.let_go("a", "eviction")] == [b"two"]


def test_a_digest_no_longer_held_is_not_shown_without_its_bytes():
    w = World()
    w.registry.show("a", "trace", "d1", b"one")
    assert [u.data for u in w.registry.show("a", "trace", "gone")] == [b"one"]  # the slot shows none now
    assert w.registry.uploads == {} and w.registry.shown == {}


def test_parsed_traces_kept_are_the_newest_few():
    w = World()
    w.registry.show("a", "trace", "d1", b"x")
    trace = load_trace(TRACE)
    for key in range(PARSES_KEPT + 2):
        w.registry.keep_trace("d1", ("name", key), trace)
    w.registry.keep_trace("d1", ("name", PARSES_KEPT), trace)  # used again: the newest
    assert list(w.registry.uploads["d1"].traces) == [
        ("name", k) for k in range(PARSES_KEPT, PARSES_KEPT + 2) if k != PARSES_KEPT
    ] + [("name", PARSES_KEPT)]
    w.registry.keep_trace("gone", ("name", 0), trace)  # an upload dropped meanwhile: nothing kept
    assert "gone" not in w.registry.uploads


OPS = hs.lists(
    hs.tuples(
        hs.sampled_from(["show", "let_go", "leave", "connect", "wait"]),
        hs.sampled_from("abc"),
        hs.sampled_from(["trace", "eviction"]),
        hs.sampled_from("xyz"),
        hs.integers(0, GRACE_S),
    ),
    max_size=40,
)


@settings(max_examples=200)
@given(OPS)
def test_the_uploads_held_are_exactly_those_a_slot_shows(ops):
    """After every step: an upload is held iff some session's slot shows it, and a session is closed
    once it has been seen gone for GRACE_S, not before."""
    w = World()
    gone_since: dict[str, float] = {}
    for op, session, slot, digest, seconds in ops:
        if op == "show":
            w.connect(session)
            w.registry.show(session, slot, digest, digest.encode())
        elif op == "let_go":
            w.registry.let_go(session, slot)
        elif op == "leave":
            w.leave(session)
        elif op == "connect":
            w.connect(session)
        else:
            w.clock.now += seconds
        closed_before = len(w.closed)
        w.registry.sweep()
        for s in list(w.registry.shown) + w.closed[closed_before:]:
            if s in w.online:
                gone_since.pop(s, None)
            else:
                gone_since.setdefault(s, w.clock.now)
        for s in w.closed[closed_before:]:
            assert w.clock.now - gone_since.pop(s) >= GRACE_S
        for s in set(gone_since) - set(w.registry.shown):  # showing nothing: no longer watched
            del gone_since[s]
        assert all(s in w.online or w.clock.now - gone_since[s] < GRACE_S for s in w.registry.shown)
        shown = {d for slots in w.registry.shown.values() for d in slots.values()}
        assert set(w.registry.uploads) == shown


def test_dropping_an_upload_clears_the_cache_entries_derived_from_its_trace():
    calls = []

    @uploads.released_with_upload
    @st.cache_data
    def derived(key: str, _trace) -> str:
        calls.append(key)
        return key

    mine, other = load_trace(TRACE, name="mine"), load_trace(TRACE.replace(b"[0, 1]", b"[0, 2]"))
    from kvviz.traces import fingerprint

    for trace in (mine, other, mine, other):
        derived(fingerprint(trace), trace)
    assert calls == [fingerprint(mine), fingerprint(other)]
    uploads.release([Upload(TRACE, {("mine", ()): mine})])
    derived(fingerprint(mine), mine)
    derived(fingerprint(other), other)
    assert calls == [fingerprint(mine), fingerprint(other), fingerprint(mine)]


def test_reuse_distances_fit_the_int32_they_are_kept_in():
    from kvviz.traces import MAX_ACCESSES
    from ui.trace.reuse import reuse_of

    assert MAX_ACCESSES < 2**31
    trace = load_trace(TRACE + TRACE.replace(b'"timestamp": 0', b'"timestamp": 5'))
    counts, distances = reuse_of("two requests", trace)
    assert distances.dtype == np.int32 and distances.tolist() == [-1, -1, 1, 1]
    assert sorted(counts.tolist()) == [2, 2]


def test_a_cached_function_defined_in_a_page_is_refused():
    def page_function(key: str, _trace) -> str:
        return key

    page_function.__module__ = "__main__"  # how a page's functions are named
    with pytest.raises(ValueError, match="page_function is defined in a page"):
        uploads.released_with_upload(st.cache_data(page_function))


def test_large_or_compressed_uploads_run_alone_and_small_ones_do_not():
    assert not uploads.runs_alone(b"x" * (2 * MIB - 1))
    assert uploads.runs_alone(b"x" * (2 * MIB))
    assert uploads.runs_alone(b"\x1f\x8b\x08" + b"x" * 10)  # gzip
    assert uploads.runs_alone(b"\x28\xb5\x2f\xfd" + b"x" * 10)  # zstd


def test_waiting_text_says_how_many_are_before():
    assert uploads.waiting_text(1) == ("Another upload is being parsed; yours is next. This page goes on by itself.")
    assert "and 2 more are waiting before yours" in uploads.waiting_text(3)


def _in_turn(
    queue: ParseQueue, name: str, order: list, told: list, inside: threading.Event, go_on: threading.Event
) -> threading.Thread:
    """A thread that waits for its turn, records when it parses, and holds the turn until ``go_on``."""

    def run() -> None:
        with queue.turn(lambda ahead: told.append((name, ahead))):
            order.append(name)
            inside.set()
            assert go_on.wait(BOUND)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_large_parses_run_one_at_a_time_in_arrival_order():
    queue, order, told = ParseQueue(), [], []
    a_in, b_in, c_in, a_go, b_go, c_go = (threading.Event() for _ in range(6))
    a = _in_turn(queue, "a", order, told, a_in, a_go)
    assert a_in.wait(BOUND)
    b = _in_turn(queue, "b", order, told, b_in, b_go)
    _wait_for(lambda: ("b", 1) in told)  # b was told it is next, and waits
    c = _in_turn(queue, "c", order, told, c_in, c_go)
    _wait_for(lambda: ("c", 2) in told)
    assert order == ["a"] and not b_in.is_set() and not c_in.is_set()
    a_go.set()
    assert b_in.wait(BOUND)
    _wait_for(lambda: ("c", 1) in told)  # c moved up when a was done
    assert order == ["a", "b"] and not c_in.is_set()
    b_go.set()
    c_go.set()
    for thread in (a, b, c):
        thread.join(BOUND)
    assert order == ["a", "b", "c"]
    assert told == [("b", 1), ("c", 2), ("c", 1)]


def test_a_waiter_that_leaves_gives_its_place_up():
    """A viewer's run stopped while waiting (Streamlit raises in the next element call, here the
    notice that the queue moved): the one behind moves up, and no turn is lost."""
    queue, order, told = ParseQueue(), [], []
    a_in, a_go, b_in, b_go, c_in, c_go = (threading.Event() for _ in range(6))
    a = _in_turn(queue, "a", order, told, a_in, a_go)
    assert a_in.wait(BOUND)
    b = _in_turn(queue, "b", order, told, b_in, b_go)
    _wait_for(lambda: ("b", 1) in told)
    left = threading.Event()

    def leaving() -> None:
        def stopped(ahead: int) -> None:
            told.append(("x", ahead))
            if ahead < 2:
                raise RuntimeError("the run was stopped")

        try:
            with queue.turn(stopped):
                order.append("x")
        except RuntimeError:
            left.set()

    x = threading.Thread(target=leaving)
    x.start()
    _wait_for(lambda: ("x", 2) in told)
    c = _in_turn(queue, "c", order, told, c_in, c_go)
    _wait_for(lambda: ("c", 3) in told)
    a_go.set()  # b parses; x is told it is next, and leaves
    assert b_in.wait(BOUND) and left.wait(BOUND)
    _wait_for(lambda: ("c", 1) in told)
    b_go.set()
    assert c_in.wait(BOUND)
    c_go.set()
    for thread in (a, b, x, c):
        thread.join(BOUND)
    assert order == ["a", "b", "c"]
    assert [t for t in told if t[0] == "x"] == [("x", 2), ("x", 1)]


def _wait_for(condition) -> None:
    """Poll a condition another thread makes true (bounded; the assertion is the condition)."""
    done = threading.Event()
    for _ in range(BOUND * 100):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached")


# --- the page: the session keeps a digest, not the bytes


def test_the_session_keeps_the_uploads_digest_not_its_bytes():
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state[SESSION_KEY] = {
        "kind": "upload",
        "data": TRACE * 3,
        "name": "mine.jsonl",
        "options": [None, None, None, False, None],
    }
    at.run()
    at.query_params["trace_source"] = "Upload"
    at.switch_page("pages/trace.py").run()
    assert_clean(at)
    spec = at.session_state[SESSION_KEY]
    assert "data" not in spec and spec["name"] == "mine.jsonl"
    assert uploads.REGISTRY.upload(spec["digest"]).data == TRACE * 3
    assert at.metric[0].value == "3"


def test_an_upload_no_longer_held_says_so():
    at = open_page("home")
    at.session_state[SESSION_KEY] = {
        "kind": "upload",
        "digest": "0" * 32,
        "name": "mine.jsonl",
        "options": [None, None, None, False, None],
    }
    at.query_params["eviction_source"] = "Session trace"
    at.switch_page("pages/eviction.py").run()
    assert_clean(at)
    assert [shown(e.value) for e in at.error] == [
        "Your upload was kept only in your browser session, which has ended (the page was closed or offline for "
        f"more than {GRACE_S} seconds, the server restarted, or this link comes from another session): upload the "
        "file again."
    ]


@pytest.fixture(autouse=True)
def _empty_registry():
    yield
    uploads.release(
        uploads.REGISTRY.let_go("test session id", "trace")
        + uploads.REGISTRY.let_go("test session id", uploads.SESSION_SLOT)
    )
