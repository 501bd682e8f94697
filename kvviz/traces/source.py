"""Reading trace bytes safely: every read is capped before it happens, compressed input (gzip,
zstd; detected by magic bytes, never by name) is capped while it streams, and the text comes out
in chunks of whole lines, so memory per chunk stays constant whatever the file's size.

A compressed file is also measured as it expands: past ``RATIO_ALLOWANCE`` of text, text more
than ``MAX_RATIO`` times the compressed bytes it came from is refused as a decompression bomb,
so a bomb costs one allowance of parsing, never its full size. The ceilings lie between what
traces reach and what repeated text reaches, per format (deflate's short matches cap gzip far
lower than zstd; measured in docs/traces.md, *Limits*). Each decompressor call is bounded in
output too: zlib's by its ``max_length``, zstd's by the input it is fed (``ZSTD_STEP``).
"""

from __future__ import annotations

import io
import os
import re
import stat
import zlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from kvviz.common.errors import InputError, quote

MB = 1_000_000
MIB = 2**20
GIB = 2**30
CHUNK_BYTES = 16 * MIB
READ_BYTES = MIB  # compressed bytes read at a time
MAX_LINE_BYTES = 4 * MIB
MAX_REQUESTS = 100_000_000
MAX_ACCESSES = 1_000_000_000  # block ids in one trace (the documented ceiling is 500M)
RATIO_ALLOWANCE = 32 * MIB  # text any compressed file may expand to before its ratio counts
MAX_RATIO = {"gzip": 100, "zstd": 400}  # text per compressed byte past the allowance: more is a bomb
ZSTD_STEP = 1024  # bytes fed to zstd per call: at most 32 MiB out (an RLE block is 4 bytes for 128 KiB)

Source = str | Path | bytes | bytearray | IO[bytes] | IO[str]


@dataclass(frozen=True)
class Limits:
    """How much one trace may take: its bytes as given (compressed or not), its text once
    decompressed, and the requests and block ids it becomes (the arrays memory holds)."""

    file_bytes: int
    text_bytes: int
    requests: int = MAX_REQUESTS
    block_ids: int = MAX_ACCESSES

    def describe(self) -> str:
        """The limits in one sentence, for the people who give a trace."""
        return (
            f"Up to {_size(self.file_bytes)} as given (a compressed file counts compressed), "
            f"{_size(self.text_bytes)} of text once decompressed, {self.requests:,} requests and "
            f"{self.block_ids:,} block ids; a gzip file that expands more than {MAX_RATIO['gzip']}×, "
            f"or a zstd file more than {MAX_RATIO['zstd']}×, is refused as a decompression bomb."
        )


