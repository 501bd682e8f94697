"""The trace formats kvviz reads, and how each chunk of lines becomes raw columns.

* **Mooncake** (FAST'25 ``FAST25-release/traces``): JSONL ``timestamp`` (ms), ``input_length``,
  ``output_length``, ``hash_ids`` (chained ids of 512-token blocks, ceil(input/512) per request).
* **Qwen-Bailian** (alibaba-edu/qwen-bailian-usagetraces-anon, ATC'25): JSONL with ``chat_id``,
  ``parent_chat_id``, ``timestamp`` (seconds, float), ``input_length``, ``output_length``,
  ``type``, ``turn``, ``hash_ids`` (one salted SipHash per 16-token block, each block hashed on
  its own and remapped to sequential integers: NOT chained). Its README does not say whether a
  partial last block has an id, so floor or ceil of input/16 ids are both accepted.
* **CSV**: an arrival column, a prompt column, an output column and optional ``hash_ids``
  (space-separated), found by name (Mooncake's, vidur's, splitwise's, Azure 2023/2024's,
  BurstGPT's) or given by a column map.

Parsing only turns text into typed columns (``RawChunk``); ranges and counts are checked on whole
columns in ``kvviz.traces.ingest``. JSONL goes through pyarrow's reader when a chunk is clean;
otherwise line by line with the standard library, which names the line and field of a problem.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from kvviz.common.errors import FIELD_WORDS, InputError, quote
from kvviz.traces import arrow_input
from kvviz.traces.source import MAX_LINE_BYTES, count_of
from kvviz.traces.timeunits import TimeUnit

MAX_DIGITS = 20  # per number: int64 has 19, a float's mantissa fewer
MAX_HEADER_BYTES = 65_536
MAX_COLUMNS = 1_000
MAX_TEXT_FIELD = 200  # characters of a string field kept (Qwen's ``type``)
CSV_BATCH_ROWS = 1 << 18  # CSV records checked together (the column-wise checks' batch)
CSV_BATCH_CHARS = 1 << 25  # ... or this many characters of their role fields, whichever comes first
JSON_BLOCK_BYTES = MAX_LINE_BYTES + 1
"""Text pyarrow's JSON reader parses as one block, each block on a core of its own: a chunk of text
(``kvviz.traces.source.CHUNK_BYTES``) is several blocks, so its parse uses every core. A block holds
the longest line a trace may have (longer ones are refused before they are parsed), since a record
that no block holds whole fails the read."""


class Format(Enum):
    MOONCAKE = "mooncake"
    QWEN = "qwen"
    CSV = "csv"


class PartialBlock(Enum):
    """How many ids a prompt of n tokens carries."""

    CEIL = "ceil"  # the partial last block has an id (Mooncake)
    FLOOR_OR_CEIL = "either"  # not documented (Qwen-Bailian): accept both


@dataclass(frozen=True)
class FormatSpec:
    fmt: Format
    title: str
    block_size: int
    time_unit: TimeUnit
    chained: bool
    partial: PartialBlock
    extras: tuple[tuple[str, str], ...] = ()  # (column, "int" | "str")


SPECS = {
    Format.MOONCAKE: FormatSpec(Format.MOONCAKE, "Mooncake JSONL (FAST'25)", 512, TimeUnit.MS, True, PartialBlock.CEIL),
    Format.QWEN: FormatSpec(
        Format.QWEN,
        "Qwen-Bailian usage trace JSONL (ATC'25)",
        16,
        TimeUnit.S,
        False,
        PartialBlock.FLOOR_OR_CEIL,
        (("chat_id", "int"), ("parent_chat_id", "int"), ("turn", "int"), ("type", "str")),
    ),
    Format.CSV: FormatSpec(Format.CSV, "CSV", 512, TimeUnit.MS, True, PartialBlock.CEIL),
}
QWEN_KEYS = frozenset({"chat_id", "parent_chat_id", "turn"})

# CSV columns known by name: (column, unit of an arrival column; None = date-times).
ARRIVAL_COLUMNS: dict[str, TimeUnit | None] = {
    "timestamp": TimeUnit.MS,
    "arrived_at": TimeUnit.S,
    "arrival_time": TimeUnit.S,
    "arrival_timestamp": TimeUnit.S,
    "Timestamp": TimeUnit.S,
    "TIMESTAMP": None,
}
INPUT_COLUMNS = (
    "input_length",
    "num_prefill_tokens",
    "prompt_tokens",
    "prompt_size",
    "ContextTokens",
    "Request tokens",
)
OUTPUT_COLUMNS = (
    "output_length",
    "num_decode_tokens",
    "decode_tokens",
    "token_size",
    "GeneratedTokens",
    "Response tokens",
)
ROLES = ("arrival", "input", "output", "hash_ids")


class RowError(InputError):
    """A problem with one row; ``reason`` groups rows skipped for the same cause."""

    def __init__(self, message: str, *, line: int, field: str | None = None, reason: str = "") -> None:
        super().__init__(message, line=line, field=field)
        self.reason = f"{FIELD_WORDS.get(field, field) if field else 'line'}: {reason or message}"


@dataclass
class RawChunk:
    """Typed columns of one chunk, before range checks. ``ids`` is flat, ``counts`` per row
    (-1: the row has no ``hash_ids``)."""

    lines: np.ndarray
    times: np.ndarray
    inputs: np.ndarray
    outputs: np.ndarray
    counts: np.ndarray
    ids: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    datetimes: bool = False


def detect(first_line: str, chosen: Format | None) -> Format:
    """The format of a trace from its first non-blank line (or the one the user chose)."""
    if chosen is not None:
        return chosen
    text = first_line.lstrip()
    if not text.startswith(("{", "[")):
        return Format.CSV
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError):
        return Format.MOONCAKE  # the line-by-line parser reports what is wrong
    return Format.QWEN if isinstance(rec, dict) and QWEN_KEYS & rec.keys() else Format.MOONCAKE


# ---------------------------------------------------------------- JSONL


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number with {len(text):,} digits (at most {MAX_DIGITS})")
    return int(text)


def _no_constant(text: str) -> None:
    raise ValueError(f"{text} is not a JSON number")


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's pairs as a dict, refusing a key given twice (the standard library would keep
    the last silently, pyarrow refuses it: a record means one thing)."""
    rec = dict(pairs)
    if len(rec) != len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"the key '{quote(twice)}' is given twice")
    return rec


