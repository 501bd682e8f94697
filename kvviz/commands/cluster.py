"""``python -m kvviz cluster TRACE --instances N --router R --blocks C [--engine vllm-lmcache]``: a trace served
by N instances, each with its own cache (SGLang's radix cache, or vLLM's block pool with LMCache behind it),
behind each router asked for; one CSV row per router and the shared-cache reference."""

from __future__ import annotations

import argparse
import sys

from kvviz.common import args as A
from kvviz.common import budget
from kvviz.common.errors import InputError
from kvviz.traces.cli import add_trace_arguments

NAME = "cluster"
HELP = (
    "Serve a trace with N instances, each with its own GPU cache of C blocks (SGLang's radix cache, or vLLM's "
    "block pool with LMCache's CPU, disk and shared remote backends behind it), behind routers "
    "(round-robin, least-load, prefix-hash, cache-aware, kv-aware, conductor), and print per router the "
    "hits, TTFT percentiles, load imbalance and cost as CSV, with one shared cache of N × C blocks as the reference."
)
ROUTER_NAMES = "round-robin,least-load,prefix-hash,cache-aware,kv-aware,conductor"
MAX_INSTANCES = 63  # kvviz.cluster.routers.MAX_INSTANCES, without importing numba to build the parser
ENGINES = ("sglang", "vllm-lmcache")  # kvviz.cluster.ENGINES, likewise
LMCACHE_FLAGS = ("--chunk-size", "--cpu-chunks", "--disk-chunks", "--remote-chunks")
CHUNKS = A.bounded_float(0, A.MAX_MAGNITUDE, allow_inf=True)


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
        "--engine",
        choices=ENGINES,
        default="sglang",
        help="each instance's stack: SGLang's radix cache, or vLLM's block pool and LMCache (default: sglang)",
    )
    parser.add_argument(
        "--policy",
        choices=("lru", "lfu", "fifo", "mru", "filo", "slru"),
        default=None,
        help="each SGLang cache's eviction policy (its radix keys; default: lru)",
    )
    parser.add_argument("--model", default="llama-3-8b", help="the model (kvsize --list; default: llama-3-8b)")
    parser.add_argument("--gpu", default="h100", help="one GPU per instance (default: h100)")
    parser.add_argument(
        "--pool-blocks",
        type=A.bounded_float(0, A.MAX_MAGNITUDE, allow_inf=True),
        default=0.0,
        help="a shared KV pool every instance reads and writes, in blocks (default: 0, none; inf: unbounded)",
    )
    lmcache = parser.add_argument_group("LMCache (--engine vllm-lmcache)")
    lmcache.add_argument(
        "--chunk-size", type=A.bounded_int(1, 1 << 20), default=None, help="LMCache's chunk in tokens (default: 256)"
    )
    for backend, what in (("cpu", "local CPU memory"), ("disk", "local disk")):
        lmcache.add_argument(
            f"--{backend}-chunks", type=CHUNKS, default=None, help=f"each instance's {what} in chunks (default: 0, off)"
        )
    lmcache.add_argument(
        "--remote-chunks",
        type=CHUNKS,
        default=None,
        help="the remote backend all instances share (an LMCache server), in chunks (default: 0, off; inf: unbounded)",
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


def refuse_for_engine(args: argparse.Namespace) -> None:
    """Options of the other engine are refused, not ignored."""
    if args.engine == "sglang":
        A.refuse(args, LMCACHE_FLAGS, "applies to --engine vllm-lmcache (LMCache's backends)")
        return
    A.refuse(args, ["--policy"], "applies to --engine sglang; vLLM's block pool has no eviction policy to choose")
    if args.pool_blocks:
        raise InputError("--pool-blocks applies to --engine sglang; vLLM + LMCache's shared pool is --remote-chunks")


def run(args: argparse.Namespace) -> int:
    from kvviz.cluster import ROUTERS, ClusterConfig, compare, parse_router
    from kvviz.common.progress import Progress, reading
    from kvviz.lmcache import LMCacheConfig
    from kvviz.traces.cli import trace_from_args

    refuse_for_engine(args)
    names = ROUTERS if args.router.strip().lower() == "all" else [parse_router(r) for r in args.router.split(",")]
    sizes = {f"{b}_chunks": getattr(args, f"{b}_chunks") or 0.0 for b in ("cpu", "disk", "remote")}
    config = ClusterConfig(
        instances=args.instances[0],
        blocks=args.blocks,
        policy=args.policy or "lru",
        model=args.model,
        gpu=args.gpu,
        pool_blocks=args.pool_blocks,
        decode_s_per_token=args.decode_s_per_token,
        engine=args.engine,
        lmcache=LMCacheConfig(chunk_size=args.chunk_size or 256, **sizes),
    )
    with reading(NAME):
        trace = trace_from_args(args)
    budget.replay_memory(budget.CLUSTER, trace, max(args.instances), max(args.instances)).check()
    runs = len(names) * len(args.instances)
    with Progress("kvviz cluster: serving the trace", runs, "runs") as progress:
        table = compare(
            trace, names, config, instance_counts=args.instances, target_p90_s=args.target_p90_ttft, progress=progress
        )
    sys.stdout.write(table.to_csv(index=False, float_format="%.6g"))
    return 0
