"""The ``Trace`` object: one request table and the flat block-access sequence.

Mooncake FAST'25 (``FAST25-release/traces``) names each ``block_size``-token block of a prompt
by a chained prefix hash, so equal ids mean equal prefixes. A trace keeps every request's ids
one after another in ``blocks`` (int32 when they fit, else int64) with ``offsets`` (int64)
marking where each request's ids start.

The request table is kept as plain columns until something asks for ``requests``: only then is
pandas imported and the DataFrame built, so a command that needs only the arrays (``hitcurve``)
never pays pandas' start-up (docs/eviction.md, Speed).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from kvviz.common.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_BLOCK_SIZE = 512
BASE_COLUMNS = ("timestamp", "input_length", "output_length")
Table = Union["pd.DataFrame", dict[str, np.ndarray]]
"""A request table: a DataFrame, or its columns as arrays (one entry per request each)."""


class _LazyTable:
    """The ``requests`` field: stored as given, a dict of columns turned into a DataFrame (and
    kept) the first time it is read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, trace: Trace | None, owner: type | None = None) -> pd.DataFrame:
        if trace is None:
            raise AttributeError(self.slot)  # no default value for the dataclass field
        table = trace.__dict__[self.slot]
        if isinstance(table, dict):
            import pandas as pd

            table = trace.__dict__[self.slot] = pd.DataFrame(table, copy=False)
        return table

    def __set__(self, trace: Trace, table: Table) -> None:
        trace.__dict__[self.slot] = table


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``. A trace's arrays are shared by every session that opens it, and
    numba compiles a kernel once per kind of array it is given (a read-only array, as the library
    opens an entry or a Ray worker receives one, is a kind of its own): every caller hands the
    kernels this one kind, so none of them compiles a second time in front of a visitor."""
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class Trace:
    """A loaded trace.

    ``requests`` has one row per request, in arrival order, with columns ``timestamp`` (ms since
    the first request, or since the trace's own zero), ``input_length``, ``output_length`` and
    ``n_blocks``, plus whatever the format carries (Qwen-Bailian: ``chat_id``,
    ``parent_chat_id``, ``turn``, ``type``). Request ``i`` owns ``blocks[offsets[i]:offsets[i+1]]``;
    a trace without block ids has an empty ``blocks``. ``warnings`` need the reader's attention;
    ``how_read`` says in plain words how the file was interpreted. ``ids_dense`` is True when
    ``blocks`` holds 0, 1, 2, … numbered in order of first use, so a replay can index per-block
    arrays by id without relabelling (a library entry stores its ids so; the Trace checks it).
    """

    requests: pd.DataFrame = _LazyTable()  # type: ignore[assignment]
    blocks: np.ndarray
    offsets: np.ndarray
    block_size: int = DEFAULT_BLOCK_SIZE
    has_block_ids: bool = True
    name: str = "trace"
    warnings: tuple[str, ...] = field(default=())
    how_read: tuple[str, ...] = field(default=())
    ids_dense: bool = False

    def __post_init__(self) -> None:
        """Refuse arrays the simulation kernels would read outside of: they index ``blocks`` through
        ``offsets`` without bounds checks, so no Trace with inconsistent arrays may exist."""
        table = self.__dict__["_requests"]
        rows = {len(c) for c in table.values()} if isinstance(table, dict) else {len(table)}
        if problem := array_problem(self.blocks, self.offsets, rows) or (self.ids_dense and dense_problem(self.blocks)):
            raise InputError(f"the trace's arrays are inconsistent ({problem})", field="trace")
        object.__setattr__(self, "blocks", read_only(self.blocks))
        object.__setattr__(self, "offsets", read_only(self.offsets))

    @property
    def n_requests(self) -> int:
        return len(self.offsets) - 1

    def column(self, name: str) -> np.ndarray:
        """One column of the request table as an array, without building the table."""
        table = self.__dict__["_requests"]
        return table[name] if isinstance(table, dict) else table[name].to_numpy()

    def hash_ids(self, i: int) -> np.ndarray:
        """The block ids of request ``i``."""
        return self.blocks[self.offsets[i] : self.offsets[i + 1]]

    def head(self, n: int) -> Trace:
        """The first ``n`` requests as a trace of their own."""
        n = max(0, min(n, self.n_requests))
        return Trace(
            self.requests.iloc[:n].reset_index(drop=True),
            self.blocks[: self.offsets[n]],
            np.array(self.offsets[: n + 1]),
            self.block_size,
            self.has_block_ids,
            self.name,
            how_read=self.how_read,
            ids_dense=self.ids_dense,  # the first uses of a prefix come in the same order
        )

    def to_jsonl(self) -> str:
        """The trace in the Mooncake JSONL format (``hash_ids`` only when the trace has them)."""
        cols = self.requests[list(BASE_COLUMNS)].to_numpy(np.int64).tolist()
        lines = []
        for i, (ts, inp, out) in enumerate(cols):
            ids = f', "hash_ids": [{", ".join(map(str, self.hash_ids(i).tolist()))}]' if self.has_block_ids else ""
            lines.append(f'{{"timestamp": {ts}, "input_length": {inp}, "output_length": {out}{ids}}}')
        return "\n".join(lines) + ("\n" if lines else "")


def array_problem(blocks: object, offsets: object, rows: set[int] | None = None) -> str | None:
    """What makes ``blocks`` and ``offsets`` unusable as a trace's arrays, in words (None: nothing).

    Both must be flat integer arrays; ``offsets`` must start at 0, never decrease and end at the
    number of block ids, and ``rows`` (the request table's row counts, when given) must be one
    per request. Only ``offsets`` is scanned, so the check costs little on any trace.
    """
    if not isinstance(blocks, np.ndarray) or blocks.ndim != 1 or blocks.dtype.kind not in "iu":
        return "the block ids are not a flat array of integers"
    if not isinstance(offsets, np.ndarray) or offsets.ndim != 1 or offsets.dtype.kind not in "iu" or not len(offsets):
        return "the offsets are not a flat array of integers"
    if offsets[0] != 0:
        return "offsets do not start at 0"
    if not bool((offsets[1:] >= offsets[:-1]).all()):
        return "offsets decrease"
    if offsets[-1] != len(blocks):
        return "offsets do not end at the number of block ids"
    if rows is not None and rows != {len(offsets) - 1}:
        return f"the request table's rows do not match its {len(offsets) - 1:,} requests"
    return None


def dense_problem(blocks: np.ndarray) -> str | None:
    """Why ``blocks`` are not 0, 1, 2, … numbered in order of first use (None: they are): none is
    negative and each is at most one more than every id before it. Read a slice at a time into
    one buffer, so the check needs no array as large as ``blocks``."""
    highest = -1
    run = np.empty(min(len(blocks), DENSE_SLICE), blocks.dtype)
    for start in range(0, len(blocks), DENSE_SLICE):
        part = blocks[start : start + DENSE_SLICE]
        seen = np.maximum(np.maximum.accumulate(part, out=run[: len(part)]), highest, out=run[: len(part)])
        if part[0] > highest + 1 or part.min() < 0 or bool((part[1:] > seen[:-1] + 1).any()):
            return "the block ids are not numbered 0, 1, 2, … in order of first use"
        highest = int(seen[-1])
    return None


DENSE_SLICE = 1 << 20  # ids checked at a time by dense_problem (4 MB of int32: cache-sized)


def fingerprint(trace: Trace) -> str:
    """A content hash of a trace (its requests, block ids and block size): the cache key of
    anything derived from it, so equal traces share results whatever their name or origin."""
    digest = hashlib.blake2b(str(trace.block_size).encode(), digest_size=32)
    digest.update(np.ascontiguousarray(trace.requests[list(BASE_COLUMNS)].to_numpy(np.int64)).data)
    for part in (trace.blocks, trace.offsets):  # as int64 whatever the dtype, a slice at a time
        for start in range(0, len(part), _HASH_SLICE):
            digest.update(np.ascontiguousarray(part[start : start + _HASH_SLICE], dtype=np.int64).data)
    return digest.hexdigest()


_HASH_SLICE = 1 << 22


def blocks_needed(input_length: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """How many hash ids a prompt of ``input_length`` tokens carries: ceil(len / block_size)."""
    return -(-input_length // block_size)


def compact_ids(blocks: np.ndarray) -> np.ndarray:
    """Block ids as int32 when every id fits (0 ≤ id < 2³¹), else unchanged."""
    if blocks.dtype == np.int32 or (len(blocks) and (blocks.min() < 0 or blocks.max() >= 2**31)):
        return blocks
    return blocks.astype(np.int32)


def sort_by_arrival(
    frame: Table, blocks: np.ndarray, offsets: np.ndarray
) -> tuple[Table, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Requests in arrival order (stable); returns the warning when any had to move."""
    ts = np.asarray(frame["timestamp"])
    if len(ts) < 2 or bool((np.diff(ts) >= 0).all()):
        return frame, blocks, offsets, ()
    order = np.argsort(ts, kind="stable")
    moved = int(np.count_nonzero(order != np.arange(len(order))))
    first = int(np.flatnonzero(np.diff(ts) < 0)[0]) + 2
    counts = np.diff(offsets)[order]
    new_offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    warning = (f"timestamps are out of order (first at request {first}); sorted by arrival, {moved:,} requests moved",)
    frame = (
        {k: v[order] for k, v in frame.items()} if isinstance(frame, dict) else frame.iloc[order].reset_index(drop=True)
    )
    return frame, _gathered(blocks, offsets[:-1][order], new_offsets), new_offsets, warning


SORT_SLICE = 1 << 22  # ids moved at a time by sort_by_arrival


def _gathered(blocks: np.ndarray, starts: np.ndarray, new_offsets: np.ndarray) -> np.ndarray:
    """Request k's ids (``blocks[starts[k]:]``, as many as ``new_offsets`` gives it) at
    ``new_offsets[k]``, a slice of about SORT_SLICE ids at a time: the index arrays of all of
    them at once would cost 24 bytes per id beyond the ids themselves."""
    out = np.empty_like(blocks)
    first = 0
    while first < len(starts):
        last = max(first + 1, int(np.searchsorted(new_offsets, new_offsets[first] + SORT_SLICE, "right")) - 1)
        lo, hi = int(new_offsets[first]), int(new_offsets[last])
        shift = np.repeat(starts[first:last] - new_offsets[first:last], np.diff(new_offsets[first : last + 1]))
        out[lo:hi] = blocks[shift + np.arange(lo, hi)]
        first = last
    return out


def from_arrays(
    frame: Table,
    blocks: np.ndarray | None,
    counts: np.ndarray,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    name: str = "trace",
    warnings: tuple[str, ...] = (),
    how_read: tuple[str, ...] = (),
    ids_dense: bool = False,
) -> Trace:
    """A Trace from a request table (a DataFrame or its columns) and flat block ids (``counts[i]``
    ids for request ``i``), sorted by arrival (stable) if it is not. ``ids_dense``: the ids are
    numbered 0, 1, 2, … in order of first use as given; the Trace says so only when the sort moved
    no request (a move can change which id is used first)."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = compact_ids(np.asarray(blocks)) if blocks is not None else np.zeros(0, np.int32)
    n_blocks = np.asarray(counts, np.int64)
    frame = {**frame, "n_blocks": n_blocks} if isinstance(frame, dict) else frame.assign(n_blocks=n_blocks)
    frame, ids, offsets, moved = sort_by_arrival(frame, ids, offsets)
    dense = ids_dense and blocks is not None and not moved
    return Trace(frame, ids, offsets, block_size, blocks is not None, name, warnings + moved, how_read, dense)


def from_records(
    timestamps: Any,
    input_lengths: Any,
    output_lengths: Any,
    hash_ids: list[list[int]] | None,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    name: str = "trace",
    warnings: tuple[str, ...] = (),
) -> Trace:
    """Build a Trace from columns and per-request id lists; sorted by arrival (stable) if it is not."""
    frame = {
        "timestamp": np.asarray(timestamps, dtype=np.int64),
        "input_length": np.asarray(input_lengths, dtype=np.int64),
        "output_length": np.asarray(output_lengths, dtype=np.int64),
    }
    if hash_ids is None:
        return from_arrays(
            frame,
            None,
            np.zeros(len(frame["timestamp"]), np.int64),
            block_size=block_size,
            name=name,
            warnings=warnings,
        )
    counts = np.fromiter((len(x) for x in hash_ids), dtype=np.int64, count=len(hash_ids))
    flat = np.fromiter((b for x in hash_ids for b in x), dtype=np.int64, count=int(counts.sum()))
    return from_arrays(frame, flat, counts, block_size=block_size, name=name, warnings=warnings)
