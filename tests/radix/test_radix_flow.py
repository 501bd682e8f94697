"""SGLang's serving flow over the radix tree: a prompt inserted after prefill and at finish (one insert when
the request finishes at its first token), in the scheduler, a trace's replay and the step-through's words."""

from __future__ import annotations

import numpy as np

from kvviz.radix.inflight import StrataRadixCache
from kvviz.radix.narration import round_lines
from kvviz.radix.request import Request
from kvviz.radix.scheduler import Scheduler, SchedulerConfig
from kvviz.radix.trace_replay import trace_rounds
from kvviz.traces import from_records


def _served(*requests: Request, policy: str = "lru", rule: str = "upstream") -> tuple[Scheduler, dict]:
    """The requests admitted in one round and completed in the next; the second round's log."""
    sched = Scheduler(StrataRadixCache(1, policy, 100, rule), SchedulerConfig(deferral=False))
    sched.round(requests)
    return sched, sched.round([])


def _count(sched: Scheduler, first: int) -> int:
    return sched.cache.root.children[first].hit_count


def test_two_inserts_unless_the_output_is_one_token_and_each_request_counts_once():
    """SGLang 0.5.23 (``RadixCache._insert_helper`` with ``cache_inserted_len``): the insert at finish
    counts only the output's node, past the prompt the request inserted after prefill."""
    sched, _ = _served(Request("R1", (1, 2, 3), (9, 9)), Request("R2", (4, 5)), Request("R3", (6, 7), (8,)))
    assert _count(sched, 1) == 1  # after prefill; the insert at finish does not count it again
    assert sched.cache.root.children[1].children[9].hit_count == 1  # the output, counted at finish
    assert _count(sched, 4) == 1  # no output given: as a request that decodes
    assert _count(sched, 6) == 1  # finished at its first token: only at finish
    sched, _ = _served(Request("R4", (6, 7), generates=1), Request("R5", (1, 2), generates=40))
    assert (_count(sched, 6), _count(sched, 1)) == (1, 1)


def test_a_trace_request_generates_its_output_length():
    trace = from_records([0, 1, 2], [8, 8, 8], [1, 0, 57], [[1], [2], [3]], block_size=8)
    rounds = trace_rounds(trace, 3)
    assert [r.generates for r in rounds[0]] == [1, 0, 57]
    assert [r.inserted_twice for r in rounds[0]] == [False, True, True]


def test_the_step_says_how_the_counts_moved_and_why():
    sched, _ = _served(Request("R1", (1, 2, 3), (9, 9)))
    sched.round([Request("R2", (1, 2, 3, 4), (5, 6)), Request("R3", (1, 2, 7), generates=1)])
    said = round_lines(sched.round([]), sched)
    assert said["R2"] == [
        "**R2** finished: its prompt went into the tree after prefill, so that others could share it, and again "
        "with its output at finish (the inserts above); the first insert added 1 to the hit count of every node "
        "on its path; the second counted only what lay past the prompt, since a request counts each node once; "
        "the deepest node of the prefix it found cached now has hit count 2"
    ]
    assert said["R3"][0].startswith("**R3** finished at its first token, so its prompt went into the tree once")
    assert "the insert added 1 to the hit count of every node on its path" in said["R3"][0]
    slru, log = _served(Request("R1", (1, 2)), policy="slru")
    assert "(LFU and SLRU rank leaves by it)" in round_lines(log, slru)["R1"][0]
    legacy, log = _served(Request("R1", (1, 2)), rule="legacy")
    assert round_lines(log, legacy)["R1"][0].endswith("did not move (inserts before SGLang's PR #18843 did not count)")


def test_counts_match_the_compiled_replay_flow():
    """The scheduler's counts equal the prefix replay's rule: a shared prompt served by two requests reaches 2."""
    sched, _ = _served(Request("R1", (1, 2, 3), (9, 9)))
    sched.round([Request("R2", (1, 2, 3, 4), (9, 9))])
    sched.round([])
    node = sched.cache.root.children[1]
    assert np.array([node.hit_count]).tolist() == [2]