def _size(n: int) -> str:
    """Bytes in the largest binary unit they reach: whole when exact ("2 GiB"), else one decimal."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (1024, "KiB")):
        if n >= unit:
            return f"{n / unit:,.{0 if n % unit == 0 else 1}f} {name}"
    return f"{n:,} bytes"


UPLOAD_LIMIT_MIB = 200
UPLOADS = Limits(UPLOAD_LIMIT_MIB * MIB, 2 * GIB, 10_000_000, 200_000_000)
"""Browser uploads (also ``server.maxUploadSize`` in .streamlit/config.toml, in MiB): their arrays
stay near a gigabyte at most (10M requests of 32 bytes, 200M ids of 4; docs/traces.md, *Limits*)."""
FILES = Limits(64 * GIB, 64 * GIB)
"""Files named on the command line (``import``, ``stats``, ...)."""

_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
_SKIPPABLE = re.compile(rb"[\x50-\x5f]\x2a\x4d\x18", re.DOTALL)  # a zstd skippable frame (pzstd puts one first)
_UNSUPPORTED = {b"PK\x03\x04": "a zip archive", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"7z\xbc\xaf": "7-zip"}


def open_source(source: Source, limits: Limits) -> tuple[IO[bytes], str]:
    """A binary stream of the source and a display name (a file's own name, never its path)."""
    if isinstance(source, (bytes, bytearray)):
        _check_size(len(source), limits)
        return io.BytesIO(bytes(source)), "uploaded trace"
    if isinstance(source, (str, Path)):
        path = Path(source)
        file = open_regular(path, "trace file")
        try:
            _check_size(os.fstat(file.fileno()).st_size, limits)
        except InputError:
            file.close()
            raise
        return _Capped(file, limits), path.name
    if hasattr(source, "read"):
        return _Capped(_BinaryView(source), limits), "trace"
    raise InputError(f"cannot load a trace from a {type(source).__name__}")


def open_regular(path: str | Path, what: str) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file; a folder, a pipe (FIFO), a device or a
    socket is refused in one line naming ``what``, never waited on: the file is opened without
    blocking (a FIFO with no writer would block ``open`` itself) and checked on what was opened,
    so nothing can swap it in between."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"cannot open {what} '{quote(path.name)}': {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else "a device or socket"
        raise InputError(f"'{quote(path.name)}' is {kind}, not a regular file: a {what} must be a file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``), refused past ``limit`` bytes."""
    with open_regular(path, what) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"the {what} '{quote(Path(path).name)}' is larger than {_size(limit)}, the limit")
    return data


def _check_size(size: int, limits: Limits) -> None:
    if size > limits.file_bytes:
        raise InputError(f"the file is {_size(size)}; the limit is {_size(limits.file_bytes)}")


class _BinaryView(io.RawIOBase):
    """Bytes from a file object that may return text."""

    def __init__(self, inner: IO) -> None:
        self.inner = inner

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        got = self.inner.read(n)
        return got.encode("utf-8") if isinstance(got, str) else bytes(got)


class _Capped(io.RawIOBase):
    """A stream that refuses to give more than ``limits.file_bytes`` bytes."""

    def __init__(self, inner: IO[bytes], limits: Limits) -> None:
        self.inner, self.limit, self.seen = inner, limits.file_bytes, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = CHUNK_BYTES if n is None or n < 0 else n
        got = self.inner.read(min(n, self.limit + 1 - self.seen))
        self.seen += len(got)
        if self.seen > self.limit:
            raise InputError(f"the input is larger than {_size(self.limit)}, the limit")
        return got

    def close(self) -> None:
        self.inner.close()
        super().close()


class Text:
    """A stream's text in pieces of about CHUNK_BYTES, decompressed if it is gzip or zstd (one pass).

    ``compression`` names it ("gzip", "zstd" or ""); ``taken`` counts the bytes the decompressor
    consumed and ``given`` the text it produced, which the limits are checked against at every
    decompressor call (and which say how far a refused bomb got).
    """

    def __init__(self, raw: IO[bytes], limits: Limits) -> None:
        self.raw, self.limits = raw, limits
        self.head = raw.read(8)
        for magic, what in _UNSUPPORTED.items():
            if self.head.startswith(magic):
                raise InputError(f"the file is {what}; kvviz reads plain text, .gz and .zst")
        self.compression = compression_of(self.head)
        self.taken = self.given = 0

    def __iter__(self) -> Iterator[bytes]:
        outputs = {"gzip": self._gunzip, "zstd": self._unzstd, "": self._plain}[self.compression]()
        return _gathered(outputs)

    def _blocks(self, size: int) -> Iterator[bytes]:
        yield self.head
        while block := self.raw.read(size):
            yield block

    def _plain(self) -> Iterator[bytes]:
        for piece in self._blocks(CHUNK_BYTES):
            self.taken += len(piece)
            yield self._gave(piece)

    def _gunzip(self) -> Iterator[bytes]:
        """gzip, member after member; each call gives at most CHUNK_BYTES, and is called again
        while it gives that much (zlib may hold output for input it has already taken)."""
        inflate, full = None, False
        for pending in self._blocks(READ_BYTES):
            while pending or full:
                if inflate is None:
                    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                try:
                    out = inflate.decompress(pending, CHUNK_BYTES)
                except zlib.error as exc:
                    raise InputError(f"the gzip data is corrupt ({exc})") from None
                # at a member's end CPython may leave the rest in unconsumed_tail as well: unused_data is it
                rest = inflate.unused_data if inflate.eof else inflate.unconsumed_tail
                self.taken += len(pending) - len(rest)
                full, pending = len(out) == CHUNK_BYTES and not inflate.eof, rest
                if inflate.eof:
                    inflate = None
                yield self._gave(out)
        if inflate is not None:
            raise InputError("the gzip file is truncated")

    def _unzstd(self) -> Iterator[bytes]:
        """zstd, frame after frame, fed ZSTD_STEP bytes per call; a frame the file ends inside is
        refused as truncated. A skippable frame (``pzstd`` writes one first, giving its frames'
        sizes) is passed over as the ``zstd`` tool does: the decompressor ends it with no output."""
        import zstandard

        dctx, frame = zstandard.ZstdDecompressor(), None
        for block in self._blocks(READ_BYTES):
            view, pos = memoryview(block), 0
            while pos < len(view):
                if frame is None:
                    frame = dctx.decompressobj()
                step = view[pos : pos + ZSTD_STEP]
                try:
                    out = frame.decompress(step)
                except zstandard.ZstdError as exc:
                    raise InputError(_zstd_problem(exc)) from None
                used = len(step) - (len(frame.unused_data) if frame.eof else 0)
                pos, self.taken = pos + used, self.taken + used
                if frame.eof:
                    frame = None
                yield self._gave(out)
        if frame is not None:
            raise InputError("the zstd file is truncated")

    def _gave(self, out: bytes) -> bytes:
        """Count ``out`` as text given, refusing it past the text limit or the ratio."""
        self.given += len(out)
        if self.given > self.limits.text_bytes:
            what = f"the {self.compression} data decompresses to" if self.compression else "the text is"
            raise InputError(f"{what} more than {_size(self.limits.text_bytes)}, the limit")
        ratio = MAX_RATIO.get(self.compression)
        if ratio and self.given > RATIO_ALLOWANCE and self.given > ratio * self.taken:
            raise InputError(
                f"the {self.compression} data expands more than {ratio}× "
                f"({_size(self.taken)} to {_size(self.given)}): refused as a "
                "decompression bomb; a real trace that compresses this well can be given "
                "decompressed"
            )
        return out


def compression_of(head: bytes) -> str:
    """ "gzip", "zstd" or "" (plain) from a stream's first bytes."""
    if head.startswith(_GZIP):
        return "gzip"
    return "zstd" if head.startswith(_ZSTD) or _SKIPPABLE.match(head) is not None else ""


def text_bound(source: Source, limits: Limits) -> int | None:
    """The most text ``source`` can give under ``limits`` (decompressed, past which it is refused),
    from its size and first bytes alone; None for a stream, whose size is not known."""
    if isinstance(source, (bytes, bytearray)):
        size, head = len(source), bytes(source[:8])
    elif isinstance(source, (str, Path)):
        with open_regular(source, "trace file") as file:
            size, head = os.fstat(file.fileno()).st_size, file.read(8)
    else:
        return None
    packed = compression_of(head)
    return min(limits.text_bytes, RATIO_ALLOWANCE + MAX_RATIO[packed] * size if packed else size)


def _zstd_problem(exc: Exception) -> str:
    if "too much memory" in str(exc):
        return (
            "the zstd file needs a window of more than 128 MiB to decompress (compressed with --long?); "
            "compress it again without --long"
        )
    return f"the zstd data is corrupt ({exc})"


def _gathered(outputs: Iterator[bytes]) -> Iterator[bytes]:
    """Decompressor outputs joined into pieces of at least CHUNK_BYTES (the last one shorter)."""
    parts, size = [], 0
    for out in outputs:
        parts.append(out)
        size += len(out)
        if size >= CHUNK_BYTES:
            yield b"".join(parts)
            parts, size = [], 0
    if size:
        yield b"".join(parts)


def count_of(chunk: bytes, byte: bytes) -> int:
    """How often ``byte`` (one byte) occurs in ``chunk``: one vectorised comparison, two to three
    times faster than ``bytes.count`` on trace text, whose many matches slow its search loop."""
    return int(np.count_nonzero(np.frombuffer(chunk, np.uint8) == ord(byte)))


def line_chunks(pieces: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """Whole-line chunks of about CHUNK_BYTES, each with the number of its first line.

    A line of more than MAX_LINE_BYTES is refused as soon as it is seen (no trace has one; a
    binary file would otherwise be read to the end), inside a chunk as at its end.
    """
    carry, line_no = b"", 1
    for piece in pieces:
        cut = piece.rfind(b"\n") + 1  # the carry holds no line break
        if cut == 0:
            carry += piece
            if len(carry) > MAX_LINE_BYTES:
                raise InputError(
                    f"longer than {MAX_LINE_BYTES // MIB} MiB without a line break (not a text trace?)", line=line_no
                )
            continue
        # the carry and the piece's whole lines copied once (a piece of whole lines not at all)
        chunk = b"".join((carry, memoryview(piece)[:cut])) if carry or cut < len(piece) else piece
        carry = piece[cut:]
        _check_line_lengths(chunk, line_no)
        yield line_no, chunk
        line_no += count_of(chunk, b"\n")
    if carry:
        if len(carry) > MAX_LINE_BYTES:
            raise InputError(f"longer than {MAX_LINE_BYTES // MIB} MiB without a line break", line=line_no)
        yield line_no, carry + b"\n"


def _check_line_lengths(chunk: bytes, line_no: int) -> None:
    """Refuse a line of ``chunk`` (whole lines, from line ``line_no``) longer than MAX_LINE_BYTES.
    Every window of half that length holds a line break unless a line there is that long, so only
    such a window's neighbourhood is measured exactly."""
    half = MAX_LINE_BYTES // 2
    for start in range(0, len(chunk) - half, half):
        if chunk.find(b"\n", start, start + half) >= 0:
            continue
        low = chunk.rfind(b"\n", 0, start) + 1
        end = chunk.find(b"\n", start)
        if end - low > MAX_LINE_BYTES:
            raise InputError(
                f"a line of {_size(end - low)}, longer than {MAX_LINE_BYTES // MIB} MiB (no trace record is that long)",
                line=line_no + chunk.count(b"\n", 0, low),
            )


@dataclass(frozen=True)
class Survey:
    """What a trace's text holds, counted without parsing it: its bytes once decompressed, its lines,
    and an upper estimate of its block ids (per piece, its commas or its spaces, whichever are more:
    JSONL separates ids by commas, CSV by spaces; a record's other fields add a few per line)."""

    text_bytes: int
    lines: int
    ids: int


def survey(source: Source, limits: Limits) -> Survey:
    """Count a trace's text (decompressing it under every limit, and refusing an over-long line, as
    reading it does; keeping none of it), so that what reading it needs is known before that memory
    is spent. Each chunk's ids are counted on a second thread while the next chunk is read (numpy's
    comparisons run without the interpreter's lock): two chunks in memory at a time, at most."""
    raw, _ = open_source(source, limits)
    size = ids = 0
    first_of_last, last = 1, b""  # the lines are the last chunk's first line number and its own
    counting: Future[int] | None = None
    with raw, ThreadPoolExecutor(1, thread_name_prefix="kvviz-count") as pool:
        for line_no, chunk in line_chunks(iter(Text(raw, limits))):  # refusing what reading refuses first
            size, first_of_last, last = size + len(chunk), line_no, chunk
            ids += counting.result() if counting is not None else 0
            counting = pool.submit(_ids_at_most, chunk)
        ids += counting.result() if counting is not None else 0
    return Survey(size, first_of_last - 1 + last.count(b"\n"), ids)


def _ids_at_most(chunk: bytes) -> int:
    """An upper estimate of the block ids in a chunk of text (see ``Survey``)."""
    return max(count_of(chunk, b","), count_of(chunk, b" "))
