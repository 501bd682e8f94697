"""Reading trace bytes safely: every read is capped before it happens, compressed input (gzip,
zstd; detected by magic bytes, never by name) is capped while it streams, and the text comes out
in chunks of whole lines, so memory per chunk stays constant whatever the file's size.
"""

from __future__ import annotations

import io
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kvviz.errors import InputError

MB = 1_000_000
MIB = 2**20
GIB = 2**30
CHUNK_BYTES = 32 * MIB
MAX_LINE_BYTES = 4 * MIB

Source = str | Path | bytes | bytearray | IO[bytes] | IO[str]


@dataclass(frozen=True)
class Limits:
    """How much one trace may take: its bytes as given (compressed or not), and its text."""

    file_bytes: int
    text_bytes: int

    def describe(self) -> str:
        return f"{self.file_bytes / MIB:,.0f} MiB as given, {self.text_bytes / MIB:,.0f} MiB of text"


UPLOAD_LIMIT_MIB = 200
UPLOADS = Limits(UPLOAD_LIMIT_MIB * MIB, 2 * GIB)
"""Browser uploads (also ``server.maxUploadSize`` in .streamlit/config.toml, in MiB)."""
FILES = Limits(64 * GIB, 64 * GIB)
"""Files named on the command line (``import``, ``stats``, ...)."""

_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
_UNSUPPORTED = {b"PK\x03\x04": "a zip archive", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"7z\xbc\xaf": "7-zip"}


def open_source(source: Source, limits: Limits) -> tuple[IO[bytes], str]:
    """A binary stream of the source and a display name (a file's own name, never its path)."""
    if isinstance(source, (bytes, bytearray)):
        _check_size(len(source), limits)
        return io.BytesIO(bytes(source)), "uploaded trace"
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            info = path.stat()
        except OSError as exc:
            raise InputError(f"cannot open trace file '{path.name}': {exc.strerror or exc}") from None
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"'{path.name}' is a folder, not a trace file")
        if stat.S_ISREG(info.st_mode):
            _check_size(info.st_size, limits)
        try:
            return _Capped(path.open("rb"), limits), path.name   # pipes and devices: capped as they read
        except OSError as exc:
            raise InputError(f"cannot read trace file '{path.name}': {exc.strerror or exc}") from None
    if hasattr(source, "read"):
        return _Capped(_BinaryView(source), limits), "trace"
    raise InputError(f"cannot load a trace from a {type(source).__name__}")


def _check_size(size: int, limits: Limits) -> None:
    if size > limits.file_bytes:
        raise InputError(f"the file is {size / MIB:,.1f} MiB; the limit is {limits.file_bytes / MIB:,.0f} MiB")


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
            raise InputError(f"the input is larger than {self.limit / MIB:,.0f} MiB, the limit")
        return got

    def close(self) -> None:
        self.inner.close()
        super().close()


def decompressed(raw: IO[bytes], limits: Limits) -> tuple[Iterator[bytes], str]:
    """The stream's bytes in pieces, decompressed if it is gzip or zstd; and the compression's name."""
    head = raw.read(8)
    for magic, what in _UNSUPPORTED.items():
        if head.startswith(magic):
            raise InputError(f"the file is {what}; kvviz reads plain text, .gz and .zst")
    if head.startswith(_GZIP):
        return _capped_pieces(_gunzip(head, raw), limits, "gzip"), "gzip"
    if head.startswith(_ZSTD):
        return _capped_pieces(_unzstd(head, raw), limits, "zstd"), "zstd"
    return _capped_pieces(_plain(head, raw), limits, ""), ""


def _plain(head: bytes, raw: IO[bytes]) -> Iterator[bytes]:
    yield head
    while piece := raw.read(CHUNK_BYTES):
        yield piece


def _gunzip(head: bytes, raw: IO[bytes]) -> Iterator[bytes]:
    """gzip, member after member, at most CHUNK_BYTES of output per step (a bomb never inflates at once)."""
    pending, inflate = head, zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        if not pending:
            pending = raw.read(MIB)
            if not pending:
                if not inflate.eof and inflate.unconsumed_tail == b"":
                    raise InputError("the gzip file is truncated")
                return
        try:
            out = inflate.decompress(pending, CHUNK_BYTES)
        except zlib.error as exc:
            raise InputError(f"the gzip data is corrupt ({exc})") from None
        yield out
        pending = inflate.unconsumed_tail
        if inflate.eof:
            pending = inflate.unused_data + pending
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            if not pending:
                pending = raw.read(MIB)
                if not pending:
                    return


def _unzstd(head: bytes, raw: IO[bytes]) -> Iterator[bytes]:
    import zstandard

    class _Rejoined(io.RawIOBase):
        first = head

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            if self.first:
                out, self.first = self.first, b""
                return out
            return raw.read(n)

    reader = zstandard.ZstdDecompressor().stream_reader(_Rejoined(), read_across_frames=True)
    try:
        while piece := reader.read(CHUNK_BYTES):
            yield piece
    except zstandard.ZstdError as exc:
        raise InputError(f"the zstd data is corrupt ({exc})") from None


def _capped_pieces(pieces: Iterator[bytes], limits: Limits, what: str) -> Iterator[bytes]:
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > limits.text_bytes:
            kind = f"{what} data decompresses" if what else "the text is"
            raise InputError(f"{kind} to more than {limits.text_bytes / MIB:,.0f} MiB, the limit")
        yield piece


def line_chunks(pieces: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """Whole-line chunks of about CHUNK_BYTES, each with the number of its first line.

    A run of more than MAX_LINE_BYTES without a line break is refused as soon as it is seen (no
    trace has one; a device such as /dev/zero or a binary file would otherwise be read to the end).
    """
    carry, line_no = b"", 1
    for piece in pieces:
        buf = carry + piece if carry else piece
        cut = buf.rfind(b"\n") + 1
        if cut == 0:
            if len(buf) > MAX_LINE_BYTES:
                raise InputError(f"longer than {MAX_LINE_BYTES // MIB} MiB without a line break "
                                 "(not a text trace?)", line=line_no)
            carry = buf
            continue
        chunk, carry = buf[:cut], buf[cut:]
        yield line_no, chunk
        line_no += chunk.count(b"\n")
    if carry:
        if len(carry) > MAX_LINE_BYTES:
            raise InputError(f"longer than {MAX_LINE_BYTES // MIB} MiB without a line break", line=line_no)
        yield line_no, carry + b"\n"
