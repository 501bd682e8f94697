"""``python -m kvviz stats TRACE``: a trace's statistics as JSON (a file or a library id)."""

from __future__ import annotations

import argparse
import json

from kvviz.common import budget
from kvviz.common.progress import reading
from kvviz.traces.cli import add_trace_arguments, trace_from_args
from kvviz.traces.stats import trace_stats

NAME = "stats"
HELP = "Print a trace's statistics (any supported trace file, or a library id) as JSON."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("--how-read", action="store_true", help="also print how the file was read")


def run(args: argparse.Namespace) -> int:
    with reading(NAME):
        trace = trace_from_args(args)
        budget.replay_memory(budget.STATS, trace).check()
        out = trace_stats(trace).to_dict()
    if args.how_read:
        out |= {"how_read": list(trace.how_read), "warnings": list(trace.warnings)}
    elif trace.warnings:  # said on stderr too (kvviz.traces.cli), and kept with the numbers they qualify
        out |= {"warnings": list(trace.warnings)}
    print(json.dumps(out, indent=2))
    return 0
