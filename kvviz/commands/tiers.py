"""``python -m kvviz tiers TRACE --model M --gpu G ...``: a trace through GPU, DRAM and SSD tiers, as JSON."""

from __future__ import annotations

import argparse
import sys

from kvviz.common import args as A
from kvviz.traces.cli import add_trace_arguments

NAME = "tiers"
HELP = (
    "Replay a trace through a tiered KV cache (GPU HBM, host DRAM, SSD or a remote pool; SGLang's HiCache) "
    "on the hardware given, and print hits by tier, TTFT beside no cache, throughput and cost as JSON."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.tiers.cli import add_deployment_arguments

    add_trace_arguments(parser)
    add_deployment_arguments(parser)
    parser.add_argument(
        "--ttft-slo",
        type=A.positive,
        default=None,
        metavar="S",
        help="also report the share of requests with TTFT ≤ S seconds",
    )


def run(args: argparse.Namespace) -> int:
    from kvviz.tiers import replay
    from kvviz.tiers.cli import config_from_args, to_json
    from kvviz.traces.cli import trace_from_args

    config = config_from_args(args)
    result = replay(trace_from_args(args), config)
    summary = result.summary()
    if args.ttft_slo is not None:
        summary["ttft_slo_s"] = args.ttft_slo
        summary["ttft_slo_met"] = float((result.requests["ttft_s"] <= args.ttft_slo).mean())
    sys.stdout.write(to_json(summary))
    return 0
