"""Loading a trace file of any size: stream, parse chunk by chunk, check whole columns, assemble.

Memory per chunk is constant (``source.CHUNK_BYTES`` of text), a chunk whose requests or ids
would pass the ``Limits`` is refused before it is kept, and assembly holds the result plus a
slice; the result is columnar: int64 ms arrivals, int32 block ids (renumbered densely when the
file's ids do not fit 32 bits), int64 offsets. Bad rows raise ``InputError`` naming line and field, or with
``skip_bad_rows`` are counted by reason and left out. Formats: ``kvviz.traces.formats``; time units:
``kvviz.traces.timeunits``.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from kvviz.common import budget
from kvviz.common.errors import InputError
from kvviz.traces import formats as F
from kvviz.traces.formats import Format, FormatSpec, RawChunk, RowError
from kvviz.traces.model import Trace, from_arrays
from kvviz.traces.source import (  # noqa: F401  (kvviz.traces exports them from here)
    FILES,
    MAX_ACCESSES,
    MAX_REQUESTS,
    MIB,
    Limits,
    Source,
    Survey,
    Text,
    line_chunks,
    open_source,
    survey,
    text_bound,
)
from kvviz.traces.timeunits import TimeUnit, out_of_range, range_problem, to_ms

MAX_INPUT_LENGTH = 10_000_000  # tokens; longer is not a real prompt
MAX_OUTPUT_LENGTH = 1_000_000
LINES_SHOWN = 3
MAX_BLOCK_SIZE = 1 << 20
SMALL_TEXT = 65_536  # a first chunk this short is parsed line by line (no pyarrow start-up)
RELEASE_BYTES = 16 << 20  # column bytes _concat copies between handing freed memory back
# What reading a trace holds at its peak (docs/traces.md, *Scale*: 11.4 bytes per access measured at
# 500.7M accesses), and how fast it goes: by its text (226 MB of Mooncake JSONL, 16.5M ids, in 2.4 CPU s)
# or by its ids, whichever takes longer (19M ids of one digit, 38 MB, in 2.25 CPU s):
BYTES_PER_ID = 12  # int32 ids as chunks stream in, then the whole column while the chunks are released
BYTES_PER_REQUEST = 64  # arrival, lengths, id count, offset and line per request, and the request table
PARSE_BYTES = 320 * MIB  # a chunk's parse (pyarrow holds ~14 bytes per byte of id-dense text) and the one before
TEXT_PER_CPU_S = 94e6  # bytes of text parsed per CPU second
IDS_PER_CPU_S = 8.4e6  # block ids parsed per CPU second
MIN_LINE = 6  # bytes of the shortest record ("0,1,1" and its line break): at most this many requests per byte
TRACE_KNOB = "the trace's size (fewer requests)"  # what reduces the reading's work and memory
TRACE_ADVICE = "cut the trace (fewer requests), or read it where more memory is free"


@dataclass(frozen=True)
class ReadOptions:
    """How to read a trace; ``None`` means "the format's own default" (and the notes say so)."""

    format: Format | None = None
    block_size: int | None = None
    time_unit: TimeUnit | None = None
    columns: tuple[tuple[str, str], ...] = ()  # CSV role → column, e.g. (("arrival", "t"), ...)
    skip_bad_rows: bool = False
    rechain: bool | None = None  # per-block ids → prefix ids (default: when not chained)


class Rejects:
    """Bad rows: raised at once (strict), or counted by reason with their first line numbers."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.counts: Counter[str] = Counter()
        self.lines: dict[str, list[int]] = {}

    def __call__(self, err: RowError) -> None:
        if not self.skip:
            raise err
        self.counts[err.reason] += 1
        shown = self.lines.setdefault(err.reason, [])
        if len(shown) < LINES_SHOWN:
            shown.append(err.line)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        parts = [
            f"{n:,} × {reason} (line{'s' if n > 1 else ''} {', '.join(map(str, self.lines[reason]))}"
            f"{', …' if n > LINES_SHOWN else ''})"
            for reason, n in self.counts.most_common()
        ]
        return f"skipped {self.total:,} bad row{'s' if self.total > 1 else ''}: " + "; ".join(parts)


