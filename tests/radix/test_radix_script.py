"""Request scripts: the text and JSON forms, parsed, and what a bad script is told."""

from __future__ import annotations

import json

import pytest

from kvviz.common.errors import InputError
from kvviz.radix.script import parse_json, parse_text


def test_step_titles_say_who_arrives_in_english():
    s = parse_text("sys hi => hello\n& sys bye\ndoc: 1..5\nevict 3\n")
    assert [op.describe(s.words) for op in s.ops] == ["R1, R2 arrive", "R3 doc arrives", "evict 3 tokens from the GPU"]


def test_text_form_words_runs_waves_and_raw_ops():
    s = parse_text("sys hi => hello\n& sys bye\n# comment\ndoc: 1..5 9\nevict 3\nack\nmatch sys hi\n")
    assert [op.kind for op in s.ops] == ["requests", "requests", "evict", "ack", "match"]
    first = s.ops[0].requests
    assert [r.rid for r in first] == ["R1", "R2"]
    assert first[0].tokens[0] == first[1].tokens[0]  # the same word, the same id
    assert s.words[first[0].output[0]] == "hello"
    assert s.ops[1].requests[0].tokens == (1, 2, 3, 4, 5, 9) and s.ops[1].requests[0].rid == "R3 doc"
    assert s.ops[2].n == 3 and s.ops[4].tokens == first[0].tokens


@pytest.mark.parametrize(
    "text,where",
    [
        ("", "no steps"),
        ("evict x", "line 1"),
        ("a b\n5..2", "line 2"),
        ("=> only output", "line 1"),
        ("ack now", "line 1"),
        ("insert", "line 1"),
        ("a " * 10 + f"\n1..{10**6}", "line 2"),
    ],
)
def test_bad_text_says_where(text, where):
    with pytest.raises(InputError, match=where):
        parse_text(text)


def test_json_form():
    doc = {
        "name": "demo",
        "steps": [
            {"tokens": [1, 2, 3], "output": [4]},
            {"requests": [{"text": "a b"}, {"tokens": [1, 2], "extra_key": "lora"}]},
            {"op": "evict", "n": 2},
            {"op": "match", "tokens": [1, 2]},
        ],
    }
    s = parse_json(json.dumps(doc))
    assert s.name == "demo" and [op.kind for op in s.ops] == ["requests", "requests", "evict", "match"]
    assert s.ops[1].requests[1].extra_key == "lora" and s.n_requests == 3


@pytest.mark.parametrize(
    "doc,field",
    [
        ("not json", "script"),
        ('{"steps": 3}', "steps"),
        ('[{"tokens": [1, "x"]}]', "tokens"),
        ('[{"op": "evict", "n": -1}]', "n"),
        ('[{"op": "fly"}]', "op"),
        ('[{"tokens": []}]', "tokens"),
        ("[]", "script"),
    ],
)
def test_bad_json(doc, field):
    with pytest.raises(InputError) as err:
        parse_json(doc)
    assert err.value.field == field
