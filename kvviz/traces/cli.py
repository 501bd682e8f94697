"""The one way a command takes a trace: ``add_trace_arguments(parser)`` and ``trace_from_args(args)``.

A trace argument is a file (any supported format, plain, .gz or .zst) or a library id
(``python -m kvviz import --list``). The reading options (block size, time unit, format,
CSV column map, bad rows, re-chaining) are the same for every command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvviz.errors import InputError
from kvviz.traces import library
from kvviz.traces.formats import Format, parse_column_map
from kvviz.traces.ingest import ReadOptions, load_trace
from kvviz.traces.model import Trace
from kvviz.traces.timeunits import parse_unit

TRACE_HELP = "a trace file (Mooncake or Qwen-Bailian JSONL, CSV; plain, .gz or .zst) or a library id"


def add_trace_arguments(parser: argparse.ArgumentParser, *, flag: str | None = None, required: bool = True,
                        help: str = TRACE_HELP) -> None:
    """The trace argument (positional, optional unless ``required``; or ``flag`` such as ``--trace``,
    always optional) and the reading options."""
    if flag is None:
        parser.add_argument("trace", help=help, **({} if required else {"nargs": "?", "default": None}))
    else:
        parser.add_argument(flag, dest="trace", default=None, help=help + " (optional)")
    group = parser.add_argument_group("reading the trace")
    group.add_argument("--block-size", type=int, default=None,
                       help="tokens per hash id (default: the format's: Mooncake and CSV 512, Qwen-Bailian 16)")
    group.add_argument("--time-unit", choices=("ms", "s", "us"), default=None,
                       help="unit of the arrival times (default: the format's: Mooncake ms, Qwen-Bailian s)")
    group.add_argument("--format", dest="trace_format", choices=("auto",) + tuple(f.value for f in Format),
                       default="auto", help="the file's format (default: detected from its fields)")
    group.add_argument("--columns", default=None, metavar="MAP",
                       help="CSV column map: arrival=COL,input=COL,output=COL[,hash_ids=COL]")
    group.add_argument("--skip-bad-rows", action="store_true",
                       help="leave bad rows out (reported by reason) instead of stopping at the first")
    group.add_argument("--no-rechain", action="store_true",
                       help="keep per-block ids as they are (Qwen-Bailian); default: re-chain them into prefix ids")


def read_options(args: argparse.Namespace) -> ReadOptions:
    """The reading options given on the command line."""
    return ReadOptions(
        format=None if args.trace_format == "auto" else Format(args.trace_format),
        block_size=args.block_size,
        time_unit=parse_unit(args.time_unit) if args.time_unit else None,
        columns=tuple(parse_column_map(args.columns).items()) if args.columns else (),
        skip_bad_rows=bool(args.skip_bad_rows),
        rechain=False if args.no_rechain else None)


def trace_from_args(args: argparse.Namespace) -> Trace | None:
    """The trace the command line names (None when an optional ``--trace`` was not given)."""
    if args.trace is None:
        return None
    return resolve(args.trace, read_options(args))


def resolve(text: str, options: ReadOptions | None = None) -> Trace:
    """A file path or a library id → the trace. A path that exists wins over an id."""
    options = options or ReadOptions()
    if Path(text).exists() or not library.is_entry_id(text):
        return load_trace(text, options=options)
    if options != ReadOptions():
        raise InputError("reading options apply to files; a library entry was read when it was imported",
                         field="trace")
    return library.open_entry(text)