def load_trace(
    source: Source,
    block_size: int | None = None,
    *,
    name: str | None = None,
    options: ReadOptions | None = None,
    limits: Limits = FILES,
    counted: Survey | None = None,
) -> Trace:
    """Load a trace from a path, bytes or a binary/text file object (format detected, or chosen).
    ``counted``: the source's ``survey`` when the caller has it (the memory check then needs no
    second count)."""
    opts = options or ReadOptions()
    if counted is None:
        check_memory(source, limits)
    else:
        refuse_if_too_large(counted)
    size = block_size if block_size is not None else opts.block_size
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_BLOCK_SIZE):
        raise InputError(
            f"block size must be an integer in 1..{MAX_BLOCK_SIZE:,}, got {F.quote(repr(size))}", field="block_size"
        )
    raw, default_name = open_source(source, limits)
    with raw:
        text = Text(raw, limits)
        reader = _Reader(line_chunks(text), opts, size, text.compression, limits)
        try:
            return reader.read(name or default_name)
        except MemoryError:  # the limits keep a trace under them; a machine may have less free
            raise InputError(
                f"not enough free memory to load this trace ({reader.rows:,} requests and "
                f"{reader.accesses:,} block ids read); cut the trace"
            ) from None
        finally:
            _release_parse_buffers()


def reading_need(counted: Survey) -> int:
    """Bytes of memory reading a trace of these counts holds at its peak."""
    return BYTES_PER_ID * counted.ids + BYTES_PER_REQUEST * counted.lines + PARSE_BYTES


def reading_cost(counted: Survey) -> budget.Cost:
    """The work of reading a trace of these counts, naming its size and the memory it needs."""
    what = _reading(counted, f", {reading_need(counted) / budget.GIB:,.1f} GiB of memory")
    work = max(counted.ids, counted.text_bytes * IDS_PER_CPU_S / TEXT_PER_CPU_S)
    return budget.cost(what, work, "block ids to parse (or their text's worth)", IDS_PER_CPU_S, TRACE_KNOB)


def _reading(counted: Survey, more: str = "") -> str:
    return f"reading this trace (about {counted.ids:,} block ids in {counted.lines:,} requests{more})"


