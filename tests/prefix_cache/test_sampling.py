"""Sampled prefix curves: whole requests kept by where they leave the shared trunk; rate 1 is exact."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kvviz.common.errors import InputError
from kvviz.eviction.grid import INFINITE
from kvviz.eviction.replay import sweep as block_sweep
from kvviz.eviction.shards import REPLICAS, SPREAD_Z
from kvviz.prefix_cache import sweep
from kvviz.prefix_cache.replay import hits_table
from kvviz.prefix_cache.sampling import TRUNK_SHARE, estimate, sample_requests, sampled_sweep
from kvviz.traces import Trace
from kvviz.traces.workload import WorkloadConfig, generate

TRUNK = 2  # blocks every request starts with


@pytest.fixture(scope="module")
def trace() -> Trace:
    """1,500 synthetic requests, each led by the same two blocks (a shared system prompt)."""
    base = generate(WorkloadConfig(requests=1500, seed=9))
    lengths = np.diff(base.offsets) + TRUNK
    prompts = [np.concatenate([[0, 1], ids + TRUNK]) for ids in np.split(base.blocks, base.offsets[1:-1])]
    frame = base.requests.assign(n_blocks=lengths)
    return Trace(frame, np.concatenate(prompts), np.concatenate([[0], np.cumsum(lengths)]), base.block_size)


def test_rate_one_is_the_exact_curve(trace):
    caps = [200, 2000, INFINITE]
    got = sampled_sweep(trace, ["lru", "fifo"], caps, 1.0, ["lru"])
    exact = sweep(trace, ["lru", "fifo"], caps)
    assert (got.prefix["hits"].to_numpy() == exact["hits"].to_numpy()).all()
    assert (got.prefix["error_estimate"] == 0).all()
    assert (got.block["hits"].to_numpy() == block_sweep(trace, ["lru"], caps)["hits"].to_numpy()).all()


def _paths(trace: Trace) -> list[tuple[tuple[int, ...], ...]]:
    """Each request's prefixes (its nodes), in plain Python."""
    return [
        tuple(tuple(ids[: k + 1]) for k in range(len(ids)))
        for ids in map(tuple, np.split(trace.blocks, trace.offsets[1:-1]))
    ]


def _trunk(paths: list[tuple[tuple[int, ...], ...]], rate: float) -> set[tuple[int, ...]]:
    """The nodes on more than ``TRUNK_SHARE × rate`` of the requests, counted in plain Python."""
    on: dict[tuple[int, ...], int] = {}
    for path in paths:
        for node in path:
            on[node] = on.get(node, 0) + 1
    return {node for node, n in on.items() if n > TRUNK_SHARE * rate * len(paths)}


def test_a_shared_trunk_splits_into_groups_kept_whole(trace):
    """Every request starts with blocks 0 and 1, so keying on the first block keeps all or none;
    keyed on the first node off the trunk, a 0.2 sample keeps about a fifth, and two requests
    that share a node off the trunk are kept or dropped together."""
    rate = 0.2
    s = sample_requests(trace, rate)
    paths = _paths(trace)
    trunk = _trunk(paths, rate)
    assert s.trunk == len(trunk) and {(0,), (0, 1)} <= trunk
    assert 0.1 < s.requests_kept / s.requests < 0.3
    owner: dict[tuple[int, ...], bool] = {}
    for path, kept in zip(paths, s.kept):
        for node in path:
            if node not in trunk:
                assert owner.setdefault(node, bool(kept)) == bool(kept), node
    lengths = np.diff(trace.offsets)
    assert s.replay.accesses == lengths[s.kept].sum() and s.trunk_kept == len(
        {n for p, k in zip(paths, s.kept) if k for n in p} & trunk
    )


def test_the_infinite_cache_counts_trunk_misses_once_and_scales_the_rest(trace):
    """At an infinite capacity every miss is a node's first access: the trunk's are the trace's own
    (one per trunk node), the rest are the sample's first accesses off the trunk, scaled by the
    trace's accesses off the trunk over the sample's."""
    rate = 0.2
    s = sample_requests(trace, rate)
    paths = _paths(trace)
    trunk = _trunk(paths, rate)
    off_trunk = sum(1 for p in paths for n in p if n not in trunk)
    kept = [p for p, k in zip(paths, s.kept) if k]
    kept_off = [n for p in kept for n in p if n not in trunk]
    misses = len(trunk) + len(set(kept_off)) * off_trunk / len(kept_off)
    got = sampled_sweep(trace, ["lru"], [5000, INFINITE], rate).prefix
    assert got["hit_ratio"].iloc[-1] == pytest.approx(1 - misses / len(trace.blocks), abs=1e-12)


def test_the_error_estimate_is_the_spread_of_disjoint_request_samples(trace):
    rate, caps = 0.2, [2000, INFINITE]
    got = sampled_sweep(trace, ["lru"], caps, rate).prefix
    ratios = []
    for band in range(REPLICAS):
        s = sample_requests(trace, rate, band)
        assert not (s.kept & sample_requests(trace, rate, (band + 1) % REPLICAS).kept).any()  # disjoint
        ratios.append(_lru_estimate(s, caps))
    assert got["error_estimate"].to_numpy() == pytest.approx(SPREAD_Z * np.std(ratios, axis=0, ddof=1), abs=1e-12)


def _lru_estimate(sample, caps) -> np.ndarray:
    """One sample's LRU estimate at ``caps``, as ``sampled_sweep`` makes it."""
    return estimate(sample, hits_table(sample.replay, "lru", [sample.sampled_capacity(c) for c in caps]))


def test_small_capacities_are_dropped_and_tiny_samples_refused(trace):
    got = sampled_sweep(trace, ["lru"], [10, 1000, 5000, INFINITE], 0.2)
    assert 10.0 not in set(got.prefix["capacity"]) and INFINITE in set(got.prefix["capacity"])
    with pytest.raises(InputError, match="raise the rate"):
        sampled_sweep(trace, ["lru"], [10, 20], 0.2)


@pytest.mark.parametrize("rate", [0.0, math.nan, 1.5])
def test_a_rate_outside_0_1_is_refused_naming_the_option(trace, rate):
    with pytest.raises(InputError, match=r"^field 'sample': sampling rate must be in \(0, 1\], got"):
        sampled_sweep(trace, ["lru"], [1000], rate)


def test_the_command_line_samples_the_prefix_cache_and_says_so(capsys):
    from kvviz.cli import main

    argv = ["hitcurve", "assets/example_trace.jsonl", "--cache", "prefix", "--policies", "lru"]
    assert main([*argv, "--capacities", "5000,inf", "--sample", "0.3"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "policy,capacity,hits,accesses,hit_ratio,represented,rate,error_estimate"
    assert captured.err.startswith("kvviz hitcurve: prefix cache sampled at rate 0.3: ")
    assert pd.Series(captured.out.splitlines()[1:]).str.startswith("lru,").all()
    assert main([*argv, "--capacities", "100", "--sample", "0.01"]) == 2
    assert capsys.readouterr().err.startswith("kvviz hitcurve: field 'sample': no capacity leaves at least 100 blocks")
    for bad in ("0", "nan", "1.5"):
        assert main([*argv, "--sample", bad]) == 2
        err = capsys.readouterr().err
        assert err == f"kvviz hitcurve: field 'sample': sampling rate {bad} must be in [0.0001, 1]\n"
