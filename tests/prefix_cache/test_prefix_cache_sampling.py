"""Sampled prefix curves: whole requests kept by their first block's hash; rate 1 is the exact curve."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.common.errors import InputError
from kvviz.eviction.grid import INFINITE
from kvviz.eviction.replay import sweep as block_sweep
from kvviz.prefix_cache import prepare, sweep
from kvviz.prefix_cache.sampling import sample_requests, sampled_sweep
from kvviz.traces.workload import WorkloadConfig, generate


@pytest.fixture(scope="module")
def trace():
    return generate(WorkloadConfig(requests=1500, seed=9))


def test_rate_one_is_the_exact_curve(trace):
    caps = [200, 2000, INFINITE]
    got = sampled_sweep(trace, ["lru", "fifo"], caps, 1.0, ["lru"])
    exact = sweep(trace, ["lru", "fifo"], caps)
    assert (got.prefix["hits"].to_numpy() == exact["hits"].to_numpy()).all()
    assert (got.block["hits"].to_numpy() == block_sweep(trace, ["lru"], caps)["hits"].to_numpy()).all()


def test_requests_are_kept_whole_and_together_with_their_first_block(trace):
    s = sample_requests(trace, 0.3)
    replay = prepare(trace)
    firsts = replay.nodes[replay.offsets[:-1]]
    kept_blocks = np.diff(s.replay.offsets)
    assert 0 < s.requests_kept < s.requests
    assert kept_blocks.sum() == s.replay.accesses and s.rate == s.replay.accesses / replay.accesses
    kept_first = set(firsts[s.kept].tolist())
    assert all((f in kept_first) == k for f, k in zip(firsts.tolist(), s.kept))  # all or none per first block
    assert kept_blocks.sum() == np.diff(replay.offsets)[s.kept].sum()
    assert (s.replay.parent < s.replay.n_nodes).all() and (s.replay.parent[s.replay.depth == 0] == -1).all()


def test_small_capacities_are_dropped_and_tiny_samples_refused(trace):
    got = sampled_sweep(trace, ["lru"], [10, 1000, 5000, INFINITE], 0.2)
    assert 10.0 not in set(got.prefix["capacity"]) and INFINITE in set(got.prefix["capacity"])
    with pytest.raises(InputError, match="raise the rate"):
        sampled_sweep(trace, ["lru"], [10, 20], 0.2)
