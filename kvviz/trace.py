"""Request traces in the Mooncake format (FAST'25 release, ``FAST25-release/traces``).

One JSON object per line::

    {"timestamp": 0, "input_length": 1200, "output_length": 30, "hash_ids": [0, 1, 2]}

``timestamp`` is the arrival in milliseconds, lengths are in tokens, and each hash id names one
``block_size``-token block of the prompt (512 in Mooncake). The ids are chained prefix hashes
(see ``kvviz.hashing``), so equal ids mean equal prefixes, and a request carries
ceil(input_length / block_size) ids: the partial last block has an id too.

The same columns are accepted as CSV (``hash_ids`` as space-separated integers), and so is a
CSV without block ids in the vidur / splitwise style (arrival time, prompt tokens, decode
tokens): such a trace loads for the arrival and length views, but cache replay needs block ids.

Everything is parsed as data. Every problem raises ``InputError`` naming the line and field.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from kvviz.errors import InputError

DEFAULT_BLOCK_SIZE = 512
MAX_BYTES = 50 * 1024 * 1024          # also server.maxUploadSize in .streamlit/config.toml
MAX_REQUESTS = 200_000
MAX_INPUT_LENGTH = 10_000_000         # tokens; longer is not a real prompt
MAX_OUTPUT_LENGTH = 1_000_000
MAX_TIMESTAMP_MS = 10 * 365 * 24 * 3600 * 1000

# CSV column names accepted for each field, and the factor that turns the column into ms.
_TIME_COLUMNS = {"timestamp": 1.0, "arrived_at": 1000.0, "arrival_time": 1000.0, "TIMESTAMP": None}
_INPUT_COLUMNS = ("input_length", "num_prefill_tokens", "prompt_tokens", "ContextTokens")
_OUTPUT_COLUMNS = ("output_length", "num_decode_tokens", "decode_tokens", "GeneratedTokens")

Source = str | Path | bytes | bytearray | IO[bytes] | IO[str]


@dataclass(frozen=True)
class Trace:
    """A loaded trace.

    ``requests`` has one row per request, in arrival order, with columns ``timestamp`` (ms),
    ``input_length``, ``output_length`` and ``n_blocks``. ``blocks`` is the flat block-access
    sequence (every request's hash ids, request after request) and request ``i`` owns
    ``blocks[offsets[i]:offsets[i + 1]]``. A trace without block ids has an empty ``blocks``.
    """

    requests: pd.DataFrame
    blocks: np.ndarray
    offsets: np.ndarray
    block_size: int = DEFAULT_BLOCK_SIZE
    has_block_ids: bool = True
    name: str = "trace"
    warnings: tuple[str, ...] = field(default=())

    @property
    def n_requests(self) -> int:
        return len(self.requests)

    def hash_ids(self, i: int) -> np.ndarray:
        """The block ids of request ``i``."""
        return self.blocks[self.offsets[i]:self.offsets[i + 1]]

    def head(self, n: int) -> Trace:
        """The first ``n`` requests as a trace of their own."""
        n = max(0, min(n, self.n_requests))
        return Trace(self.requests.iloc[:n].reset_index(drop=True), self.blocks[:self.offsets[n]],
                     self.offsets[:n + 1].copy(), self.block_size, self.has_block_ids, self.name)

    def to_jsonl(self) -> str:
        """The trace in the Mooncake JSONL format (``hash_ids`` only when the trace has them)."""
        cols = self.requests[["timestamp", "input_length", "output_length"]].to_numpy(np.int64)
        lines = []
        for i, (ts, inp, out) in enumerate(cols.tolist()):
            rec: dict[str, Any] = {"timestamp": ts, "input_length": inp, "output_length": out}
            if self.has_block_ids:
                rec["hash_ids"] = self.hash_ids(i).tolist()
            lines.append(json.dumps(rec, separators=(", ", ": ")))
        return "\n".join(lines) + ("\n" if lines else "")


def fingerprint(trace: Trace) -> str:
    """A content hash of a trace (its requests, block ids and block size): the cache key of
    anything derived from it, so equal traces share results whatever their name or origin."""
    digest = hashlib.sha256(str(trace.block_size).encode())
    columns = trace.requests[["timestamp", "input_length", "output_length"]].to_numpy(np.int64)
    for part in (columns, trace.blocks, trace.offsets):
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


def blocks_needed(input_length: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """How many hash ids a prompt of ``input_length`` tokens carries: ceil(len / block_size)."""
    return -(-input_length // block_size)


def from_records(
    timestamps: Any, input_lengths: Any, output_lengths: Any,
    hash_ids: list[list[int]] | None, *, block_size: int = DEFAULT_BLOCK_SIZE,
    name: str = "trace", warnings: tuple[str, ...] = (),
) -> Trace:
    """Build a Trace from columns; requests are sorted by arrival (stable) if they are not."""
    ts = np.asarray(timestamps, dtype=np.int64)
    frame = pd.DataFrame({
        "timestamp": ts,
        "input_length": np.asarray(input_lengths, dtype=np.int64),
        "output_length": np.asarray(output_lengths, dtype=np.int64),
    })
    lists = hash_ids if hash_ids is not None else [[] for _ in range(len(frame))]
    order = np.argsort(ts, kind="stable")
    moved = int(np.count_nonzero(order != np.arange(len(order))))
    if moved:
        first = int(np.flatnonzero(np.diff(ts) < 0)[0]) + 2 if len(ts) > 1 else 1
        warnings = warnings + (f"timestamps are out of order (first at request {first}); "
                               f"sorted by arrival, {moved} requests moved",)
        frame = frame.iloc[order].reset_index(drop=True)
        lists = [lists[i] for i in order]
    counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    blocks = (np.fromiter((b for x in lists for b in x), dtype=np.int64, count=int(offsets[-1]))
              if len(lists) else np.zeros(0, dtype=np.int64))
    frame["n_blocks"] = counts
    return Trace(frame, blocks, offsets, block_size, hash_ids is not None, name, warnings)


def load_trace(source: Source, block_size: int = DEFAULT_BLOCK_SIZE, *, name: str | None = None) -> Trace:
    """Load a trace from a path, bytes or a file-like object (JSONL or CSV, detected)."""
    if not isinstance(block_size, int) or block_size <= 0:
        raise InputError(f"block size must be a positive integer, got {block_size!r}", field="block_size")
    data, default_name = _read_source(source)
    if len(data) > MAX_BYTES:
        raise InputError(f"the file is {len(data) / 2**20:.1f} MiB; the limit is {MAX_BYTES // 2**20} MiB")
    text = _decode(data)
    if not text.strip():
        raise InputError("the trace is empty: expected one JSON object per line, or a CSV with a header")
    rows = _parse_jsonl(text, block_size) if text.lstrip()[:1] in "{[" else _parse_csv(text, block_size)
    ts, inp, out, ids = rows
    return from_records(ts, inp, out, ids, block_size=block_size, name=name or default_name)


def _read_source(source: Source) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), "uploaded trace"
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise InputError(f"cannot open trace file '{path}': {exc.strerror or exc}") from None
        if size > MAX_BYTES:
            raise InputError(f"the file is {size / 2**20:.1f} MiB; the limit is {MAX_BYTES // 2**20} MiB")
        try:
            return path.read_bytes(), path.name
        except OSError as exc:
            raise InputError(f"cannot read trace file '{path}': {exc.strerror or exc}") from None
    if hasattr(source, "read"):
        raw = source.read(MAX_BYTES + 1)
        return (raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)), "trace"
    raise InputError(f"cannot load a trace from a {type(source).__name__}")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"the file is not UTF-8 text (byte {exc.start})", line=line) from None


def _as_int(value: Any, line: int, name: str, low: int, high: int) -> int:
    """An integer field within [low, high]; integral floats are accepted."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected an integer, got {json.dumps(value)[:40]}", line=line, field=name)
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise InputError(f"expected an integer, got {value}", line=line, field=name)
        value = int(value)
    if value < low:
        raise InputError(f"must be at least {low}, got {value}", line=line, field=name)
    if value > high:
        raise InputError(f"{value} is absurdly large (limit {high:,})", line=line, field=name)
    return value


