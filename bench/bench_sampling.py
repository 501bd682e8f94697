"""Benchmark: sampled curves on a trace whose hottest block is in every request.

    .venv/bin/python -m bench.bench_sampling                 # 4 copies x 15,000 requests, ~1.09M accesses
    .venv/bin/python -m bench.bench_sampling --copies 2      # smaller

The trace: ``--copies`` synthetic traces (seeds 0, 1, …; ``kvviz.traces.workload.generate``, ids
shifted so copies share no block) interleaved by arrival time, and one block put in front of every
request, as a system prompt every request shares (block 0 of Mooncake's conversation trace is in
every request, 4.2% of its accesses; here 5.5%). Its hash is above 10%, so the 1% and 10%
samples leave it out.

Block caches: every policy's exact curve, then at 1% and 10% plain SHARDS (sampled hits over
sampled accesses, no correction), SHARDS-adj, and SHARDS-adj with the LRU correction (what
``sampled_curve`` returns), each as its largest |sampled − exact| over the capacities the sample
represents; then, per policy, the capacities the error bound flags and whether the bound held at
every capacity (bound ≥ actual error). The done-when check: at 1% every represented capacity is
within 0.01 of exact or flagged.

Prefix cache: the exact curve of every SGLang policy, then the request sample
(``kvviz.prefix_cache.sampling``) at 1% and 10%, its kept share and its largest error.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from bench.timing import timed
from kvviz import prefix_cache
from kvviz.eviction import replay as eviction
from kvviz.eviction.grid import INFINITE, POLICIES, RELIABLE_ERROR
from kvviz.eviction.shards import block_hashes, sample_trace, sampled_curve
from kvviz.prefix_cache.sampling import sampled_sweep
from kvviz.traces import Trace
from kvviz.traces.workload import WorkloadConfig, generate

RATES = (0.01, 0.1)
CAPACITIES = (10_000, 20_000, 50_000, 100_000, 200_000, INFINITE)  # x 1% = 100 .. 2,000 sampled blocks
PREFIX_POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "slru")


def shared_trunk_trace(copies: int, requests: int, trunk: int = 1) -> Trace:
    """``copies`` synthetic traces of ``requests`` requests interleaved by arrival, each request
    led by the same ``trunk`` blocks (ids ``0 .. trunk-1``)."""
    pieces = [generate(WorkloadConfig(requests=requests, seed=s)) for s in range(copies)]
    id_step = max(int(p.blocks.max()) for p in pieces) + 1
    heads = np.arange(trunk, dtype=np.int64)
    prompts = [
        np.concatenate([heads, ids + trunk + k * id_step])
        for k, p in enumerate(pieces)
        for ids in np.split(p.blocks.astype(np.int64), p.offsets[1:-1])
    ]
    frame = pd.concat([p.requests for p in pieces], ignore_index=True)
    frame["input_length"] += trunk * pieces[0].block_size
    order = np.argsort(frame["timestamp"].to_numpy(), kind="stable")
    frame = frame.iloc[order].reset_index(drop=True)
    counts = np.array([len(prompts[i]) for i in order])
    frame["n_blocks"] = counts
    offsets = np.concatenate([[0], np.cumsum(counts)])
    blocks = np.concatenate([prompts[i] for i in order])
    return Trace(frame, blocks, offsets, pieces[0].block_size, name=f"{copies} copies, shared trunk")


def plain_shards(trace: Trace, rate: float) -> pd.Series:
    """Plain SHARDS: the sample's own hit ratio (hits over sampled accesses), no correction."""
    sample = sample_trace(trace, rate)
    scaled = [sample.sampled_capacity(c) for c in CAPACITIES]
    swept = eviction.sweep(sample.replay, list(POLICIES), scaled)
    swept["capacity"] = np.tile(np.asarray(CAPACITIES, dtype=float), len(POLICIES))
    return swept.set_index(["policy", "capacity"])["hits"] / swept.set_index(["policy", "capacity"])["accesses"]


