"""Decompression bombs for the tests and bench/bench_bombs.py: small gzip and zstd files that
expand to 12 GiB, built in well under a second.

Each bomb is a few blocks of text, each compressed once and repeated: concatenated gzip members
and zstd frames are one valid file, so a block of 32 MiB repeated 384 times is 12 GiB of text
from a few hundred kilobytes to a few megabytes.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

import zstandard

GIB = 2**30
BLOCK = 32 * 2**20
EXPANDS_TO = 12 * GIB

LINE = b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
# the most ids a Mooncake line may carry: ceil(10,000,000 / 512) for the longest prompt kvviz accepts
MANY_IDS = 19_532
ID_LINE = (
    b'{"timestamp": 0, "input_length": 10000000, "output_length": 1, "hash_ids": [' + b"1, " * (MANY_IDS - 1) + b"1]}\n"
)

PACKERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda block: gzip.compress(block, 6, mtime=0),
    "zstd": lambda block: zstandard.ZstdCompressor(level=3).compress(block),
}


def _repeated(line: bytes) -> bytes:
    return line * (BLOCK // len(line))


def _one_line_of_ids() -> list[tuple[bytes, int]]:
    """One request with about 10^9 ids (4 bytes of text each would be 4 GiB; here 12 GiB of them)."""
    head = b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": ['
    body = b"1, " * (BLOCK // 3)
    return [(head, 1), (body, EXPANDS_TO // len(body)), (b"1]}\n", 1)]


CONTENTS: dict[str, Callable[[], list[tuple[bytes, int]]]] = {
    "zeros": lambda: [(bytes(BLOCK), EXPANDS_TO // BLOCK)],
    "lines": lambda: [(_repeated(LINE), EXPANDS_TO // BLOCK)],
    "one request of 10^9 ids": _one_line_of_ids,
    "lines of 19,532 ids": lambda: [(_repeated(ID_LINE), EXPANDS_TO // BLOCK)],
}
"""What a bomb expands to, as (block, times repeated) pairs."""


def bomb(compression: str, content: str) -> bytes:
    """A ``compression`` ("gzip" or "zstd") file of ``content`` (a key of CONTENTS), about 12 GiB
    of text."""
    pack = PACKERS[compression]
    return b"".join(pack(block) * times for block, times in CONTENTS[content]())


def expanded_size(content: str) -> int:
    """The bytes of text ``bomb(_, content)`` decompresses to."""
    return sum(len(block) * times for block, times in CONTENTS[content]())
