"""``python -m kvviz stats TRACE``: a trace's statistics as JSON."""

from __future__ import annotations

import argparse
import json

from kvviz.stats import trace_stats
from kvviz.trace import DEFAULT_BLOCK_SIZE, load_trace

NAME = "stats"
HELP = "Print a trace's statistics (Mooncake JSONL or CSV) as JSON."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="path of the trace file")
    parser.add_argument("--block-size", type=int, default=DEFAULT_BLOCK_SIZE, help="tokens per hash id")


def run(args: argparse.Namespace) -> int:
    trace = load_trace(args.trace, args.block_size)
    print(json.dumps(trace_stats(trace).to_dict(), indent=2))
    return 0
