"""``python -m kvviz hitcurve TRACE``: hit ratio against cache capacity, as CSV on stdout."""

from __future__ import annotations

import argparse
import sys

from kvviz import args as A
from kvviz.trace import add_trace_arguments

NAME = "hitcurve"
HELP = ("Replay a trace's block accesses through eviction policies and print the hit curve as CSV "
        "(policy,capacity,hits,accesses,hit_ratio).")
DEFAULT_CAPACITIES = "1000,10000,30000,50000,100000,inf"   # Mooncake v3 Table 1's columns
BLOCK_POLICIES = "lru,fifo,lfu,length_aware,sieve,arc,s3fifo,belady"
PREFIX_POLICIES = "lru,lfu,fifo,mru,filo,slru"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("--policies", default=BLOCK_POLICIES,
                        help="comma-separated: lru, fifo, lfu, length_aware, sieve, arc, s3fifo, belady "
                             "(default: all)")
    parser.add_argument("--capacities", default=DEFAULT_CAPACITIES,
                        help="comma-separated capacities in blocks, e.g. 1000,10k,inf "
                             f"(default: {DEFAULT_CAPACITIES}, Mooncake v3 Table 1)")
    parser.add_argument("--prefix", action="store_true",
                        help="count a hit only while every earlier block of its request hit too")
    parser.add_argument("--cache-block", type=A.count, default=1, metavar="FACTOR",
                        help="cache blocks of FACTOR trace blocks each (chained ids; default: 1)")
    parser.add_argument("--cache", choices=("block", "prefix"), default="block",
                        help="block: every block is an entry (libCacheSim-style); prefix: SGLang's RadixCache, "
                             "evicting leaves of the prefix tree (policies lru, lfu, fifo, mru, filo, slru; "
                             "default all six)")
    parser.add_argument("--sample", default="auto",
                        help="auto (a SHARDS sample above 2,000,000 block accesses), exact, or a rate such as "
                             "0.01; LRU stays exact (default: auto; see docs/eviction.md)")
    parser.add_argument("--model", help="a model preset (kvsize --list): add capacity_gib, the KV of that many blocks")


def run(args: argparse.Namespace) -> int:
    # The kernels are called natively, so numba's compiler is set up only if something needs it
    # (kvviz.policies.native: most of a short run's start-up).
    import kvviz.eviction  # noqa: F401 -- its policies' kernels are the entries to link
    from kvviz.policies.native import native_calls

    with native_calls():
        return _curve(args)


def _curve(args: argparse.Namespace) -> int:
    # Imported here, and the radix-cache replay, the model presets, the sampler and pandas only
    # when asked for: an exact block-cache curve is a short run whose time is mostly start-up
    # (docs/eviction.md, Speed), so it goes through ``counts``, which never builds a DataFrame.
    from kvviz.eviction import (coarsen, counts, counts_csv, curve_csv, hit_curve, parse_capacities,
                                parse_policies, sampling_rate)
    from kvviz.trace import trace_from_args

    prefix = args.cache == "prefix"
    if prefix or args.model:
        from kvviz import prefix_cache
    policies = (prefix_cache.parse_policies(PREFIX_POLICIES if args.policies == BLOCK_POLICIES else args.policies)
                if prefix else parse_policies(args.policies))
    spec = None
    if args.model:
        from kvviz.hardware import model

        spec = model(args.model)
    capacities = parse_capacities(args.capacities)
    trace = coarsen(trace_from_args(args), args.cache_block)
    if not prefix and spec is None and sampling_rate(args.sample, len(trace.blocks), args.prefix) is None:
        sys.stdout.write(counts_csv(counts(trace, policies, capacities), args.prefix))
        return 0
    curve = (prefix_cache.sweep(trace, policies, capacities) if prefix
             else hit_curve(trace, policies, capacities, prefix=args.prefix, sample=args.sample))
    if "rate" in curve:
        _say_sampled(curve)
        curve = curve.drop(columns=["rate", "represented", "error_estimate"])
    sys.stdout.write(curve_csv(curve) if spec is None
                     else prefix_cache.curve_csv_gib(curve, prefix_cache.block_bytes(spec, trace.block_size)))
    return 0


def _say_sampled(curve) -> None:
    """The rate and each policy's measured error estimate on stderr, flagging the unreliable ones."""
    from kvviz.shards import RELIABLE_ERROR

    rate = curve["rate"].iloc[0]
    print(f"kvviz hitcurve: sampled at rate {rate:.4g} (SHARDS; LRU exact); error estimate per policy "
          "(rate R against 2R, docs/eviction.md):", file=sys.stderr)
    for policy, error in curve.groupby("policy", sort=False)["error_estimate"].first().items():
        verdict = "" if error <= RELIABLE_ERROR else f"  not reliable at this rate: raise --sample above {rate:.4g}"
        print(f"  {policy}: {error:.3f}{verdict}", file=sys.stderr)
