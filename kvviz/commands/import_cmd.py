"""``python -m kvviz import FILE [--name NAME]``: store a trace in the library; ``--list``, ``--remove``,
``--pin`` and ``--unpin`` look after it.

The library (``$KVVIZ_TRACES``, default ``~/.cache/kvviz/traces``) keeps each trace by content
hash; every command that takes a trace accepts the printed id instead of a path. An import is
pinned (never evicted); what it changed besides storing (a rename, a repair, an eviction) is said
on stderr, one line each, and the evicted ids are in the printed JSON too.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from kvviz.common.errors import InputError
from kvviz.traces import library
from kvviz.traces.cli import add_trace_arguments, read_options, trace_from_args
from kvviz.traces.ingest import ReadOptions

NAME = "import"
HELP = "Store a trace (any supported file) in the trace library by content hash and print its entry (JSON)."
ACTIONS = ("list", "remove", "pin", "unpin")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser, required=False, help="the trace file to import")
    parser.add_argument(
        "--name",
        default=None,
        help="the entry's display name (default: the file's name); renames an entry already stored",
    )
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument(
        "--list", action="store_true", help="check every entry (reading it whole) and list them, damaged ones flagged"
    )
    actions.add_argument("--remove", metavar="ID", default=None, help="take one entry out of the library")
    actions.add_argument(
        "--pin",
        metavar="ID",
        default=None,
        help="never evict this entry (imports are pinned already; traces kept from the web are not)",
    )
    actions.add_argument("--unpin", metavar="ID", default=None, help="let an import over the size cap evict this entry")


def run(args: argparse.Namespace) -> int:
    action = next((a for a in ACTIONS if getattr(args, a) not in (None, False)), None)
    if action is not None:
        _refuse_extras(args, f"--{action}")
        if action != "list" and not library.is_entry_id(getattr(args, action)):
            raise InputError(
                f"'{getattr(args, action)[:40]}' is not a library id ({library.ID_LENGTH} hex digits; "
                "see import --list)",
                field=f"--{action}",
            )
        return {"list": _list, "remove": _remove, "pin": _pin, "unpin": _pin}[action](args)
    if args.trace is None:
        raise InputError("give a trace file to import (or --list)", field="trace")
    stored = library.store(trace_from_args(args), args.name)
    for note in stored.notes:
        print(f"kvviz import: {note}", file=sys.stderr)
    print(json.dumps(_public(stored.entry) | {"evicted": [e.id for e in stored.evicted]}, indent=2))
    return 0


def _refuse_extras(args: argparse.Namespace, flag: str) -> None:
    """An option that does not go with ``flag`` is refused, not ignored."""
    extras = [
        what
        for given, what in (
            (args.trace is not None, "trace file"),
            (args.name is not None, "--name"),
            (read_options(args) != ReadOptions(), "reading options"),
        )
        if given
    ]
    if extras:
        raise InputError(f"{flag} takes no {' or '.join(extras)}", field=flag)


def _list(args: argparse.Namespace) -> int:
    print(json.dumps([_public(e) for e in library.entries(verify=True)], indent=2))
    return 0


def _remove(args: argparse.Namespace) -> int:
    entry = library.remove(args.remove)
    if entry is None:
        raise InputError(f"no trace '{args.remove}' in the library; nothing was removed", field="--remove")
    print(f"removed {entry.id} ({_what(entry)})")
    return 0


def _pin(args: argparse.Namespace) -> int:
    pinned = args.pin is not None
    entry = library.set_pinned(args.pin if pinned else args.unpin, pinned)
    state = "pinned: never evicted" if pinned else "unpinned: an import over the size cap may evict it"
    print(f"{entry.id} ({_what(entry)}) is {state}")
    return 0


def _what(entry: library.Entry) -> str:
    return f"damaged: {entry.damaged}" if entry.damaged else f"'{entry.name}'"


def _public(entry: library.Entry) -> dict:
    if entry.damaged:
        return {"id": entry.id, "damaged": entry.damaged, "bytes": entry.bytes}
    hidden = ("created", "damaged")
    return {k: v for k, v in asdict(entry).items() if k not in hidden} | {"library": str(library.root())}
