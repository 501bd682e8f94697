"""The one error type that kvviz raises for bad user input.

Pages show its message with ``st.error`` and the CLI prints it on one line and exits 2, so the
message must say what is wrong and where (line, field) in words a user can act on.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: an uploaded file, a number, a name or a URL parameter."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.line = line
        self.field = field
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


def require(condition: bool, message: str, *, field: str | None = None) -> None:
    """Raise InputError(message) unless condition holds: a one-line guard for parameters."""
    if not condition:
        raise InputError(message, field=field)