def block_errors(trace: Trace, exact: pd.Series) -> None:
    """Per rate: each policy's largest error (plain, adj, adj + LRU) and the bound's verdict."""
    for rate in RATES:
        adj = timed(
            f"SHARDS-adj at {rate:g}", lambda: sampled_curve(trace, list(POLICIES), CAPACITIES, rate, exact_lru=False)
        )
        full = timed(f"SHARDS-adj + LRU at {rate:g}", lambda: sampled_curve(trace, list(POLICIES), CAPACITIES, rate))
        plain = plain_shards(trace, rate)
        rows = full.curve.set_index(["policy", "capacity"])
        shown = rows["represented"] & np.isfinite(rows.index.get_level_values("capacity"))
        actual = (rows["hit_ratio"] - exact.loc[rows.index]).abs()
        print(
            f"\nrate {rate:g}: {full.sampled_accesses:,} of {full.accesses:,} accesses sampled "
            f"({full.sampled_accesses / full.accesses / rate:.2f} of N x R)"
        )
        print(
            "policy        plain    adj  adj+LRU  bound held  flagged capacities (bound)          suggested rate  done"
        )
        adj_rows = adj.curve.set_index(["policy", "capacity"])["hit_ratio"]
        for policy in POLICIES:
            mine = shown & (rows.index.get_level_values("policy") == policy)
            if not mine.any():
                print(f"{policy:12s}  (represents no finite capacity at this rate)")
                continue
            index = rows.index[mine]
            flagged = rows.loc[index][rows.loc[index, "error_estimate"] > RELIABLE_ERROR]
            flag = next((f for f in full.flags if f.policy == policy), None)
            done = all(actual[i] <= RELIABLE_ERROR or rows.loc[i, "error_estimate"] > RELIABLE_ERROR for i in index)
            listed = ", ".join(f"{int(c / 1000)}k ({b:.3f})" for (_, c), b in flagged["error_estimate"].items())
            print(
                f"{policy:12s} {(plain[index] - exact[index]).abs().max():6.3f} "
                f"{(adj_rows[index] - exact[index]).abs().max():6.3f} {actual[index].max():8.3f}  "
                f"{str(bool((rows.loc[index, 'error_estimate'] >= actual[index]).all())):10s}  {listed or '-':34s}  "
                f"{flag.suggested_rate if flag else '-'!s:14s}  {'yes' if done else 'NO'}"
            )


def prefix_errors(trace: Trace) -> None:
    """The prefix-cache request sample against the exact curve, per rate."""
    exact = timed("prefix cache, exact, 6 policies", lambda: prefix_cache.sweep(trace, PREFIX_POLICIES, CAPACITIES))
    exact = exact.set_index(["policy", "capacity"])["hit_ratio"]
    for rate in RATES:
        out = timed(
            f"prefix cache, sampled at {rate:g}", lambda: sampled_sweep(trace, PREFIX_POLICIES, CAPACITIES, rate)
        )
        got = out.prefix.set_index(["policy", "capacity"])["hit_ratio"]
        error = (got - exact.loc[got.index]).abs()
        print(
            f"rate {rate:g}: {out.sample.requests_kept:,} of {out.sample.requests:,} requests kept "
            f"({out.sample.rate:.4f} of the accesses), capacities {', '.join(f'{c:g}' for c in out.capacities)}"
        )
        bound = out.prefix.set_index(["policy", "capacity"])["error_estimate"]
        for policy, rows in error.groupby(level="policy", sort=False):
            held = int((bound.loc[rows.index] >= rows).sum())
            print(
                f"  {policy:5s} largest |sampled - exact| {rows.max():.4f}, error estimate "
                f"{bound.loc[rows.index].min():.3f}-{bound.loc[rows.index].max():.3f}, at or above the error at "
                f"{held} of {len(rows)} capacities"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--requests", type=int, default=15_000, help="requests per copy")
    parser.add_argument("--only", choices=("block", "prefix"), help="run one half")
    args = parser.parse_args()
    trace = timed("build the trace", lambda: shared_trunk_trace(args.copies, args.requests))
    hottest = np.bincount(trace.blocks).max() / len(trace.blocks)
    print(
        f"trace: {trace.n_requests:,} requests, {len(trace.blocks):,} accesses, "
        f"{len(np.unique(trace.blocks)):,} distinct; block 0 is {hottest:.1%} of the accesses and hashes at "
        f"{float(block_hashes(np.zeros(1, np.int64))[0]) / 2**64:.3f} of the hash space"
    )
    if args.only != "prefix":
        exact = timed("exact curve, 8 policies", lambda: eviction.hit_curve(trace, list(POLICIES), CAPACITIES))
        block_errors(trace, exact.set_index(["policy", "capacity"])["hit_ratio"])
    if args.only != "block":
        prefix_errors(trace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
