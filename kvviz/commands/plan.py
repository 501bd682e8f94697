"""``python -m kvviz plan TRACE --model M --gpu G ... --target-p90-ttft S``: what to buy, as JSON."""

from __future__ import annotations

import argparse
import sys

from kvviz.common import args as A
from kvviz.common.errors import InputError, quote
from kvviz.traces.cli import add_trace_arguments

NAME = "plan"
HELP = (
    "Search tier sizes for a trace: the GPU, DRAM and storage capacity reaching 80/90/95%% of the "
    "infinite cache's hits (exact, by bisection) and the cheapest DRAM and storage sizes whose TTFT p90 "
    "meets a target, with the cost-TTFT Pareto front, as JSON; on a local process pool or a Ray cluster."
)


def sizes(text: str) -> list[float]:
    """A comma-separated list of sizes with units (``0,64GiB,1TiB``)."""
    items = [t for t in text.split(",") if t.strip()]
    if not items or len(items) > 50:
        raise argparse.ArgumentTypeError(f"expected 1 to 50 comma-separated sizes, got '{quote(text)}'")
    return [A.size_gib(t) for t in items]


sizes.__name__ = "sizes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.tiers.cli import add_deployment_arguments

    add_trace_arguments(parser)
    add_deployment_arguments(parser)
    search = parser.add_argument_group("the search")
    search.add_argument(
        "--target-p90-ttft", type=A.positive, required=True, metavar="S", help="TTFT p90 to meet, seconds"
    )
    search.add_argument(
        "--dram-sizes",
        type=sizes,
        default=None,
        help="DRAM sizes per instance to try (default: shares of the trace's KV)",
    )
    search.add_argument(
        "--ssd-sizes",
        type=sizes,
        default=None,
        help="storage sizes to try (SSD per instance, or the remote pool with --remote)",
    )
    search.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the grid on the Ray cluster at ADDRESS ('local': start one here)",
    )
    search.add_argument(
        "--workers", type=A.bounded_int(1, 1024), default=None, help="local worker processes (default: one per core)"
    )


def run(args: argparse.Namespace) -> int:
    from kvviz.tiers import plan
    from kvviz.tiers.cli import config_from_args, to_json
    from kvviz.traces.cli import trace_from_args

    if args.ray is not None:
        A.refuse(args, ["--workers"], "applies to the local process pool; Ray uses the cluster's CPUs")
    if any(s == float("inf") for s in (args.dram_sizes or []) + (args.ssd_sizes or [])):
        raise InputError("--dram-sizes and --ssd-sizes must be finite: an unbounded tier has no price")
    config = config_from_args(args)
    found = plan(
        trace_from_args(args),
        config,
        args.target_p90_ttft,
        dram_sizes=args.dram_sizes,
        storage_sizes=args.ssd_sizes,
        ray_address=args.ray,
        workers=args.workers,
    )
    sys.stdout.write(to_json(found.summary()))
    return 0
