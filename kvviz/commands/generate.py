"""``python -m kvviz generate``: write a synthetic trace in the Mooncake JSONL format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from kvviz.common import args as A
from kvviz.traces.workload import LIMITS, WorkloadConfig, generate

NAME = "generate"
HELP = "Write a synthetic trace (document QA, multi-turn chat, one-shot) as Mooncake JSONL."
KIND_KNOBS = {
    "share_doc_qa": ("documents", "doc_zipf", "doc_tokens", "question_tokens"),
    "share_chat": ("chat_turns", "chat_first_tokens", "chat_turn_tokens", "think_time_s"),
    "share_oneshot": ("oneshot_tokens",),
}
"""Each kind's share and the knobs that shape only that kind's requests: with a share of 0 they
shape nothing, and are refused."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for f in fields(WorkloadConfig):
        lo, hi = LIMITS[f.name]
        kind = A.bounded_int(lo, hi) if isinstance(f.default, int) else A.bounded_float(lo, hi)
        parser.add_argument(_flag(f.name), type=kind, default=None, help=f"{lo:,}..{hi:,}, default {f.default}")


def run(args: argparse.Namespace) -> int:
    given = {f.name: getattr(args, f.name) for f in fields(WorkloadConfig) if getattr(args, f.name) is not None}
    config = WorkloadConfig(**given)
    for share, knobs in KIND_KNOBS.items():
        if getattr(config, share) == 0:
            A.refuse(args, [_flag(k) for k in knobs], f"shapes only the requests of {_flag(share)}, which is 0")
    sys.stdout.write(generate(config).to_jsonl())
    return 0
