"""The one way a command takes a trace: ``add_trace_arguments(parser)`` and ``trace_from_args(args)``.

A trace argument is a file (any supported format, plain, .gz or .zst) or a library id
(``python -m kvviz import --list``). The reading options (block size, time unit, format,
CSV column map, bad rows, re-chaining) are the same for every command; each is refused, naming
it, where it cannot apply: without a trace, or with a library entry (read when it was imported).
"""

from __future__ import annotations

import argparse
import os
import sys

from kvviz.common import args as A
from kvviz.common.errors import InputError, quote
from kvviz.traces import library
from kvviz.traces.formats import Format, parse_column_map
from kvviz.traces.ingest import MAX_BLOCK_SIZE, ReadOptions, load_trace
from kvviz.traces.model import Trace
from kvviz.traces.timeunits import parse_unit

TRACE_HELP = "a trace file (Mooncake or Qwen-Bailian JSONL, CSV; plain, .gz or .zst) or a library id"
READING_FLAGS = ("--block-size", "--time-unit", "--format", "--columns", "--skip-bad-rows", "--no-rechain")


def add_trace_arguments(
    parser: argparse.ArgumentParser, *, flag: str | None = None, required: bool = True, help: str = TRACE_HELP
) -> None:
    """The trace argument (positional, optional unless ``required``; or ``flag`` such as ``--trace``,
    always optional) and the reading options (``READING_FLAGS``, each ``None`` or off unless given)."""
    if flag is None:
        parser.add_argument("trace", help=help, **({} if required else {"nargs": "?", "default": None}))
    else:
        parser.add_argument(flag, dest="trace", default=None, help=help + " (optional)")
    group = parser.add_argument_group("reading the trace")
    group.add_argument(
        "--block-size",
        type=A.bounded_int(1, MAX_BLOCK_SIZE),
        default=None,
        help="tokens per hash id (default: the format's: Mooncake and CSV 512, Qwen-Bailian 16)",
    )
    group.add_argument(
        "--time-unit",
        choices=("ms", "s", "us"),
        default=None,
        help="unit of the arrival times (default: the format's: Mooncake ms, Qwen-Bailian s)",
    )
    group.add_argument(
        "--format",
        choices=("auto",) + tuple(f.value for f in Format),
        default=None,
        help="the file's format (default: auto, detected from its fields)",
    )
    group.add_argument(
        "--columns",
        default=None,
        metavar="MAP",
        help="CSV column map: arrival=COL,input=COL,output=COL[,hash_ids=COL], each role once",
    )
    group.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="leave bad rows out (reported by reason) instead of stopping at the first",
    )
    group.add_argument(
        "--no-rechain",
        action="store_true",
        help="keep per-block ids as they are (Qwen-Bailian); default: re-chain them into prefix ids",
    )


def read_options(args: argparse.Namespace) -> ReadOptions:
    """The reading options given on the command line (a column map with a non-CSV ``--format``
    is refused here; on a file detected as another format, when it is read)."""
    fmt = None if args.format in (None, "auto") else Format(args.format)
    if args.columns is not None and fmt not in (None, Format.CSV):
        raise InputError(f"--columns applies to CSV files; --format {args.format} has no columns")
    return ReadOptions(
        format=fmt,
        block_size=args.block_size,
        time_unit=parse_unit(args.time_unit) if args.time_unit else None,
        columns=tuple(parse_column_map(args.columns).items()) if args.columns is not None else (),
        skip_bad_rows=bool(args.skip_bad_rows),
        rechain=False if args.no_rechain else None,
    )


def trace_from_args(args: argparse.Namespace) -> Trace | None:
    """The trace the command line names; ``None`` when an optional ``--trace`` was not given,
    and then no reading option may be."""
    if args.trace is None:
        refuse_reading_options(args)
        return None
    if not _is_file(args.trace) and library.is_entry_id(args.trace):
        A.refuse(args, READING_FLAGS, "applies to files; a library entry was read when it was imported")
    trace = resolve(args.trace, read_options(args))
    say_warnings(trace, f"kvviz {getattr(args, 'command', None) or 'trace'}")
    return trace


def say_warnings(trace: Trace, prog: str) -> None:
    """Print each of the trace's warnings on stderr, one line each: a time unit that was assumed
    and looks wrong, rows skipped by reason, requests sorted … Every command that reads a trace
    says them (``stats --how-read`` also puts them in its JSON), so nothing is dropped or read
    differently without a word."""
    for warning in trace.warnings:
        print(f"{prog}: warning: {' '.join(warning.splitlines())}", file=sys.stderr)


def with_warnings(summary: dict, trace: Trace | None) -> dict:
    """A command's JSON summary with the trace's warnings under ``trace_warnings`` when it has any."""
    return summary | {"trace_warnings": list(trace.warnings)} if trace is not None and trace.warnings else summary


def refuse_reading_options(args: argparse.Namespace) -> None:
    """Refuse every reading option given to a run that reads no trace."""
    A.refuse(args, READING_FLAGS, "applies to reading a trace, and no --trace was given")


def resolve(text: str, options: ReadOptions | None = None) -> Trace:
    """A file path or a library id → the trace. A path that exists wins over an id."""
    options = options or ReadOptions()
    if _is_file(text):
        return load_trace(text, options=options)
    if not library.is_entry_id(text):
        raise InputError(
            f"cannot open trace file '{quote(text)}': no such file, nor a library id (python -m kvviz import --list)"
        )
    if options != ReadOptions():
        raise InputError("reading options apply to files; a library entry was read when it was imported", field="trace")
    return library.open_entry(text)


def _is_file(text: str) -> bool:
    """Whether ``text`` names something on disk (a file, a folder, a device: reading it says which)."""
    try:
        os.stat(text)
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a folder that is a file ...
        raise InputError(
            f"cannot open trace file '{quote(text)}': {getattr(exc, 'strerror', None) or 'not a valid path'}"
        ) from None
    return True
