"""The generator's bounds: every knob in ``LIMITS``, finite, and a trace's size known before drawing it."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import kvviz.traces.workload as W
from kvviz.cli import main
from kvviz.common.errors import InputError
from kvviz.traces.workload import LIMITS, MAX_BLOCK_IDS, WorkloadConfig, generate

FLOATS = [name for name, (lo, _) in LIMITS.items() if isinstance(getattr(WorkloadConfig(), name), float)]


def test_every_knob_has_a_range():
    assert sorted(LIMITS) == sorted(WorkloadConfig.__dataclass_fields__)
    WorkloadConfig().validate()


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_both_ends_of_each_range_are_accepted(name):
    lo, hi = LIMITS[name]
    small = WorkloadConfig(requests=100)  # so that no end alone asks for too many block ids
    for value in (lo, hi):
        replace(small, **{name: type(getattr(small, name))(value)}).validate()


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_just_outside_each_range_names_the_field(name):
    lo, hi = LIMITS[name]
    kind = type(getattr(WorkloadConfig(), name))
    step = 1 if kind is int else max(abs(lo), abs(hi), 1) * 1e-6
    for value in (lo - step, hi + step):
        with pytest.raises(InputError) as err:
            replace(WorkloadConfig(), **{name: kind(value)}).validate()
        assert err.value.field == name and f"{lo:,}..{hi:,}" in str(err.value)


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(name, value):
    with pytest.raises(InputError) as err:
        replace(WorkloadConfig(), **{name: value}).validate()
    assert err.value.field == name


@pytest.mark.parametrize(
    "knobs",
    [
        dict(requests=2000),
        dict(requests=2000, share_doc_qa=1, share_chat=0, share_oneshot=0, block_size=64),
        dict(requests=2000, share_doc_qa=0, share_chat=1, share_oneshot=0, chat_turns=8),
        dict(requests=2000, share_doc_qa=0, share_chat=0, share_oneshot=1, oneshot_tokens=30_000),
    ],
)
def test_the_estimate_of_block_ids_is_close_to_what_is_drawn(knobs):
    config = WorkloadConfig(**knobs)
    drawn = len(generate(config).blocks)
    assert 0.7 <= drawn / config.expected_block_ids() <= 1.3


def test_too_many_block_ids_are_refused_before_anything_is_drawn(monkeypatch):
    def never(*args):
        raise AssertionError("the generator started")

    monkeypatch.setattr(W, "_Generator", never)
    config = WorkloadConfig(requests=200_000, share_doc_qa=0, share_chat=0, oneshot_tokens=1_000_000)
    assert config.expected_block_ids() > MAX_BLOCK_IDS
    with pytest.raises(InputError, match="block ids expected") as err:
        generate(config)
    assert err.value.field == "requests"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--documents", "1000000000000", "argument --documents: must be in 1..100,000"),
        ("--rate", "inf", "argument --rate: must be a finite number in [0.001, 10000]"),
        ("--rate", "0", "argument --rate: must be in [0.001, 10000]"),
        ("--seed", "-1", "argument --seed: must be in 0..4,294,967,295"),
        ("--chat-turns", "nan", "argument --chat-turns: must be a finite number in [1, 100]"),
        ("--block-size", "1.5", "argument --block-size: expected a whole number"),
    ],
)
def test_generate_flags_use_the_same_ranges(capsys, flag, value, message):
    assert main(["generate", flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kvviz generate: " + message) and err.count("\n") == 1
