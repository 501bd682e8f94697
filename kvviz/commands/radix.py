"""``python -m kvviz radix SCRIPT``: replay a request script on SGLang's radix tree, step by step.

SCRIPT is a JSON file (a list of steps, see ``kvviz.radix.script.parse_json``), a text file in
the page's one-step-per-line form, or ``preset:NAME`` for a built-in preset. After each step it
prints what happened, the tree dump (as SGLang's ``pretty_print``) and the running totals.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from kvviz.common import args as A
from kvviz.common.errors import InputError, quote
from kvviz.traces.cli import add_trace_arguments, refuse_reading_options, trace_from_args, with_warnings
from kvviz.traces.source import read_regular

NAME = "radix"
TRACE_DEVICE = 10_000  # blocks: the default device pool of a whole-trace replay
HELP = "Replay a request script on RadixCache / HiRadixCache and print the tree and totals after each step."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", nargs="?", help="a .json or text script, or preset:NAME (e.g. preset:delay)")
    add_trace_arguments(
        parser,
        flag="--trace",
        help="instead of a script, replay a whole trace (block ids as "
        "tokens) and print its totals as JSON; capacities are then in blocks (default device "
        f"{TRACE_DEVICE:,}, host four times it)",
    )
    parser.add_argument("--requests", type=A.count, default=None, help="with --trace: only the first N requests")
    parser.add_argument(
        "--cache", choices=("radix", "hiradix"), default=None, help="tree kind (default: the preset's, else hiradix)"
    )
    parser.add_argument("--device", type=A.count, default=None, help="GPU capacity in tokens (default 64)")
    parser.add_argument("--host", type=A.count, default=None, help="CPU capacity in tokens (default 256)")
    parser.add_argument("--page-size", type=A.count, default=None, help="tokens per page (default 1)")
    parser.add_argument("--policy", default=None, help="eviction policy: lru lfu fifo mru filo priority slru")
    parser.add_argument(
        "--write-policy", default=None, help="write_through, write_through_selective or write_back (HiRadixCache)"
    )
    parser.add_argument("--no-deferral", action="store_true", help="turn Strata's delay-hit deferral off")
    parser.add_argument(
        "--threshold",
        type=A.bounded_int(0, A.MAX_COUNT),
        default=None,
        help="deferral threshold in tokens (default 100)",
    )
    parser.add_argument("--no-auto-ack", action="store_true", help="acknowledge transfers only at 'ack' steps")
    parser.add_argument("--legacy-hit-count", action="store_true", help="hit counts as before SGLang PR #18843")
    parser.add_argument("--totals-only", action="store_true", help="print one JSON line of totals per step")


HIRADIX_FLAGS = ("--host", "--write-policy", "--no-deferral", "--threshold", "--no-auto-ack")
"""Options of HiRadixCache's CPU tier: a radix cache has no host tier, so nothing is loaded back,
in flight to defer on, or acknowledged."""


def _trace_totals(args: argparse.Namespace) -> int:
    from kvviz.radix.replay import ReplayConfig
    from kvviz.radix.trace_replay import replay_trace

    A.refuse(args, ["--totals-only"], "applies to a script; with --trace the totals are all that is printed")
    A.refuse(
        args,
        ["--no-auto-ack"],
        "applies to a script's 'ack' steps; a trace has none, so its transfers are acknowledged as they end",
    )
    cache = args.cache or "radix"
    _refuse_hiradix_options(args, cache, not args.no_deferral)
    device = args.device or TRACE_DEVICE
    chosen = dict(
        cache=cache,
        device_capacity=device,
        host_capacity=args.host or 4 * device,
        page_size=args.page_size,
        eviction_policy=args.policy,
        write_policy=args.write_policy,
        threshold=args.threshold,
        deferral=not args.no_deferral,
        hit_count_rule="legacy" if args.legacy_hit_count else "upstream",
    )
    config = ReplayConfig(**{k: v for k, v in chosen.items() if v is not None})
    trace = trace_from_args(args)
    result = replay_trace(trace, config, args.requests)
    totals = {"rounds": result.rounds, "hit_ratio": round(result.hit_ratio, 6), "finished": result.finished}
    print(json.dumps(with_warnings(totals | result.totals, trace)))
    return 0 if result.finished else 2


def _refuse_hiradix_options(args: argparse.Namespace, cache: str, deferral: bool) -> None:
    if cache == "radix":
        A.refuse(args, HIRADIX_FLAGS, "applies to --cache hiradix (the CPU tier); this replay uses radix")
    if not deferral:
        A.refuse(args, ["--threshold"], "is the deferral threshold, and deferral is off in this replay")


def _script(arg: str):
    from kvviz.radix.presets import PRESETS
    from kvviz.radix.script import MAX_TEXT_BYTES, parse_json, parse_text

    if arg.startswith("preset:"):
        key = arg.split(":", 1)[1]
        if key not in PRESETS:
            raise InputError(f"unknown preset '{quote(key)}'; choose one of {', '.join(PRESETS)}", field="script")
        return PRESETS[key].script(), PRESETS[key].suggested
    path = Path(arg)
    data = read_regular(path, "script", 4 * MAX_TEXT_BYTES)
    if path.suffix == ".json" or data.lstrip()[:1] in (b"[", b"{"):
        return parse_json(data), {}
    try:
        return parse_text(data.decode("utf-8"), path.name), {}
    except UnicodeDecodeError:
        raise InputError(f"{quote(arg)} is not UTF-8 text", field="script") from None


def run(args: argparse.Namespace) -> int:
    from kvviz.radix.replay import TOTAL_COLUMNS, ReplayConfig, replay

    if args.trace is not None:
        if args.script is not None:
            raise InputError(
                f"give a script or --trace, not both: --trace replays the trace, and the script "
                f"'{quote(args.script)}' would be ignored"
            )
        return _trace_totals(args)
    refuse_reading_options(args)
    A.refuse(args, ["--requests"], "applies to --trace")
    if args.script is None:
        raise InputError("give a script (a .json or text file, or preset:NAME) or --trace FILE", field="script")
    script, suggested = _script(args.script)
    chosen = dict(
        cache=args.cache,
        device_capacity=args.device,
        host_capacity=args.host,
        page_size=args.page_size,
        eviction_policy=args.policy,
        write_policy=args.write_policy,
        threshold=args.threshold,
    )
    values = {**asdict(ReplayConfig()), **suggested, **{k: v for k, v in chosen.items() if v is not None}}
    values["deferral"] = values["deferral"] and not args.no_deferral
    values["auto_ack"] = values["auto_ack"] and not args.no_auto_ack
    values["hit_count_rule"] = "legacy" if args.legacy_hit_count else "upstream"
    _refuse_hiradix_options(args, values["cache"], values["deferral"])
    rep = replay(script, ReplayConfig(**values))
    for k, row in rep.steps.iterrows():
        totals = {c: int(row[c]) for c in TOTAL_COLUMNS}
        if args.totals_only:
            print(json.dumps({"step": k, "op": row.op, **totals}))
            continue
        print(f"== step {k}: {row.op}")
        for line in row.lines:
            print("  " + line.replace("**", ""))
        print(rep.dumps[k])
        print("totals: " + ", ".join(f"{c}={v}" for c, v in totals.items() if v))
        print()
    if rep.error:
        print(f"kvviz radix: {rep.error}", file=sys.stderr)
        return 2
    return 0
