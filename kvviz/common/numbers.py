"""Numbers in the words a viewer reads: one formatter for every note, caption and exercise."""

from __future__ import annotations

import math


def readable(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, thousands grouped, never in scientific notation:
    2,490 (not 2.49e+03 for 2,490.3), 0.728, 0.5, 0.000123; a whole number whole (327,680). Zeros
    after the point go. The one formatter for numbers in text a viewer reads (notes, captions, exercises)."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    exponent = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - exponent
    rounded = round(value, decimals)
    if rounded and math.floor(math.log10(abs(rounded))) > exponent:  # 9.996 rounds up to 10.0
        decimals -= 1
    text = f"{rounded:,.{max(0, decimals)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
