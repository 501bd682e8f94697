"""User content shown in markdown: a file name, a CSV header, a message quoting a field."""

from __future__ import annotations

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^&])")
PLAIN_LIMIT = 300


def plain(text: object, limit: int = PLAIN_LIMIT, *, bold: bool = False) -> str:
    """User content made safe to show in markdown: cut to ``limit`` characters and every markdown
    character escaped, so a name such as ``![x](http://host/p.png)`` shows as text and never makes
    a viewer's browser fetch anything. With ``bold``, ``**`` stays bold (for core text that marks
    names in bold around user words)."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit:,} more characters)"
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", text.replace("\n", " "))
    return escaped.replace(r"\*\*", "**") if bold else escaped
