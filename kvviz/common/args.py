"""Typed, ranged command-line arguments: argparse ``type=`` callables for every kvviz command.

Each callable turns one argument's text into a value or raises ``argparse.ArgumentTypeError``
with a message a user can act on, so argparse reports it on one line (``argument --seed: ...``)
and the CLI exits 2 before any work starts. The ranges here are sanity bounds of the command
line: they keep values finite, of the right sign and small enough that no simulation can be asked
for unbounded memory or time. A mechanism's own rules (say, "chunk ≤ context") stay in its
config's ``validate``, which raises ``InputError`` with the precise rule.

Output paths are checked before the work too: a ``--timeline`` into a missing folder fails at
once rather than after a long simulation.

An option that does not apply to the run asked for (``--sample`` with the prefix cache, a script
beside ``--trace``) is refused by ``refuse``, not ignored. To tell an option given from one left
out, such options default to ``None`` (a switch to ``False``) and the command resolves the default
itself. Every user-given string in a message is cut by ``kvviz.common.errors.quote``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from kvviz.common.errors import InputError, quote

MAX_SEED = 2**32 - 1
"""Seeds are 0 .. 2^32 − 1: numpy refuses negative seeds, and 32 bits is the classic seed range."""
MAX_COUNT = 10**9
"""The largest count any command accepts before its own check; far beyond every real limit."""
MAX_MAGNITUDE = 1e12
"""The largest magnitude of a float argument unless a command says otherwise."""


def _fail(message: str) -> None:
    raise argparse.ArgumentTypeError(message)


def _span(lo: float, hi: float) -> str:
    return f"{lo:,g}..{hi:,g}" if isinstance(lo, float) or isinstance(hi, float) else f"{lo:,}..{hi:,}"


_WHOLE = re.compile(r"\s*[+-]?[0-9]{1,30}\s*")


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """A whole number in ``lo..hi`` (decimal digits only, at most 30 of them)."""

    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text):
            _fail(f"expected a whole number in {_span(lo, hi)}, got '{quote(text)}'")
        value = int(text)
        if not lo <= value <= hi:
            _fail(f"must be in {_span(lo, hi)}, got {quote(text)}")
        return value

    parse.__name__ = "whole number"
    return parse


def bounded_float(lo: float, hi: float, *, lo_open: bool = False, allow_inf: bool = False) -> Callable[[str], float]:
    """A finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); ``inf`` only with ``allow_inf``."""
    low = "(" if lo_open else "["
    span = f"{low}{lo:g}, {hi:g}]" + (" or inf" if allow_inf else "")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            _fail(f"expected a number in {span}, got '{quote(text)}'")
        if allow_inf and value == math.inf:
            return value
        if not math.isfinite(value):
            _fail(f"must be a finite number in {span}, got {quote(text)}")
        if value < lo or (lo_open and value == lo) or value > hi:
            _fail(f"must be in {span}, got {quote(text)}")
        return value

    parse.__name__ = "number"
    return parse


seed = bounded_int(0, MAX_SEED)
"""A random seed, 0 .. 2^32 − 1."""
count = bounded_int(1, MAX_COUNT)
"""A positive count (tokens, instances, documents ...) whose precise limit the command checks."""
positive = bounded_float(0.0, MAX_MAGNITUDE, lo_open=True)
"""A finite number > 0 (a rate, a time, a speed-up)."""
non_negative = bounded_float(0.0, MAX_MAGNITUDE)
"""A finite number ≥ 0."""
fraction = bounded_float(0.0, 1.0)
"""A number in [0, 1]."""

_SIZE = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,9})?)\s*(B|KiB|MiB|GiB|TiB|PiB|KB|MB|GB|TB|PB)?\s*", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    **{u: 1024**k for k, u in enumerate(("kib", "mib", "gib", "tib", "pib"), start=1)},
    **{u: 1000**k for k, u in enumerate(("kb", "mb", "gb", "tb", "pb"), start=1)},
}


def size_gib(text: str) -> float:
    """A memory or disk size with its unit (``500GiB``, ``2TiB``, ``64GB``; a bare number is GiB;
    ``inf`` is unbounded), in GiB, at most a million TiB."""
    if text.strip().lower() == "inf":
        return math.inf
    match = _SIZE.fullmatch(text)
    if not match:
        _fail(f"expected a size such as 500GiB, 2TiB or 64GB (a bare number is GiB), got '{quote(text)}'")
    unit = (match.group(2) or "gib").lower()
    gib = float(match.group(1)) * _SIZE_UNITS[unit] / 1024**3
    if gib > 2**30:
        _fail(f"must be at most 1,000,000 TiB, got {quote(text)}")
    return gib


size_gib.__name__ = "size"


def output_path(text: str) -> Path:
    """A file to write: its folder must exist and be writable, and it must not be a folder itself."""
    path = Path(text)
    try:
        if not text.strip() or path.is_dir():
            _fail(f"'{quote(text)}' is a folder, not a file to write")
        if not path.parent.is_dir():
            _fail(f"cannot write {quote(text)}: its folder does not exist")
        if not os.access(path.parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
            _fail(f"cannot write {quote(text)}: permission denied")
    except OSError as exc:  # e.g. a name too long for the file system
        _fail(f"cannot write {quote(text)}: {exc.strerror or exc}")
    return path


def input_file(text: str) -> str:
    """A file to read: it must exist, be a regular file (not a folder or a device) and be readable."""
    path = Path(text)
    try:
        if not path.exists():
            _fail(f"no such file: {quote(text)}")
        if not path.is_file():
            _fail(f"{quote(text)} is not a regular file")
        if not os.access(path, os.R_OK):
            _fail(f"cannot read {quote(text)}: permission denied")
    except OSError as exc:
        _fail(f"cannot read {quote(text)}: {exc.strerror or exc}")
    return text


def name_or_file(names: Sequence[str]) -> Callable[[str], str]:
    """One of ``names``, or else a readable regular file (e.g. a bandwidth kind or a CSV of one)."""

    def parse(text: str) -> str:
        if text in names:
            return text
        try:
            return input_file(text)
        except argparse.ArgumentTypeError as exc:
            _fail(f"expected {' | '.join(names)} or a file; {exc}")

    parse.__name__ = "name or file"
    return parse


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the option stored in ``dest`` was given: it holds something other than its
    "not given" default (``None``, or ``False`` for a switch)."""
    value = getattr(args, dest)
    return value is not None and value is not False


def refuse(args: argparse.Namespace, flags: Sequence[str], reason: str) -> None:
    """Refuse the first of ``flags`` that was given, with ``reason``: why it does not apply here
    ("--sample applies to --cache block; ..."). A flag's value is in ``args`` under its name
    without the dashes, ``-`` as ``_``."""
    for flag in flags:
        if given(args, flag.lstrip("-").replace("-", "_")):
            raise InputError(f"{flag} {reason}")