def _json_line(line: str, line_no: int) -> dict:
    try:
        rec = json.loads(
            line, parse_int=_bounded_int, parse_constant=_no_constant, object_pairs_hook=_one_value_per_key
        )
    except json.JSONDecodeError as exc:
        raise RowError(
            f"not valid JSON ({exc.msg} at column {exc.colno})", line=line_no, reason="not valid JSON"
        ) from None
    except RecursionError:
        raise RowError("nested too deeply (a trace record is flat)", line=line_no, reason="nested too deeply") from None
    except ValueError as exc:
        twice = "given twice" in str(exc)
        raise RowError(
            quote(exc, 80), line=line_no, reason="a key given twice" if twice else "number too long"
        ) from None
    if not isinstance(rec, dict):
        raise RowError("expected a JSON object {...}", line=line_no, reason="not an object")
    return rec


def _number(value: Any, line: int, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError(
            f"expected a number, got {quote(json.dumps(value))}", line=line, field=name, reason="not a number"
        )
    return float(value)


def _integer(value: Any, line: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError(
            f"expected an integer, got {quote(json.dumps(value))}", line=line, field=name, reason="not an integer"
        )
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value != int(value):
            raise RowError(f"expected an integer, got {value}", line=line, field=name, reason="not an integer")
        value = int(value)
    if not -(2**63) <= value < 2**63:
        raise RowError(f"{quote(value)} is absurdly large", line=line, field=name, reason="absurdly large")
    return value


def _id_list(value: Any, line: int) -> list[int]:
    if not isinstance(value, list):
        raise RowError("expected a list of integers", line=line, field="hash_ids", reason="not a list")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
            raise RowError(
                f"expected integers, found {quote(json.dumps(v))}", line=line, field="hash_ids", reason="not integers"
            )
    return value


def jsonl_slow(text: str, first_line: int, spec: FormatSpec, reject) -> RawChunk:
    """Line by line with the standard library: every problem named by line and field.

    ``reject(RowError)`` raises (strict) or records the row as skipped.
    """
    lines, times, inputs, outputs, counts, ids = [], [], [], [], [], []
    extras: dict[str, list] = {name: [] for name, _ in spec.extras}
    for k, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        line_no = first_line + k
        try:
            rec = _json_line(line, line_no)
            for name in ("timestamp", "input_length", "output_length"):
                if name not in rec:
                    raise RowError("missing", line=line_no, field=name)
            row = (
                _number(rec["timestamp"], line_no, "timestamp"),
                _integer(rec["input_length"], line_no, "input_length"),
                _integer(rec["output_length"], line_no, "output_length"),
            )
            row_ids = _id_list(rec["hash_ids"], line_no) if "hash_ids" in rec else None
            row_extras = {name: _extra(rec.get(name), kind, line_no, name) for name, kind in spec.extras}
        except RowError as err:
            reject(err)
            continue
        lines.append(line_no)
        times.append(row[0]), inputs.append(row[1]), outputs.append(row[2])
        counts.append(-1 if row_ids is None else len(row_ids))
        ids.extend(row_ids or ())
        for name, value in row_extras.items():
            extras[name].append(value)
    return RawChunk(
        np.array(lines, np.int64),
        np.array(times, np.float64),
        np.array(inputs, np.int64),
        np.array(outputs, np.int64),
        np.array(counts, np.int64),
        np.array(ids, np.int64),
        {name: _extra_array(values, kind) for (name, kind), values in zip(spec.extras, extras.values())},
    )


def _extra(value: Any, kind: str, line: int, name: str) -> Any:
    if value is None:
        return -1 if kind == "int" else ""
    if kind == "int":
        return _integer(value, line, name)
    if not isinstance(value, str):
        raise RowError(f"expected text, got {quote(json.dumps(value))}", line=line, field=name, reason="not text")
    return value[:MAX_TEXT_FIELD]


def _extra_array(values: list, kind: str) -> np.ndarray:
    return np.array(values, np.int64) if kind == "int" else np.array(values, dtype=object)


def jsonl_fast(chunk: bytes, first_line: int, spec: FormatSpec) -> RawChunk | None:
    """pyarrow's JSON reader on a clean chunk; None when the chunk needs the line-by-line parser
    (anything pyarrow rejects, or accepts but the standard library would not)."""
    import pyarrow as pa
    import pyarrow.json as pj

    breaks = np.flatnonzero(np.frombuffer(chunk, np.uint8) == ord("\n"))
    if not _has_blank_line(chunk, breaks):  # row k is line k
        line_idx = np.arange(len(breaks) + (not chunk.endswith(b"\n")), dtype=np.int64)
    else:
        line_idx = np.fromiter((k for k, raw in enumerate(chunk.split(b"\n")) if raw.strip()), np.int64)
    rows = len(line_idx)
    if rows == 0 or count_of(chunk, b"{") + count_of(chunk, b"[") > 2 * rows:  # nested beyond a flat record
        return None
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return None
    types = {"int": pa.int64(), "str": pa.string()}
    schema = pa.schema(
        [
            ("timestamp", pa.float64()),
            ("input_length", pa.int64()),
            ("output_length", pa.int64()),
            ("hash_ids", pa.list_(pa.int64())),
        ]
        + [(n, types[k]) for n, k in spec.extras]
    )
    try:
        table = pj.read_json(
            arrow_input.from_bytes(chunk),
            read_options=pj.ReadOptions(block_size=JSON_BLOCK_BYTES),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != rows or any(
        table.column(n).null_count for n in ("timestamp", "input_length", "output_length")
    ):
        return None
    times = _numbers(table.column("timestamp").chunks, np.float64)
    if not (np.abs(times) < 1e19).all():  # NaN, Infinity, or an integer of over 20 digits: the standard
        return None  # library refuses them, and names the line
    lists = _id_lists(table.column("hash_ids").chunks)
    if lists is None:  # a null inside hash_ids: the line-by-line parser names it
        return None
    flat_ids, counts = lists
    extras = {}
    for name, kind in spec.extras:
        col = table.column(name)
        if kind == "int":
            extras[name] = _numbers(col.chunks, np.int64, null=-1)
        else:
            import pyarrow.compute as pc

            extras[name] = np.array(
                pc.utf8_slice_codeunits(pc.fill_null(col, ""), 0, MAX_TEXT_FIELD).to_pylist(), dtype=object
            )
    return RawChunk(
        line_idx + first_line,
        times,
        _numbers(table.column("input_length").chunks, np.int64),
        _numbers(table.column("output_length").chunks, np.int64),
        counts,
        flat_ids,
        extras,
    )


def _has_blank_line(chunk: bytes, breaks: np.ndarray) -> bool:
    """Whether ``chunk`` (its line breaks at ``breaks``) has an empty line: it starts with a line
    break, or two are neighbours. From the breaks' positions, which count the lines too: searching
    the text for two line breaks takes longer than finding them all (each single one starts a
    comparison)."""
    return chunk.startswith(b"\n") or bool((np.diff(breaks) == 1).any())


def _numbers(chunks: list, dtype: type, null: int = 0) -> np.ndarray:
    """Numeric pyarrow arrays (of ``dtype``) as one numpy array read from their buffers, nulls as
    ``null``: pyarrow's own ``to_numpy`` and ``fill_null`` import pandas (a third of a second) and
    ``pyarrow.compute`` costs a twentieth, which reading a JSONL trace does not need."""
    parts = []
    for chunk in chunks:
        values = np.frombuffer(chunk.buffers()[1], dtype=dtype)[chunk.offset : chunk.offset + len(chunk)]
        parts.append(np.where(_valid(chunk), values, np.asarray(null, dtype)) if chunk.null_count else values)
    return _joined(parts, dtype)


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """The parts in one array: the one part itself when there is one (read-only when it is a view of
    pyarrow's buffer), so that a column is copied once on its way out of pyarrow, not at each step."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _valid(chunk) -> np.ndarray:
    """Which entries of a pyarrow array are not null, from its validity bitmap."""
    bits = np.unpackbits(np.frombuffer(chunk.buffers()[0], np.uint8), bitorder="little")
    return bits[chunk.offset : chunk.offset + len(chunk)].astype(bool)


def _id_lists(chunks: list) -> tuple[np.ndarray, np.ndarray] | None:
    """A ``list<int64>`` column's ids, flat, and each row's count (-1 where the list is missing),
    from the buffers as ``_numbers`` does; None when a list holds a null."""
    flat, counts = [], []
    for lists in chunks:
        bounds = _numbers([lists.offsets], np.int32).astype(np.int64)
        ids = lists.values.slice(int(bounds[0]), int(bounds[-1] - bounds[0]))
        if ids.null_count:
            return None
        flat.append(_numbers([ids], np.int64))
        n = np.diff(bounds)
        counts.append(np.where(_valid(lists), n, -1) if lists.null_count else n)
    return _joined(flat, np.int64), _joined(counts, np.int64)


# ---------------------------------------------------------------- CSV

_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})", re.ASCII)  # no exponent: 1e3 is refused
_IDS = re.compile(r"(?:-?[0-9]{1,19}(?: +-?[0-9]{1,19})*)?", re.ASCII)
_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?)?"
    r"(?P<zone>Z|[+-][0-9]{2}:?[0-9]{2})?",
    re.ASCII,
)


@dataclass(frozen=True)
class CsvLayout:
    """Which column plays which role, and the arrival column's unit (None: date-times)."""

    header: tuple[str, ...]
    columns: dict[str, str]
    unit: TimeUnit | None

    def describe(self) -> str:
        return ", ".join(f"{role} = '{quote(col)}'" for role, col in self.columns.items())


def parse_column_map(text: str) -> dict[str, str]:
    """``arrival=…,input=…,output=…[,hash_ids=…]`` → {role: column}: each role once, by a known
    name, with a column name (a role given twice is refused, not settled by the last)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, sep, column = (s.strip() for s in part.partition("="))
        if not sep or not role:
            raise InputError(f"--columns expects role=column, got '{quote(part)}'")
        if role not in ROLES:
            raise InputError(f"--columns names an unknown role '{quote(role)}'; the roles are {', '.join(ROLES)}")
        if not column:
            raise InputError(f"--columns gives {role} no column name")
        if role in out:
            raise InputError(f"--columns gives {role} twice ('{quote(out[role])}', then '{quote(column)}')")
        if column in out.values():
            other = next(r for r, c in out.items() if c == column)
            raise InputError(
                f"--columns gives the column '{quote(column)}' to both {other} and {role}; each role needs its own"
            )
        out[role] = column
    missing = [r for r in ROLES[:3] if r not in out]
    if missing:
        raise InputError(f"--columns needs {', '.join(missing)} too")
    return out


def require_columns_apply(fmt: Format, columns: Iterable) -> None:
    """A column map is for CSV; on a format without columns it is refused, not ignored."""
    if columns and fmt is not Format.CSV:
        raise InputError(f"--columns applies to CSV files; this file is {SPECS[fmt].title}, which has no columns")


def csv_reader(texts: Iterable[str]) -> Iterator[list[str]]:
    """One ``csv.reader`` over consecutive chunks of whole lines, so a quoted field may run on
    over line breaks (RFC 4180) and from one chunk into the next while the file streams."""
    return csv.reader(itertools.chain.from_iterable(map(io.StringIO, texts)))


def csv_header(reader) -> tuple[str, ...]:
    """The first non-blank record of ``reader`` (from ``csv_reader``): the column names."""
    try:
        row = next((r for r in reader if any(c.strip() for c in r)), [])
    except csv.Error as exc:
        raise InputError(f"cannot read the CSV header ({quote(exc, 80)})", line=1) from None
    size = sum(map(len, row)) + len(row) - 1
    if size > MAX_HEADER_BYTES:
        raise InputError(f"the CSV header is {size:,} characters long (at most {MAX_HEADER_BYTES:,})", line=1)
    if len(row) > MAX_COLUMNS:
        raise InputError(f"the CSV header has {len(row):,} columns (at most {MAX_COLUMNS:,})", line=1)
    return tuple(h.strip() for h in row)


def csv_layout(header: tuple[str, ...], column_map: dict[str, str] | None, unit: TimeUnit | None) -> CsvLayout:
    """Find the roles' columns by the map, else by the known names. A role's column named twice in
    the header is refused: which of the two holds the values cannot be told."""
    shown = ", ".join(quote(h, 20) for h in header[:5]) + (f", … ({len(header)} columns)" if len(header) > 5 else "")
    if column_map:
        for role, col in column_map.items():
            if col not in header:
                raise InputError(
                    f"the column map names '{quote(col)}' for {role}, but the header has: {shown}",
                    line=1,
                    field="columns",
                )
        _once(header, column_map)
        return CsvLayout(header, dict(column_map), unit or TimeUnit.MS)
    columns = {
        "arrival": _pick(header, ARRIVAL_COLUMNS, "arrival time", shown),
        "input": _pick(header, INPUT_COLUMNS, "prompt length", shown),
        "output": _pick(header, OUTPUT_COLUMNS, "output length", shown),
    }
    if "hash_ids" in header:
        columns["hash_ids"] = "hash_ids"
    _once(header, columns)
    named = ARRIVAL_COLUMNS[columns["arrival"]]
    return CsvLayout(header, columns, unit or named)


def _once(header: tuple[str, ...], columns: dict[str, str]) -> None:
    for role, col in columns.items():
        if header.count(col) > 1:
            raise InputError(
                f"the CSV header names the column '{quote(col)}' ({role}) {header.count(col)} times; "
                "which one holds the values cannot be told",
                line=1,
            )


def _pick(header: tuple[str, ...], names, what: str, shown: str) -> str:
    for name in names:
        if name in header:
            return name
    raise InputError(f"the CSV header ({shown}) has no {what} column (one of: {', '.join(names)})", line=1)


def csv_rows(reader, first_line: int, layout: CsvLayout, reject) -> Iterator[tuple[np.ndarray, dict[str, list[str]]]]:
    """The role columns of the records left in ``reader`` as strings, with the line each record
    starts on (``first_line`` is the reader's first line), in batches of at most
    ``CSV_BATCH_ROWS`` records or ``CSV_BATCH_CHARS`` characters, so memory stays bounded."""
    pos = {role: layout.header.index(col) for role, col in layout.columns.items()}
    width = len(layout.header)
    lines: list[int] = []
    cols: dict[str, list[str]] = {role: [] for role in pos}
    size, done = 0, reader.line_num
    try:
        for row in reader:
            line_no, done = first_line + done, reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != width:
                reject(
                    RowError(
                        f"{len(row):,} columns, the header has {width}", line=line_no, reason="wrong number of columns"
                    )
                )
                continue
            lines.append(line_no)
            for role, k in pos.items():
                value = row[k].strip()
                cols[role].append(value)
                size += len(value)
            if len(lines) >= CSV_BATCH_ROWS or size >= CSV_BATCH_CHARS:
                yield np.array(lines, np.int64), cols
                lines, cols, size = [], {role: [] for role in pos}, 0
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({quote(exc, 80)})", line=first_line + done) from None
    if lines:
        yield np.array(lines, np.int64), cols


def strict_numbers(
    values: list[str], lines: np.ndarray, name: str, reject, *, integer: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Plain ASCII decimal numbers only (no ``1_000``, ``nan``, ``now`` or other scripts' digits);
    returns (values, keep mask)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pa.array(values, pa.string())
    ok = pc.match_substring_regex(text, f"^(?:{_NUMBER.pattern})$").to_numpy(zero_copy_only=False).copy()
    kind = "an integer" if integer else "a number"
    for k in np.flatnonzero(~ok):
        reject(
            RowError(f"expected {kind}, got '{quote(values[k])}'", line=int(lines[k]), field=name, reason=f"not {kind}")
        )
    try:
        numbers = pc.cast(pc.if_else(pa.array(ok), text, "0"), pa.float64()).to_numpy(zero_copy_only=False).copy()
    except pa.ArrowInvalid:  # a form arrow's parser refuses: Python's float() decides
        numbers = np.array([float(v) if good else 0.0 for v, good in zip(values, ok)], np.float64)
    if integer:
        frac = ok & (numbers != np.floor(numbers))
        for k in np.flatnonzero(frac):
            reject(
                RowError(
                    f"expected an integer, got {quote(values[k])}",
                    line=int(lines[k]),
                    field=name,
                    reason="not an integer",
                )
            )
        ok &= ~frac
    return numbers, ok


def datetimes_ms(values: list[str], lines: np.ndarray, name: str, reject) -> tuple[np.ndarray, np.ndarray]:
    """ISO date-times → ms since 1970 (float); every row with or every row without a time zone."""
    import pandas as pd  # here, not at the top: a JSONL trace never needs pandas

    series = pd.Series(values, dtype=object)
    match = series.str.extract(_DATETIME.pattern + "$", expand=True)
    full = series.str.fullmatch(_DATETIME).fillna(False).to_numpy(bool, copy=True)
    for k in np.flatnonzero(~full):
        reject(
            RowError(
                f"expected a number or a date-time like 2024-05-10 13:45:00, got '{quote(values[k])}'",
                line=int(lines[k]),
                field=name,
                reason="not a date-time",
            )
        )
    zoned = full & match["zone"].notna().to_numpy(bool, copy=True)
    if zoned.any() and (full & ~zoned).any():
        first_zoned = bool(zoned[np.flatnonzero(full)[0]])
        for k in np.flatnonzero(full & (zoned != first_zoned)):
            reject(
                RowError(
                    f"'{quote(values[k])}' {'has' if zoned[k] else 'lacks'} a time zone and the first "
                    "row does not: the date-times mix time zones",
                    line=int(lines[k]),
                    field=name,
                    reason="mixed time zones",
                )
            )
        full &= zoned == first_zoned
    stamps = pd.to_datetime(series.where(full, None), format="ISO8601", utc=bool(zoned.any()), errors="coerce")
    bad = full & stamps.isna().to_numpy(bool, copy=True)
    for k in np.flatnonzero(bad):
        reject(
            RowError(
                f"'{quote(values[k])}' is not a date kvviz can place (years 1677 to 2262)",
                line=int(lines[k]),
                field=name,
                reason="date out of range",
            )
        )
    keep = full & ~bad
    ms = np.zeros(len(values), np.float64)
    if keep.any():
        ns = stamps[keep]
        ns = ns.dt.tz_localize(None) if getattr(ns.dt, "tz", None) is not None else ns
        ms[keep] = ns.astype("datetime64[ns]").to_numpy().astype(np.int64) / 1e6
    return ms, keep


def split_ids(values: list[str], lines: np.ndarray, reject) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Space-separated integer ids → (flat ids, count per row, keep mask)."""
    import pandas as pd

    series = pd.Series(values, dtype=object)
    ok = series.str.fullmatch(_IDS).fillna(False).to_numpy(bool, copy=True)
    for k in np.flatnonzero(~ok):
        reject(
            RowError("expected space-separated integers", line=int(lines[k]), field="hash_ids", reason="not integers")
        )
    long_ids = ok & series.str.contains("[0-9]{19}", regex=True).fillna(False).to_numpy(bool, copy=True)
    for k in np.flatnonzero(long_ids):
        if any(not -(2**63) <= int(v) < 2**63 for v in values[k].split()):
            reject(RowError("an id beyond 64 bits", line=int(lines[k]), field="hash_ids", reason="id beyond 64 bits"))
            ok[k] = False
    good = [v for v, keep in zip(values, ok) if keep]
    counts = np.zeros(len(values), np.int64)
    counts[ok] = [len(v.split()) for v in good]
    flat = np.fromstring(
        " ".join(v for v in good if v), dtype=np.int64, sep=" "
    )  # no str per id; " " would read as [0]
    return flat, counts, ok
