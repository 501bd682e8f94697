"""``python -m kvviz hitcurve TRACE``: hit ratio against cache capacity, as CSV on stdout."""

from __future__ import annotations

import argparse
import sys

from kvviz.trace import DEFAULT_BLOCK_SIZE

NAME = "hitcurve"
HELP = ("Replay a trace's block accesses through eviction policies and print the hit curve as CSV "
        "(policy,capacity,hits,accesses,hit_ratio).")
DEFAULT_CAPACITIES = "1000,10000,30000,50000,100000,inf"   # Mooncake v3 Table 1's columns


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="path of the trace (Mooncake JSONL, or CSV with hash_ids)")
    parser.add_argument("--policies", default="lru,fifo,lfu,length_aware,sieve,arc,s3fifo,belady",
                        help="comma-separated: lru, fifo, lfu, length_aware, sieve, arc, s3fifo, belady "
                             "(default: all)")
    parser.add_argument("--capacities", default=DEFAULT_CAPACITIES,
                        help="comma-separated capacities in blocks, e.g. 1000,10k,inf "
                             f"(default: {DEFAULT_CAPACITIES}, Mooncake v3 Table 1)")
    parser.add_argument("--prefix", action="store_true",
                        help="count a hit only while every earlier block of its request hit too")
    parser.add_argument("--block-size", type=int, default=DEFAULT_BLOCK_SIZE,
                        help="tokens per hash id in the file (default: %(default)s)")
    parser.add_argument("--cache-block", type=int, default=1, metavar="FACTOR",
                        help="cache blocks of FACTOR trace blocks each (chained ids; default: 1)")


def run(args: argparse.Namespace) -> int:
    from kvviz.eviction import coarsen, curve_csv, hit_curve, parse_capacities, parse_policies
    from kvviz.trace import load_trace

    policies = parse_policies(args.policies)
    capacities = parse_capacities(args.capacities)
    trace = coarsen(load_trace(args.trace, args.block_size), args.cache_block)
    sys.stdout.write(curve_csv(hit_curve(trace, policies, capacities, prefix=args.prefix)))
    return 0
