"""``python -m kvviz cluster TRACE --instances N --router R --blocks C``: a trace served by N instances, each
with its own radix cache, behind each router asked for; one CSV row per router and the shared-cache reference."""

from __future__ import annotations

import argparse
import sys

from kvviz.common import args as A
from kvviz.common import budget
from kvviz.traces.cli import add_trace_arguments

NAME = "cluster"
HELP = (
    "Serve a trace with N instances, each with its own SGLang radix cache of C blocks, behind routers "
    "(round-robin, least-load, prefix-hash, cache-aware, kv-aware, conductor), and print per router the "
    "hits, TTFT percentiles, load imbalance and cost as CSV, with one shared cache of N × C blocks as the reference."
)
ROUTER_NAMES = "round-robin,least-load,prefix-hash,cache-aware,kv-aware,conductor"
MAX_INSTANCES = 63  # kvviz.cluster.routers.MAX_INSTANCES, without importing numba to build the parser


def instance_counts(text: str) -> list[int]:
    """``4`` or ``2,4,8``: each a whole number in 1..MAX_INSTANCES, duplicates dropped, order kept."""
    one = A.bounded_int(1, MAX_INSTANCES)
    out: list[int] = []
    for part in text.split(","):
        n = one(part.strip())
        if n not in out:
            out.append(n)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument(
        "--instances",
        type=instance_counts,
        default=[4],
        metavar="N[,N...]",
        help=f"serving instances, 1..{MAX_INSTANCES}, or several to compare, e.g. 2,4,8 (default: 4)",
    )
    parser.add_argument("--blocks", type=A.count, default=4096, help="GPU cache blocks per instance (default: 4096)")
    parser.add_argument("--router", default="all", help=f"comma-separated routers, or all (default): {ROUTER_NAMES}")
    parser.add_argument(
        "--policy",
        choices=("lru", "lfu", "fifo", "mru", "filo", "slru"),
        default="lru",
        help="each cache's eviction policy (SGLang's radix keys; default: lru)",
    )
    parser.add_argument("--model", default="llama-3-8b", help="the model (kvsize --list; default: llama-3-8b)")
    parser.add_argument("--gpu", default="h100", help="one GPU per instance (default: h100)")
    parser.add_argument(
        "--pool-blocks",
        type=A.bounded_float(0, A.MAX_MAGNITUDE, allow_inf=True),
        default=0.0,
        help="a shared KV pool every instance reads and writes, in blocks (default: 0, none; inf: unbounded)",
    )
    parser.add_argument(
        "--target-p90-ttft",
        type=A.positive,
        default=None,
        metavar="S",
        help="add meets_target (p90 TTFT ≤ S seconds) and cheapest (the lowest $/h that meets it) to each row",
    )
    parser.add_argument(
        "--decode-s-per-token",
        type=A.non_negative,
        default=0.02,
        metavar="S",
        help="how long a request stays in flight per output token, for the routers' loads (default: 0.02)",
    )


def run(args: argparse.Namespace) -> int:
    from kvviz.cluster import ROUTERS, ClusterConfig, compare, parse_router
    from kvviz.traces.cli import trace_from_args

    names = ROUTERS if args.router.strip().lower() == "all" else [parse_router(r) for r in args.router.split(",")]
    config = ClusterConfig(
        instances=args.instances[0],
        blocks=args.blocks,
        policy=args.policy,
        model=args.model,
        gpu=args.gpu,
        pool_blocks=args.pool_blocks,
        decode_s_per_token=args.decode_s_per_token,
    )
    trace = trace_from_args(args)
    budget.replay_memory(budget.CLUSTER, trace, max(args.instances), max(args.instances)).check()
    table = compare(trace, names, config, instance_counts=args.instances, target_p90_s=args.target_p90_ttft)
    sys.stdout.write(table.to_csv(index=False, float_format="%.6g"))
    return 0
