"""The command line: ``python -m kvviz COMMAND ...``.

Each subcommand is a module in ``kvviz/commands/`` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding a module adds a command. Bad input
prints one line to stderr and exits 2, never a traceback.

No input may reach a traceback: every argument has a typed, ranged ``type=`` (``kvviz.args``), so
argparse refuses it before any work; output paths are checked before the work; file contents and
mechanism rules raise ``InputError``; an operating-system error on a file the user named (a disk
that fills, a permission changed mid-run) is reported as one line too. Any other exception is a
bug in kvviz and keeps its traceback on purpose: developers need it, and the fuzz tests
(``tests/test_fuzz_cli.py``) fail on it. ``main`` returns the exit code rather than exiting, so
tests call it in-process.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from kvviz import commands
from kvviz.errors import InputError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def parse_known_args(self, args=None, namespace=None):
        # Python 3.11's argparse turns "--seed=--" into an empty list that no type= ever sees.
        for arg in sys.argv[1:] if args is None else args:
            if arg.startswith("--") and arg.endswith("=--"):
                self.error(f"argument {arg[:-3]}: expected one argument")
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # argparse's own errors, on one line
        _say(f"{self.prog.removeprefix('python -m ')}: {message}")  # as run-time errors: "kvviz CMD: ..."
        sys.exit(EXIT_BAD_INPUT)


def _say(message: str) -> None:
    """Print an error on exactly one line of stderr (user text may hold line breaks)."""
    print(" ".join(message.splitlines()), file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m kvviz", description="kvviz: how LLM KV caches behave.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad argument (already printed on one line), or --help
        return int(exc.code or 0)
    try:
        return int(args.run(args) or 0)
    except InputError as exc:
        _say(f"kvviz {args.command}: {exc}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except OSError as exc:
        if exc.filename is None:  # not about a file the user named: a bug, keep the traceback
            raise
        _say(f"kvviz {args.command}: {exc.filename}: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
