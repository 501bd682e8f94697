"""The command line: ``kvviz COMMAND ...`` once installed (``pyproject.toml``), ``python -m kvviz COMMAND ...``
from a checkout.

Each subcommand is a module in ``kvviz/commands/`` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding a module adds a command. Bad input
prints one line to stderr and exits 2, never a traceback.

No input may reach a traceback: every argument has a typed, ranged ``type=`` (``kvviz.common.args``), so
argparse refuses it before any work; output paths are checked before the work; file contents and
mechanism rules raise ``InputError``; an operating-system error on a file the user named (a disk
that fills, a permission changed mid-run) is reported as one line too. Any other exception is a
bug in kvviz and keeps its traceback on purpose: developers need it, and the fuzz tests
(``tests/cli/test_fuzz_cli.py``) fail on it. ``main`` returns the exit code rather than exiting, so
tests call it in-process.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from kvviz import commands
from kvviz.common.errors import InputError, quote

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130, as a shell reports a command stopped by Ctrl-C
WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""Errors of writing the output (standard output, ``--timeline``, ``--per-request``) that carry no file name."""


class _Parser(argparse.ArgumentParser):
    def parse_known_args(self, args=None, namespace=None):
        # Python 3.11's argparse turns "--seed=--" into an empty list that no type= ever sees.
        for arg in sys.argv[1:] if args is None else args:
            if arg.startswith("--") and arg.endswith("=--"):
                self.error(f"argument {arg[:-3]}: expected one argument")
        return super().parse_known_args(args, namespace)

    def _check_value(
        self, action, value
    ):  # argparse's, with the value cut as every echo is (kvviz.common.errors.quote)
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: '{quote(value)}' (choose from {choices})")

    def error(self, message: str) -> None:  # argparse's own errors, on one line
        _say(f"{self.prog.removeprefix('python -m ')}: {message}")  # as run-time errors: "kvviz CMD: ..."
        sys.exit(EXIT_BAD_INPUT)


def _say(message: str) -> None:
    """Print an error on exactly one line of stderr (user text may hold line breaks)."""
    print(" ".join(message.splitlines()), file=sys.stderr)


def _command_modules(argv: Sequence[str]) -> list[ModuleType]:
    """The command modules the parser needs: only the named command's, when the name is one.

    A command imports what its work needs (``hitcurve`` numba's kernels, ``blend-eval`` the
    model, ...), so importing every command for every run would cost each one the others' start-up
    time. The module of command ``a-b`` is ``a_b`` or ``a_b_cmd`` (``import`` is a keyword);
    anything else — ``--help``, a typo — loads them all, so argparse can list them.
    """
    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__))
    wanted = argv[0] if argv and not argv[0].startswith("-") else None
    if wanted is not None:
        for name in (wanted.replace("-", "_"), wanted.replace("-", "_") + "_cmd"):
            if name in names:
                module = importlib.import_module(f"{commands.__name__}.{name}")
                if module.NAME == wanted:
                    return [module]
    return [importlib.import_module(f"{commands.__name__}.{name}") for name in names]


def _prog() -> str:
    """How kvviz was called, for usage lines: the installed ``kvviz`` script, or ``python -m kvviz``."""
    return "kvviz" if Path(sys.argv[0]).name == "kvviz" else "python -m kvviz"


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for ``argv``: every command, or only the one ``argv`` names (see ``_command_modules``)."""
    parser = _Parser(prog=_prog(), description="kvviz: how LLM KV caches behave.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in _command_modules(argv):
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:  # a bad argument (already printed on one line), or --help
        return int(exc.code or 0)
    except KeyboardInterrupt:
        return _interrupted("kvviz")
    try:
        return _run(args)
    except KeyboardInterrupt:  # also one raised while an error above was being reported
        return _interrupted(f"kvviz {args.command}")


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command, turning bad input and what the machine refuses into one line."""
    try:
        return int(args.run(args) or 0)
    except InputError as exc:
        _say(f"kvviz {args.command}: {exc}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader left (piped into `head`): nothing more to say to it
        _silence_stdout()
        return 0
    except MemoryError:  # numpy's _ArrayMemoryError too: a trace or a run larger than this machine's memory
        _say(
            f"kvviz {args.command}: not enough free memory for this run on this machine; "
            "give a smaller trace (or fewer requests) or free memory, and run it again"
        )
        return EXIT_BAD_INPUT
    except OSError as exc:
        if exc.filename is not None:
            _say(f"kvviz {args.command}: {exc.filename}: {exc.strerror or exc}")
        elif exc.errno in WRITE_ERRORS:  # writing the output failed: a full disk, /dev/full, a quota
            _silence_stdout()
            _say(f"kvviz {args.command}: cannot write the output: {exc.strerror or exc}")
        else:  # not about a file the user named nor about writing: a bug, keep the traceback
            raise
        return EXIT_BAD_INPUT


def _interrupted(prog: str) -> int:
    """Ctrl-C: one line and the shell's code for SIGINT, never a traceback."""
    _silence_stdout()
    _say(f"{prog}: interrupted")
    return EXIT_INTERRUPTED


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that what is still buffered for a closed pipe or a
    full disk is not flushed again at exit (Python would print "Exception ignored" and a traceback)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture): nothing buffered at exit
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