def _as_timestamp(value: Any, line: int, name: str, scale: float) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a number, got {json.dumps(value)[:40]}", line=line, field=name)
    if value < 0:
        raise InputError(f"must be at least 0, got {value}", line=line, field=name)
    ms = round(value * scale)
    if ms > MAX_TIMESTAMP_MS:
        raise InputError(f"{value} is beyond ten years of trace", line=line, field=name)
    return ms


def _check_ids(ids: Any, input_length: int, block_size: int, line: int) -> list[int]:
    if not isinstance(ids, list):
        raise InputError("expected a list of integers", line=line, field="hash_ids")
    for v in ids:
        if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
            raise InputError(f"expected integers, found {json.dumps(v)[:40]}", line=line, field="hash_ids")
    need = blocks_needed(input_length, block_size)
    if len(ids) != need:
        raise InputError(
            f"{len(ids)} ids, but input_length {input_length} needs ceil({input_length}/{block_size}) = {need}"
            f" (block size {block_size})", line=line, field="hash_ids")
    return ids


def _check_count(n: int) -> None:
    if n > MAX_REQUESTS:
        raise InputError(f"more than {MAX_REQUESTS:,} requests; cut the trace (for example its first hour)")


def _parse_jsonl(text: str, block_size: int):
    ts, inp, out, ids = [], [], [], []
    with_ids: bool | None = None
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", line=line_no) from None
        if not isinstance(rec, dict):
            raise InputError("expected a JSON object {...}", line=line_no)
        for name in ("timestamp", "input_length", "output_length"):
            if name not in rec:
                raise InputError("missing", line=line_no, field=name)
        if with_ids is None:
            with_ids = "hash_ids" in rec
        elif with_ids != ("hash_ids" in rec):
            raise InputError("present on some lines and not on others" if with_ids is False
                             else "missing", line=line_no, field="hash_ids")
        ts.append(_as_timestamp(rec["timestamp"], line_no, "timestamp", 1.0))
        n_in = _as_int(rec["input_length"], line_no, "input_length", 1, MAX_INPUT_LENGTH)
        inp.append(n_in)
        out.append(_as_int(rec["output_length"], line_no, "output_length", 0, MAX_OUTPUT_LENGTH))
        if with_ids:
            ids.append(_check_ids(rec["hash_ids"], n_in, block_size, line_no))
        _check_count(len(ts))
    return ts, inp, out, (ids if with_ids else None)


