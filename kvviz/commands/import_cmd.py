"""``python -m kvviz import FILE [--name NAME]``: store a trace in the library; ``--list`` lists it.

The library (``$KVVIZ_TRACES``, default ``~/.cache/kvviz/traces``) keeps each trace by content
hash; every command that takes a trace accepts the printed id instead of a path.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from kvviz.errors import InputError
from kvviz.traces import library
from kvviz.traces.cli import add_trace_arguments, trace_from_args

NAME = "import"
HELP = "Store a trace (any supported file) in the trace library by content hash and print its entry (JSON)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser, required=False, help="the trace file to import")
    parser.add_argument("--name", default=None, help="the entry's display name (default: the file's name)")
    parser.add_argument("--list", action="store_true", help="list the library's entries and exit")
    parser.add_argument("--remove", metavar="ID", default=None, help="take one entry out of the library")


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(json.dumps([_public(e) for e in library.entries()], indent=2))
        return 0
    if args.remove:
        if not library.is_entry_id(args.remove):
            raise InputError(f"'{args.remove[:40]}' is not a library id", field="--remove")
        library.remove(args.remove)
        return 0
    if args.trace is None:
        raise InputError("give a trace file to import (or --list)", field="trace")
    trace = trace_from_args(args)
    entry = library.store(trace, args.name)
    print(json.dumps(_public(entry), indent=2))
    return 0


def _public(entry: library.Entry) -> dict:
    return {k: v for k, v in asdict(entry).items() if k != "created"} | {"library": str(library.root())}
