"""The one error type that kvviz raises for bad user input.

Pages show its message with ``st.error`` and the CLI prints it on one line and exits 2, so the
message must say what is wrong and where (line, field) in words a user can act on.
"""

from __future__ import annotations

import math
import os

QUOTE = 40
"""Characters of user content (a value, a path, an id) quoted in a message."""
FIELD_WORDS = {"hash_ids": "the block-hash column"}
"""Fields a message names by what they hold, not by their name in code."""


class InputError(ValueError):
    """Bad user input: an uploaded file, a number, a name or a URL parameter."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.line = line
        self.field = field
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(FIELD_WORDS.get(field, f"field '{field}'"))
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class SettingError(InputError):
    """A setting (an environment variable the server's operator sets) is not usable."""


def setting(name: str, default: float, low: float, high: float, what: str) -> float:
    """A number from the environment within [low, high], or ``default`` when unset; anything else
    (text, nan, inf, out of range) is refused naming the variable, never replaced by the default."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # nan and ±inf fail here too
        raise SettingError(f"the environment variable {name} is {raw[:40]!r}: give {what}")
    return value


def require(condition: bool, message: str, *, field: str | None = None) -> None:
    """Raise InputError(message) unless condition holds: a one-line guard for parameters."""
    if not condition:
        raise InputError(message, field=field)


def quote(text: object, limit: int = QUOTE) -> str:
    """User content cut to ``limit`` characters for a message, saying how long it was: a 10 kB
    argument is named by its start, never echoed whole."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"