def check_memory(source: Source, limits: Limits) -> None:
    """Refuse, before parsing, a trace whose reading needs more memory than is free. The bound from
    its size alone settles most files; a larger one is counted first (``survey``: decompressed and
    counted, never kept), so a small compressed file that expands into hundreds of millions of ids
    is refused in the time its decompression takes, not after its parse has filled the memory."""
    free, bound = budget.free_memory(), text_bound(source, limits)
    worst = Survey(bound or 0, (bound or 0) // MIN_LINE, (bound or 0) // 2)
    if free is None or bound is None or reading_need(worst) <= free:
        return
    refuse_if_too_large(survey(source, limits))


def refuse_if_too_large(counted: Survey) -> None:
    """Refuse a trace of these counts when reading it needs more memory than is free."""
    budget.check_memory(reading_need(counted), _reading(counted), TRACE_ADVICE)


class _Reader:
    """One pass over a trace's chunks."""

    def __init__(self, chunks, opts: ReadOptions, block_size: int | None, compression: str, limits: Limits) -> None:
        self.chunks, self.opts, self.compression, self.limits = chunks, opts, compression, limits
        self.rejects = Rejects(opts.skip_bad_rows)
        self.parts: list[RawChunk] = []
        self.with_ids: bool | None = None
        self.rows = self.accesses = 0
        self.block_size_chosen = block_size
        self.datetimes: bool | None = None

    def read(self, name: str) -> Trace:
        first = self._first_chunk()
        if first is None:
            raise InputError("the trace is empty: expected one JSON object per line, or a CSV with a header")
        line_no, chunk, first_line = first
        self.fmt = F.detect(first_line, self.opts.format)
        self.spec: FormatSpec = F.SPECS[self.fmt]
        F.require_columns_apply(self.fmt, self.opts.columns)
        self.block_size = self.block_size_chosen or self.spec.block_size
        if self.fmt is Format.CSV:
            self._read_csv(line_no, _decode(chunk, line_no))
        else:
            self._read_jsonl(line_no, chunk)
        if not self.parts or not any(len(p.lines) for p in self.parts):
            if self.rejects.total:
                raise InputError(f"no usable rows: {self.rejects.summary()}")
            raise InputError(
                "the CSV has a header but no requests" if self.fmt is Format.CSV else "the trace has no requests"
            )
        return self._assemble(name)

    def _first_chunk(self) -> tuple[int, bytes, str] | None:
        """The first chunk with more than white space (a byte-order mark dropped), its line and
        its first such line, decoded; the chunk stays bytes (no second copy of it as text)."""
        for line_no, chunk in self.chunks:
            chunk = chunk.removeprefix(_BOM)
            if (line := _first_line(chunk, line_no)) is not None:
                return line_no, chunk, line
        return None

    # ------------------------------------------------------------ formats

    def _read_jsonl(self, line_no: int, chunk: bytes) -> None:
        fast = None if len(chunk) < SMALL_TEXT else F.jsonl_fast(chunk, line_no, self.spec)
        self._add(self._jsonl_chunk(chunk, line_no, fast))
        for line_no, chunk, fast in _parsed_ahead(self.chunks, self.spec):
            self._add(self._jsonl_chunk(chunk, line_no, fast))

    def _jsonl_chunk(self, chunk: bytes, line_no: int, fast: RawChunk | None) -> RawChunk:
        """pyarrow's parse of the chunk, or (None) the line-by-line parser's, which counts the rejects."""
        return fast if fast is not None else F.jsonl_slow(_decode(chunk, line_no), line_no, self.spec, self.rejects)

    def _read_csv(self, line_no: int, text: str) -> None:
        reader = F.csv_reader(itertools.chain([text], (_decode(chunk, n) for n, chunk in self.chunks)))
        header = F.csv_header(reader)
        columns = dict(self.opts.columns) or None
        self.layout = F.csv_layout(header, columns, self.opts.time_unit)
        for lines, cols in F.csv_rows(reader, line_no, self.layout, self.rejects):
            self._add(self._csv_chunk(lines, cols))

    def _csv_chunk(self, lines: np.ndarray, cols: dict[str, list[str]]) -> RawChunk:
        arrival = self.layout.columns["arrival"]
        if self.datetimes is None and cols["arrival"]:
            self.datetimes = _looks_like_date(cols["arrival"][0])  # the first row decides for all
            if self.datetimes and self.opts.time_unit is not None:  # refused, not ignored
                raise InputError(
                    "a time unit applies to numbers; these arrival times are date-times, so leave the time unit out",
                    line=int(lines[0]),
                    field=arrival,
                )
        if self.datetimes:
            times, keep = F.datetimes_ms(cols["arrival"], lines, arrival, self.rejects)
        else:
            times, keep = F.strict_numbers(cols["arrival"], lines, arrival, self.rejects, integer=False)
        inputs, ok_in = F.strict_numbers(cols["input"], lines, self.layout.columns["input"], self.rejects, integer=True)
        outputs, ok_out = F.strict_numbers(
            cols["output"], lines, self.layout.columns["output"], self.rejects, integer=True
        )
        keep &= ok_in & ok_out
        if "hash_ids" in cols:
            ids, counts, ok_ids = F.split_ids(cols["hash_ids"], lines, self.rejects)
            keep &= ok_ids
        else:
            ids, counts = np.zeros(0, np.int64), np.full(len(lines), -1, np.int64)
        raw = RawChunk(
            lines,
            times,
            np.clip(inputs, -1, 2**62).astype(np.int64),
            np.clip(outputs, -1, 2**62).astype(np.int64),
            counts,
            ids,
            datetimes=bool(self.datetimes),
        )
        return _select(raw, keep)

    # ------------------------------------------------------------ checks

    def _add(self, raw: RawChunk) -> None:
        if len(raw.lines) == 0:
            return
        if self.with_ids is None:
            self.with_ids = bool(raw.counts[0] >= 0)
        keep = np.ones(len(raw.lines), bool)
        has = raw.counts >= 0
        unit = TimeUnit.MS if raw.datetimes else self._unit()[0]
        t_field = self.layout.columns["arrival"] if self.fmt is Format.CSV else "timestamp"
        i_field = self.layout.columns["input"] if self.fmt is Format.CSV else "input_length"
        o_field = self.layout.columns["output"] if self.fmt is Format.CSV else "output_length"
        checks: list[tuple[np.ndarray, str, Callable[[int], str], str]] = [
            (
                has != self.with_ids,
                "hash_ids",
                lambda k: "missing" if self.with_ids else "present on some lines and not on others",
                "inconsistent",
            ),
            (
                ~np.isfinite(raw.times),
                t_field,
                lambda k: f"expected a finite number, got {raw.times[k]}",
                "not a finite number",
            ),
            (out_of_range(raw.times, unit), t_field, lambda k: range_problem(raw.times[k], unit), "out of range"),
            (
                raw.times < 0 if not raw.datetimes else np.zeros(len(raw.times), bool),
                t_field,
                lambda k: f"must be at least 0, got {raw.times[k]:g}",
                "negative",
            ),
            (raw.inputs < 1, i_field, lambda k: f"must be at least 1, got {raw.inputs[k]}", "too small"),
            (
                raw.inputs > MAX_INPUT_LENGTH,
                i_field,
                lambda k: f"{raw.inputs[k]:,} is absurdly large (limit {MAX_INPUT_LENGTH:,})",
                "absurdly large",
            ),
            (raw.outputs < 0, o_field, lambda k: f"must be at least 0, got {raw.outputs[k]}", "too small"),
            (
                raw.outputs > MAX_OUTPUT_LENGTH,
                o_field,
                lambda k: f"{raw.outputs[k]:,} is absurdly large (limit {MAX_OUTPUT_LENGTH:,})",
                "absurdly large",
            ),
        ]
        for bad, field, message, reason in checks:
            keep = self._reject_where(bad & keep, raw, field, message, reason, keep)
        if self.with_ids:
            keep = self._reject_where(
                keep & ~self._count_ok(raw), raw, "hash_ids", self._count_message(raw), "wrong number of ids", keep
            )
        raw = _select(raw, keep)
        self._count(raw)
        if len(raw.ids) and raw.ids.min() >= 0 and raw.ids.max() < 2**31:
            raw.ids = raw.ids.astype(np.int32)  # 4 bytes per access while the rest streams in
        self.parts.append(raw)

    def _count(self, raw: RawChunk) -> None:
        """Add a checked chunk's requests and ids to the totals, refusing it (before it is kept)
        when they pass the limits."""
        self.rows += len(raw.lines)
        self.accesses += len(raw.ids) if self.with_ids else 0
        for total, most, ceiling, what in (
            (self.rows, self.limits.requests, FILES.requests, "requests"),
            (self.accesses, self.limits.block_ids, FILES.block_ids, "block ids"),
        ):
            if total > most:
                more = f" (the command line reads up to {ceiling:,})" if most < ceiling else ""
                raise InputError(f"more than {most:,} {what}{more}; cut the trace", line=int(raw.lines[-1]))

    def _reject_where(
        self, bad: np.ndarray, raw: RawChunk, field: str, message, reason: str, keep: np.ndarray
    ) -> np.ndarray:
        for k in np.flatnonzero(bad):
            self.rejects(RowError(message(k), line=int(raw.lines[k]), field=field, reason=reason))
        return keep & ~bad

    def _count_ok(self, raw: RawChunk) -> np.ndarray:
        ceil = -(-raw.inputs // self.block_size)
        if self.spec.partial is F.PartialBlock.FLOOR_OR_CEIL:
            return (raw.counts == ceil) | (raw.counts == raw.inputs // self.block_size)
        return raw.counts == ceil

    def _count_message(self, raw: RawChunk):
        either = self.spec.partial is F.PartialBlock.FLOOR_OR_CEIL
        bs = self.block_size

        def message(k: int) -> str:
            n, need = int(raw.inputs[k]), -(-int(raw.inputs[k]) // bs)
            rule = f"{n // bs} or {need}" if either else f"ceil({n}/{bs}) = {need}"
            return f"{int(raw.counts[k])} ids, but input_length {n} needs {rule} (block size {bs})"

        return message

    # ------------------------------------------------------------ assembly

    def _assemble(self, name: str) -> Trace:
        parts = self.parts
        datetimes = self.fmt is Format.CSV and bool(self.datetimes)
        unit, chosen = self._unit()
        t_field = self.layout.columns["arrival"] if self.fmt is Format.CSV else "timestamp"
        arrivals = to_ms(
            _concat(parts, "times"),
            _concat(parts, "lines"),
            TimeUnit.MS if datetimes else unit,
            chosen=chosen or datetimes,
            field=t_field,
        )
        # plain columns: the Trace builds its DataFrame when first asked (kvviz.traces.model)
        frame = {
            "timestamp": arrivals.ms,
            "input_length": _concat(parts, "inputs"),
            "output_length": _concat(parts, "outputs"),
        }
        for column, _ in self.spec.extras:
            frame[column] = np.concatenate([p.extras.pop(column) for p in parts])
        notes = [self._format_note(), *self._time_notes(arrivals.notes, datetimes)]
        warnings = list(arrivals.warnings)
        counts = _concat(parts, "counts") if self.with_ids else np.zeros(len(arrivals.ms), np.int64)
        ids, dense = None, False
        if self.with_ids:
            ids, id_notes, dense = self._ids(_concat(parts, "ids"), counts)
            notes += id_notes
        else:
            notes.append("no block ids: arrivals and lengths only")
        if self.rejects.total:
            warnings.append(self.rejects.summary())
            notes.append(self.rejects.summary())
        else:
            notes.append("no rows skipped")
        return from_arrays(
            frame,
            ids,
            counts,
            block_size=self.block_size,
            name=name,
            warnings=tuple(warnings),
            how_read=tuple(notes),
            ids_dense=dense,
        )

    def _unit(self) -> tuple[TimeUnit, bool]:
        if self.opts.time_unit is not None:
            return self.opts.time_unit, True
        if self.fmt is Format.CSV:  # a column's name implies a unit, as a format does: assumed, and checked
            return self.layout.unit or TimeUnit.MS, False
        return self.spec.time_unit, False

    def _format_note(self) -> str:
        how = "chosen" if self.opts.format is not None else "detected from the fields"
        packed = f", {self.compression}-compressed" if self.compression else ""
        where = f" ({self.layout.describe()})" if self.fmt is Format.CSV else ""
        size = "chosen" if self.block_size_chosen else "the format's default"
        return f"format: {self.spec.title}{where}, {how}{packed}; block size {self.block_size} tokens ({size})"

    def _time_notes(self, notes: tuple[str, ...], datetimes: bool) -> list[str]:
        if not datetimes:
            return list(notes)
        return ["times are date-times, kept relative to the first request", *notes[1:]]

    def _ids(self, flat: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, list[str], bool]:
        """The flat ids as kept, the notes saying how, and whether they were renumbered 0, 1, 2, …
        in order of first use (re-chained ids, and ids beyond 32 bits, are)."""
        dense = False
        offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        notes = []
        rechain_ids = (not self.spec.chained) if self.opts.rechain is None else self.opts.rechain
        if self.spec.chained:
            notes.append("block ids: chained prefix hashes, as in the file")
        if rechain_ids:
            from kvviz.traces.hashing import rechain  # compiled: numba only for traces that need re-chaining

            before = len(flat) - distinct_count(flat)
            flat, dense = dense_ids(rechain(flat, offsets)), True
            after = len(flat) - int(flat.max(initial=-1)) - 1
            lost = before - after
            notes.append(
                f"block ids: re-chained (block k's id = hash of block k−1's chained id and id k) so equal "
                f"ids mean equal prefixes; {lost:,} of {before:,} infinite-cache hits "
                f"({lost / max(len(flat), 1):.2%} of {len(flat):,} accesses) became misses"
            )
        elif not self.spec.chained:
            notes.append(
                "block ids: hashed per block, NOT chained (re-chaining off): an equal id does not mean an equal prefix"
            )
        if flat.dtype != np.int32 and len(flat) and (flat.min() < 0 or flat.max() >= 2**31):
            flat, dense = dense_ids(flat), True
            notes.append("block ids renumbered 0, 1, 2, … in order of first appearance (they did not fit 32 bits)")
        return flat, notes, dense


def _parsed_ahead(
    chunks: Iterator[tuple[int, bytes]], spec: FormatSpec
) -> Iterator[tuple[int, bytes, RawChunk | None]]:
    """Each chunk with pyarrow's parse of it (None: the chunk needs the line-by-line parser), in
    order, the next chunk read and parsed on a thread while the caller checks this one: pyarrow
    parses without the interpreter's lock, so the checks of one chunk run beside the parse of the
    next, and one more chunk is in memory at a time (``PARSE_BYTES``). What reading the next chunk
    raises (a line too long, a decompression error) is raised after this chunk is handed over, as
    reading chunk by chunk would, so a bad row before it is still the one reported."""
    with ThreadPoolExecutor(1, thread_name_prefix="kvviz-parse") as pool:

        def ahead() -> tuple[int, bytes, Future] | None:
            for line_no, chunk in chunks:
                return line_no, chunk, pool.submit(F.jsonl_fast, chunk, line_no, spec)
            return None

        current = ahead()
        while current is not None:
            line_no, chunk, parsed = current
            try:
                current, failed = ahead(), None
            except Exception as exc:  # re-raised below, once this chunk is checked
                current, failed = None, exc
            yield line_no, chunk, parsed.result()
            if failed is not None:
                raise failed


def _concat(parts: list[RawChunk], column: str) -> np.ndarray:
    """One column of every chunk in one array, each chunk's piece released as it is copied and
    handed back to the system every RELEASE_BYTES (peak: the total plus that, not twice the
    total). Ids stay int32 when every chunk's are."""
    pieces = [getattr(p, column) for p in parts]
    if column == "ids":
        dtype = np.int64 if any(x.dtype != np.int32 for x in pieces if len(x)) else np.int32
    else:
        dtype = np.result_type(*pieces)
    out = np.empty(sum(len(x) for x in pieces), dtype)
    del pieces
    start = copied = 0
    for p in parts:
        piece = getattr(p, column)
        out[start : start + len(piece)] = piece
        start, copied = start + len(piece), copied + piece.nbytes
        setattr(p, column, out[:0])
        if copied >= RELEASE_BYTES:
            return_freed_memory()
            copied = 0
    return out


def _release_parse_buffers() -> None:
    """Hand the buffers pyarrow's JSON and CSV parsing freed back to the system: its memory pool
    keeps them for reuse otherwise, tens of MB per chunk of text, long after the trace is read."""
    if (pa := sys.modules.get("pyarrow")) is not None:
        pa.default_memory_pool().release_unused()
    return_freed_memory()


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None elsewhere."""
    return getattr(ctypes.CDLL(None), "malloc_trim", None)


def return_freed_memory() -> None:
    """Give the C heap's free pages back to the system. glibc keeps freed blocks of a chunk's size
    for reuse (past its first large frees it stops giving them their own mappings), so without this
    the chunks' columns released by ``_concat`` would stay resident beside the whole ones."""
    if (trim := _malloc_trim()) is not None:
        trim(0)


_BOM = "\ufeff".encode()
_NOT_ASCII_SPACE = re.compile(rb"[^ \t\n\r\f\v]")


def _first_line(chunk: bytes, line_no: int) -> str | None:
    """The chunk's first line with more than white space, decoded (``line_no``: the chunk's first)."""
    start = 0
    while found := _NOT_ASCII_SPACE.search(chunk, start):
        begin = chunk.rfind(b"\n", 0, found.start()) + 1
        end = chunk.find(b"\n", found.start())
        end = len(chunk) if end < 0 else end
        line = _decode(chunk[begin:end], line_no + chunk.count(b"\n", 0, begin))
        if line.strip():  # not only white space beyond ASCII's
            return line
        start = end
    return None


def _decode(chunk: bytes, line_no: int) -> str:
    if chunk.isascii():
        return chunk.decode("ascii")
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"the file is not UTF-8 text (byte {exc.start:,} of this line's chunk)",
            line=line_no + chunk.count(b"\n", 0, exc.start),
        ) from None


def _looks_like_date(text: str) -> bool:
    return F._DATETIME.fullmatch(text) is not None and not F._NUMBER.fullmatch(text)


def _select(raw: RawChunk, keep: np.ndarray) -> RawChunk:
    if keep.all():
        return raw
    has = raw.counts >= 0
    per_row = np.where(has, raw.counts, 0)
    id_keep = np.repeat(keep, per_row)
    return RawChunk(
        raw.lines[keep],
        raw.times[keep],
        raw.inputs[keep],
        raw.outputs[keep],
        raw.counts[keep],
        raw.ids[id_keep],
        {k: v[keep] for k, v in raw.extras.items()},
        raw.datetimes,
    )


def distinct_count(ids: np.ndarray) -> int:
    """How many different ids (a histogram when the ids are small, a hash table otherwise)."""
    if len(ids) == 0:
        return 0
    low, high = int(ids.min()), int(ids.max())
    if low >= 0 and high < 4 * len(ids) + 1024:
        return int(np.count_nonzero(np.bincount(ids)))
    import pandas as pd  # here, not at the top: reading a trace need not import pandas

    return len(pd.unique(ids))


def dense_ids(ids: np.ndarray) -> np.ndarray:
    """Ids renumbered 0, 1, 2, … in order of first appearance (int32 while they fit). Small
    non-negative ids (a trace's usual case) are renumbered through a table indexed by id
    (``_dense_small``); any others through a hash table (pandas' ``factorize``)."""
    if 0 < len(ids) < 2**31 and ids.dtype.kind in "iu" and ids.min() >= 0 and ids.max() < 4 * len(ids) + 1024:
        return _dense_small(ids)
    import pandas as pd

    codes, uniques = pd.factorize(ids, sort=False)
    return codes.astype(np.int32 if len(uniques) < 2**31 else np.int64, copy=False)


def _dense_small(ids: np.ndarray) -> np.ndarray:
    """``dense_ids`` of non-negative ids below 4 per id, through one int32 table indexed by id,
    a slice of DENSE_SLICE ids at a time: each id's first position (``minimum.at``), then its
    rank among the first positions, read back per id. Needs 4 bytes per possible id and the
    int32 result, where a hash table's factorize holds 8-byte codes and the table besides."""
    n, table = len(ids), np.full(int(ids.max()) + 1, len(ids), np.int32)
    for start in range(0, n, DENSE_SLICE):
        part = ids[start : start + DENSE_SLICE]
        np.minimum.at(table, part, np.arange(start, start + len(part), dtype=np.int32))
    is_first = np.zeros(n, bool)
    is_first[table[table < n]] = True
    firsts = np.flatnonzero(is_first)
    del is_first
    table[ids[firsts]] = np.arange(len(firsts), dtype=np.int32)  # now each id's new number
    out = np.empty(n, np.int32)
    for start in range(0, n, DENSE_SLICE):  # a slice at a time: take would widen all indices at once
        np.take(table, ids[start : start + DENSE_SLICE], out=out[start : start + DENSE_SLICE])
    return out


DENSE_SLICE = 1 << 22  # ids renumbered at a time by _dense_small