def _pick(header: list[str], names: Any, what: str) -> str:
    for name in names:
        if name in header:
            return name
    raise InputError(f"the CSV header {header} has no {what} column (one of: {', '.join(names)})", line=1)


def _parse_csv(text: str, block_size: int):
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error) as exc:
        raise InputError(f"cannot read the CSV header ({exc})", line=1) from None
    t_col = _pick(header, tuple(_TIME_COLUMNS), "arrival time")
    i_col = _pick(header, _INPUT_COLUMNS, "prompt length")
    o_col = _pick(header, _OUTPUT_COLUMNS, "output length")
    pos = {name: header.index(name) for name in (t_col, i_col, o_col)}
    id_pos = header.index("hash_ids") if "hash_ids" in header else None
    ts, inp, out, ids = [], [], [], []
    t0: pd.Timestamp | None = None
    try:
        for row in reader:
            line_no = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{len(row)} columns, the header has {len(header)}", line=line_no)
            raw_t = row[pos[t_col]].strip()
            if _TIME_COLUMNS[t_col] is None and not _is_number(raw_t):
                t0, ms = _datetime_ms(raw_t, t0, line_no, t_col)
                ts.append(ms)
            else:
                ts.append(_as_timestamp(_number(raw_t, line_no, t_col), line_no, t_col,
                                        _TIME_COLUMNS[t_col] or 1.0))
            n_in = _as_int(_number(row[pos[i_col]], line_no, i_col), line_no, i_col, 1, MAX_INPUT_LENGTH)
            inp.append(n_in)
            out.append(_as_int(_number(row[pos[o_col]], line_no, o_col), line_no, o_col, 0, MAX_OUTPUT_LENGTH))
            if id_pos is not None:
                parts = row[id_pos].split()
                try:
                    values = [int(p) for p in parts]
                except ValueError:
                    raise InputError("expected space-separated integers", line=line_no, field="hash_ids") from None
                ids.append(_check_ids(values, n_in, block_size, line_no))
            _check_count(len(ts))
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({exc})", line=reader.line_num) from None
    if not ts:
        raise InputError("the CSV has a header but no requests")
    if ts and t0 is not None:
        base = min(ts)
        ts = [t - base for t in ts]
    return ts, inp, out, (ids if id_pos is not None else None)


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _number(text: str, line: int, name: str) -> float | int:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise InputError(f"expected a number, got '{text[:40]}'", line=line, field=name) from None


def _datetime_ms(text: str, t0: pd.Timestamp | None, line: int, name: str) -> tuple[pd.Timestamp, int]:
    """Splitwise/Azure traces give wall-clock times; keep them relative to the first one."""
    try:
        stamp = pd.Timestamp(text)
    except (ValueError, TypeError):
        raise InputError(f"expected a number or a date-time, got '{text[:40]}'", line=line, field=name) from None
    if pd.isna(stamp):
        raise InputError("empty date-time", line=line, field=name)
    t0 = stamp if t0 is None else t0
    return t0, int((stamp - t0) / pd.Timedelta(milliseconds=1))
