"""``python -m kvviz generate``: write a synthetic trace in the Mooncake JSONL format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from kvviz import args as A
from kvviz.workload import LIMITS, WorkloadConfig, generate

NAME = "generate"
HELP = "Write a synthetic trace (document QA, multi-turn chat, one-shot) as Mooncake JSONL."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for f in fields(WorkloadConfig):
        flag = "--" + f.name.replace("_", "-")
        lo, hi = LIMITS[f.name]
        kind = A.bounded_int(lo, hi) if isinstance(f.default, int) else A.bounded_float(lo, hi)
        parser.add_argument(flag, type=kind, default=f.default, help=f"{lo:,}..{hi:,}, default {f.default}")


def run(args: argparse.Namespace) -> int:
    config = WorkloadConfig(**{f.name: getattr(args, f.name) for f in fields(WorkloadConfig)})
    sys.stdout.write(generate(config).to_jsonl())
    return 0
