"""The radix tree's own event log (kvviz.radix.events): exact events for the preset scripts, and their words."""

from __future__ import annotations

from kvviz.radix.events import Event, narrate, quote
from kvviz.radix.events import EventKind as K
from kvviz.radix.presets import PRESETS
from kvviz.radix.radix_cache import RadixCache
from kvviz.radix.replay import ReplayConfig, eviction_steps, replay


def kinds(rep, step: int) -> list[tuple]:
    return [(e.kind, e.tokens) for e in rep.steps["events"].iloc[step]]


def test_raw_operations_record_exactly_what_happened():
    rep = replay(PRESETS["ops"].script(), ReplayConfig(**PRESETS["ops"].suggested))
    assert [kinds(rep, k) for k in range(rep.n_steps)] == [
        [],
        [(K.BACKUP, 5), (K.INSERT, 0)],  # insert 1..5: a new leaf, copied to CPU (write-thru)
        [(K.SPLIT, 3), (K.BACKUP, 1), (K.INSERT, 3)],  # insert 1 2 3 9 splits 1..5 after 3
        [(K.SPLIT, 1), (K.MATCH, 4)],  # match 1 2 3 4 7: a lookup splits too
        [(K.SPLIT, 2), (K.MATCH, 2)],
        [(K.BACKUP, 2), (K.INSERT, 0)],
        [(K.MATCH, 4)],
        [(K.EVICT_SHORT, 0)],  # every leaf is locked until the copies are acked
        [(K.EVICT_SHORT, 0)],
        [(K.MATCH, 3)],
        [(K.EVICT_SHORT, 0)],
        [(K.MATCH, 3)],
        [],  # ack: locks released, nothing moves
        [
            (K.TO_HOST, 1),
            (K.TO_HOST, 1),
            (K.TO_HOST, 2),
            (K.TO_HOST, 1),
            (K.TO_HOST, 1),
            (K.TO_HOST, 2),
            (K.EVICT_SHORT, 8),
        ],
        [(K.MATCH, 0)],
    ]
    short = rep.steps["events"].iloc[7][0]
    assert (short.of, short.reason) == (2, "every leaf is locked (a running request or a pending copy holds it)")
    assert rep.steps["events"].iloc[13][-1].reason == "nothing is left on the GPU to evict"
    assert [e.cascade for e in rep.steps["events"].iloc[13][:6]] == [False, True, False, False, True, True]


def test_the_sglang_example_evicts_by_lru_and_names_the_request():
    preset = PRESETS["sglang9"]
    rep = replay(preset.script(), ReplayConfig(**{**ReplayConfig().__dict__, **preset.suggested}))
    assert eviction_steps(rep) == [4, 7, 8]
    words = dict(rep.vocab)
    step7 = [e for e in rep.steps["events"].iloc[7] if e.kind is K.EVICT]
    assert [(e.who, quote(e.key, words), e.cascade) for e in step7] == [
        ("R9 chat1", "'Assistant : Roses … I have .'", False),
        ("R9 chat1", "'User : Write a poem .'", True),
        ("R9 chat1", "'Assistant : I … with you .'", True),
        ("R9 chat1", "'What can you … team today ?'", True),
    ]
    split = next(e for e in rep.steps["events"].iloc[3] if e.kind is K.SPLIT)
    assert (split.who, split.at, len(split.key)) == ("R3 chat2", 8, 10)


def test_narration_quotes_the_words_and_says_why():
    vocab = {1: "You", 2: "are", 3: "a", 4: "helpful", 5: "assistant", 6: ".", 7: "User", 8: ":", 9: "Hi"}
    events = [
        Event(K.SPLIT, 5, 8, key=tuple(range(1, 10)), at=8, who="R3"),
        Event(K.MATCH, 5, 18, key=(), of=20, host=2),
        Event(K.EVICT, 4, 4, key=(7, 8, 9), cascade=False),
        Event(K.EVICT_SHORT, 0, 0, of=2, reason="every leaf is locked (a running request or a pending copy holds it)"),
    ]
    assert narrate(events, vocab, "lru") == [
        "**R3**: split 'You are a … User : Hi' at token 8 (node 5 is the shared part)",
        "matched 18 of 20 tokens on the GPU, 2 more on the CPU",
        "evicted leaf 'User : Hi' (4 tokens, least recently used)",
        "asked to free 2 tokens, freed 0: every leaf is locked (a running request or a pending copy holds it)",
    ]
    assert narrate([Event(K.EVICT, 1, 60, key=tuple(range(1001, 1061)))]) == [
        "evicted leaf '1001..1060' (60 tokens, least recently used)"
    ]


def test_take_events_hands_over_and_clears():
    c = RadixCache(capacity=8)
    c.insert([1, 2, 3])
    c.evict(1)
    assert [e.kind for e in c.take_events()] == [K.INSERT, K.EVICT]
    assert c.take_events() == [] and c.events == []
