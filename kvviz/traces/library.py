"""The trace library: imported traces stored by content hash, verified before use, read into memory.

An entry is a folder ``<root>/<id>/`` holding the request table (``requests.parquet``), the
prepared block ids and offsets (``blocks.npy``, ``offsets.npy``) and ``meta.json``. The id is the
first 16 hex digits of the trace's content fingerprint as imported, so the same trace imported
twice is one entry, and an id never comes from a user's path. The block ids are stored renumbered
0, 1, 2, … in order of first use (``Trace.ids_dense``), so no replay relabels them.

Trust: the kernels index the arrays without bounds checks, so an entry is checked before anything
reads it: ``meta.json`` field by field, the arrays' dtypes and shapes against it (from the ``.npy``
headers, cheap enough for every listing), a checksum recorded at import over the data files and
every ``meta.json`` field the numbers depend on (block size included), the arrays' invariants
(``kvviz.traces.model.array_problem``, ``dense_problem``) and the request table's (arrival times
sorted and not negative, lengths in range). The files are read into memory, never mapped, and
the checksum is taken over the bytes read, so a file cut short or rewritten while a process holds
the entry can neither crash it nor change its numbers; ``unchanged`` tells a cache whether the
files are still the ones read. Files are opened relative to the entry's folder and never through
a link, ``events.log`` included. A damaged entry is listed with its reason and never read;
importing the trace again replaces it, keeping its owner and pin. An entry of the first layout
(no ``version`` in ``meta.json``: block ids as imported, a checksum of the data files only) is
upgraded when opened, once its content matches its id.

Sharing: entries imported from the command line are pinned (never evicted); entries kept from the
web are not, have a per-upload size limit and together a share of the cap, and a Keep never evicts
anything (it refuses instead). An import over the cap evicts unpinned entries, oldest first, and
reports and logs each one. Writers hold a library-wide lock (``flock`` on ``.lock``) around their
decisions, so two imports never both count on the same free space; readers need no lock, since an
entry appears, is replaced or goes away by one rename of its whole folder.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import stat
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeVar

import numpy as np

from kvviz.common.errors import InputError, SettingError, setting  # noqa: F401  (its settings raise SettingError)
from kvviz.traces import arrow_input
from kvviz.traces.ingest import MAX_INPUT_LENGTH, MAX_OUTPUT_LENGTH, dense_ids
from kvviz.traces.model import BASE_COLUMNS, Trace, array_problem, dense_problem, fingerprint, read_only
from kvviz.traces.source import MAX_ACCESSES, MAX_REQUESTS

if TYPE_CHECKING:
    import pandas as pd

ROOT_ENV = "KVVIZ_TRACES"
CAP_ENV = "KVVIZ_TRACES_MAX_GB"
WEB_MAX_ENV = "KVVIZ_TRACES_WEB_MAX_GB"
WEB_SHARE_ENV = "KVVIZ_TRACES_WEB_SHARE"
DEFAULT_ROOT = Path("~/.cache/kvviz/traces")
DEFAULT_CAP_GB = 50.0
DEFAULT_WEB_MAX_GB = 1.0
DEFAULT_WEB_SHARE = 0.5
MAX_GB = 1e6  # a petabyte: any larger setting is a typo
CLI, WEB = "cli", "web"  # where an entry came from: the command line, or a visitor's Keep
ID_LENGTH = 16
NAME_LIMIT = 200
META = "meta.json"
DATA_FILES = ("requests.parquet", "blocks.npy", "offsets.npy")
"""The files the checksum covers, in the order it reads them (after ``meta.json``'s fields)."""
VERSION = 2
"""The entry layout: 2 has dense block ids and a checksum over ``meta.json`` too; 1 is upgraded."""
UNCHECKED = frozenset({"checksum", "name", "origin", "pinned", "bytes", "created"})
"""The ``meta.json`` fields outside the checksum: the library changes them (a rename, a pin, a
repair) or they describe the folder, and no number depends on them."""
EVENTS = "events.log"
EVENTS_LIMIT = 1 << 20  # bytes; the log is renamed to events.log.1 past this
LOG = logging.getLogger("kvviz.library")
READ_ONLY = "the trace library is read-only here"

_ID = re.compile(rf"[0-9a-f]{{{ID_LENGTH}}}")
_CHECKSUM = re.compile(r"[0-9a-f]{64}")
_LOCK = ".lock"
_STALE_TMP_S = 6 * 3600
_META_LIMIT = 1 << 20
_NOTES, _NOTE_LIMIT = 1000, 2000  # how_read and warnings: at most this many notes of at most this many characters
_HASH_CHUNK = 1 << 20
_BLOCK_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_OFFSET_DTYPE = np.dtype(np.int64)
_MAX_BLOCK_SIZE = 1 << 20  # the largest block size a trace is read with
T = TypeVar("T")


class _Damage(Exception):
    """Why an entry cannot be used, in words (raised while checking it, never to a caller)."""


@dataclass(frozen=True)
class Entry:
    """What the library knows about one stored trace (its ``meta.json``), or why it is damaged.

    ``pinned`` entries are never evicted (imported from the command line, or pinned by the
    operator); ``origin`` is ``"cli"`` or ``"web"``. A ``damaged`` entry (the reason, in words)
    is listed so that it can be repaired or removed, and never opened; its other fields are
    placeholders except ``bytes`` (its size on disk) and ``created`` (its folder's time).
    """

    id: str
    name: str
    requests: int
    accesses: int
    span_s: float
    block_size: int
    has_block_ids: bool
    bytes: int
    created: float
    checksum: str
    origin: str = CLI
    pinned: bool = True
    how_read: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    version: int = VERSION
    damaged: str | None = None

    def label(self) -> str:
        if self.damaged:
            return f"{self.id} · damaged: {self.damaged}"
        blocks = f"{self.accesses:,} block accesses" if self.has_block_ids else "no block ids"
        kept = "" if self.pinned else " · kept from the web"
        return f"{self.name} · {self.requests:,} requests · {self.span_s:,.0f} s · {blocks}{kept}"


@dataclass(frozen=True)
class Stored:
    """What ``store`` did: the entry now in the library, what happened to it in words (empty for
    a plain new entry), and the entries evicted to make room."""

    entry: Entry
    notes: tuple[str, ...] = ()
    evicted: tuple[Entry, ...] = ()


@dataclass(frozen=True)
class Limits:
    """The library's size limits in bytes: the whole library, one entry kept from the web, and
    every unpinned entry together."""

    cap: int
    web_entry: int
    web_share: int


@dataclass(frozen=True)
class _Array:
    """Where an array sits in its ``.npy`` file, from the header."""

    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int


@dataclass(frozen=True)
class _Checked:
    """An entry whose description and array headers hold together, and the stamp its checksum
    result is remembered under."""

    entry: Entry
    arrays: dict[str, _Array]
    stamp: tuple


_CHECKED: dict[str, tuple[tuple, str | None]] = {}
"""Per entry id: the stamp of the files last read and checked, and the damage found (None: sound)."""
_SERVED: dict[int, tuple[str, tuple]] = {}
"""Per trace ``open_entry`` returned (by ``id``, while it lives): its entry and the stamp read."""


def root() -> Path:
    """The library folder: ``$KVVIZ_TRACES``, else ``~/.cache/kvviz/traces``."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT).expanduser()


def limits() -> Limits:
    """The size limits from the environment, validated (before anything is stored)."""
    sizes = f"a number of GB above 0 and at most {MAX_GB:,.0f}"
    cap = setting(CAP_ENV, DEFAULT_CAP_GB, 1e-9, MAX_GB, sizes)
    web_entry = setting(WEB_MAX_ENV, DEFAULT_WEB_MAX_GB, 1e-9, MAX_GB, sizes)
    share = setting(WEB_SHARE_ENV, DEFAULT_WEB_SHARE, 0.0, 1.0, "a share of the cap from 0 to 1 (0.5: half)")
    return Limits(int(cap * 1e9), int(web_entry * 1e9), int(share * cap * 1e9))


def is_entry_id(text: str) -> bool:
    return isinstance(text, str) and _ID.fullmatch(text) is not None


def entry_id(trace: Trace) -> str:
    return fingerprint(trace)[:ID_LENGTH]


def _missing(eid: str) -> InputError:
    return InputError(f"no trace '{eid}' in the library")


def _damaged(eid: str, reason: str) -> InputError:
    return InputError(f"library entry '{eid}' is damaged ({reason}); import the trace again to replace it")


def _require_id(eid: str) -> None:
    if not is_entry_id(eid):
        raise InputError(f"'{str(eid)[:40]}' is not a library id ({ID_LENGTH} hex digits)", field="trace")


# --- reading --------------------------------------------------------------------------------------------


@contextmanager
def _opened(eid: str) -> Iterator[dict[str, BinaryIO]]:
    """The entry's files, opened relative to its folder and never through a link, so a rename
    while they are read cannot mix two entries. Raises ``_Damage`` or the missing-entry error."""
    try:
        folder = os.open(root() / eid, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise _missing(eid) from None
    except OSError as exc:
        raise _Damage(
            "it is a link or a file, not a folder"
            if exc.errno in (errno.ELOOP, errno.ENOTDIR)
            else f"it cannot be read: {_reason(exc)}"
        ) from None
    files: dict[str, BinaryIO] = {}
    try:
        for name in (META, *DATA_FILES):
            files[name] = _open_file(folder, name)
        yield files
    finally:
        for file in files.values():
            file.close()
        os.close(folder)


def _open_file(folder: int, name: str) -> BinaryIO:
    """One regular file of the entry (a link, a folder or a pipe in its place is damage)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        raise _Damage(f"{name} is missing") from None
    except OSError as exc:
        raise _Damage(
            f"{name} is a link" if exc.errno == errno.ELOOP else f"{name} cannot be read: {_reason(exc)}"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Damage(f"{name} is not a regular file")
    return os.fdopen(fd, "rb")


def _reason(exc: OSError) -> str:
    """An operating-system error in words, without the path it names."""
    return (exc.strerror or type(exc).__name__).lower()


def _checked(eid: str, files: dict[str, BinaryIO]) -> _Checked:
    """The entry as its ``meta.json`` describes it, once the array headers agree with it (and it
    is not already known to be damaged)."""
    entry = _entry_from_meta(eid, _read_meta(files[META]))
    arrays = {
        "blocks.npy": _header(files["blocks.npy"], "blocks.npy", _BLOCK_DTYPES, entry.accesses),
        "offsets.npy": _header(files["offsets.npy"], "offsets.npy", (_OFFSET_DTYPE,), entry.requests + 1),
    }
    stamp = _stamp(files)
    known = _CHECKED.get(eid)
    if known and known[0] == stamp and known[1]:
        raise _Damage(known[1])
    return _Checked(entry, arrays, stamp)


def _stamp(files: dict[str, BinaryIO]) -> tuple:
    """Which files these are and as what they were last written: a rewrite in place changes the
    change time (which no one can set back), a replacement the inode."""
    return tuple(
        (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)
        for s in (os.fstat(files[n].fileno()) for n in (META, *DATA_FILES))
    )


def _read_meta(file: BinaryIO) -> object:
    text = file.read(_META_LIMIT + 1)
    if len(text) > _META_LIMIT:
        raise _Damage(f"{META} is larger than {_META_LIMIT:,} bytes")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Damage(f"{META} is not valid JSON") from None


_WHOLE, _NUMBER, _FLAG, _TEXT, _TEXTS = "a whole number", "a number", "true or false", "text", "a list of texts"
_META_FIELDS = {
    "id": _TEXT,
    "name": _TEXT,
    "requests": _WHOLE,
    "accesses": _WHOLE,
    "span_s": _NUMBER,
    "block_size": _WHOLE,
    "has_block_ids": _FLAG,
    "bytes": _WHOLE,
    "created": _NUMBER,
    "checksum": _TEXT,
    "origin": _TEXT,
    "pinned": _FLAG,
    "how_read": _TEXTS,
    "warnings": _TEXTS,
}


def _is_kind(value: object, kind: str) -> bool:
    if kind == _WHOLE:
        return type(value) is int and 0 <= value < 2**63
    if kind == _NUMBER:
        return type(value) in (int, float) and math.isfinite(value) and value >= 0
    if kind == _FLAG:
        return type(value) is bool
    if kind == _TEXT:
        return type(value) is str and len(value) <= _NOTE_LIMIT
    return type(value) is list and len(value) <= _NOTES and all(type(v) is str and len(v) <= _NOTE_LIMIT for v in value)


def _entry_from_meta(eid: str, data: object) -> Entry:
    """``meta.json`` checked field by field (types, ranges, agreement with the folder's id)."""
    if not isinstance(data, dict):
        raise _Damage(f"{META} does not hold an object")
    for key, kind in _META_FIELDS.items():
        if key not in data:
            raise _Damage(f"{META} has no field '{key}'")
        if not _is_kind(data[key], kind):
            raise _Damage(f"{META} field '{key}' is not {kind}")
    fields = {key: data[key] for key in _META_FIELDS} | {"version": data.get("version", 1)}
    problems = [
        (
            type(fields["version"]) is not int or fields["version"] not in (1, VERSION),
            "gives a layout version this kvviz does not know",
        ),
        (fields["id"] != eid, "names another id"),
        (fields["block_size"] < 1, "gives a block size below 1"),
        (fields["block_size"] > _MAX_BLOCK_SIZE, f"gives a block size above {_MAX_BLOCK_SIZE:,}"),
        (fields["requests"] > MAX_REQUESTS, f"gives more than {MAX_REQUESTS:,} requests"),
        (fields["accesses"] > MAX_ACCESSES, f"gives more than {MAX_ACCESSES:,} block accesses"),
        (fields["origin"] not in (CLI, WEB), "gives an unknown origin"),
        (not _CHECKSUM.fullmatch(fields["checksum"]), "holds no valid checksum"),
        (len(fields["name"]) > NAME_LIMIT, f"gives a name longer than {NAME_LIMIT} characters"),
        (not fields["has_block_ids"] and fields["accesses"] > 0, "gives block accesses to a trace without ids"),
    ]
    for bad, what in problems:
        if bad:
            raise _Damage(f"{META} {what}")
    return Entry(**fields | {"how_read": tuple(fields["how_read"]), "warnings": tuple(fields["warnings"])})


def _header(file: BinaryIO, name: str, dtypes: tuple[np.dtype, ...], length: int) -> _Array:
    """An ``.npy`` header checked: one dimension of ``length`` values of one of ``dtypes``, and a
    file exactly that long."""
    from numpy.lib import format as npy

    readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
    try:
        reader = readers.get(npy.read_magic(file))
        if reader is None:
            raise ValueError
        shape, _, dtype = reader(file)  # the order (C or Fortran) is moot in one dimension
    except (ValueError, SyntaxError, TypeError, EOFError):
        raise _Damage(f"{name} is not an array file kvviz wrote") from None
    if dtype not in dtypes:
        raise _Damage(f"{name} holds {dtype} values, not {' or '.join(map(str, dtypes))}")
    if len(shape) != 1:
        raise _Damage(f"{name} has {len(shape)} dimensions, not 1")
    if shape[0] != length:
        raise _Damage(f"{name} holds {shape[0]:,} values where {META} says {length:,}")
    offset = file.tell()
    if os.fstat(file.fileno()).st_size != offset + length * dtype.itemsize:
        raise _Damage(f"{name} is not as long as its header says (cut short or extended)")
    return _Array(shape, dtype, offset)


def _digest(entry: Entry, parts: dict[str, np.ndarray]) -> str:
    """The checksum: blake2b over ``meta.json``'s checked fields (every one but ``UNCHECKED``;
    none in the first layout) and the data files' names, sizes and bytes."""
    digest = _covering(entry)
    for name in DATA_FILES:
        _feed(digest, name, (parts[name].data,))
    return digest.hexdigest()


def _covering(entry: Entry) -> hashlib.blake2b:
    """The checksum begun: fed ``meta.json``'s checked fields, the data files to come (``_feed``)."""
    digest = hashlib.blake2b(digest_size=32)
    if entry.version > 1:
        covered = {k: v for k, v in asdict(entry).items() if k not in UNCHECKED and k != "damaged"}
        digest.update(json.dumps(covered, sort_keys=True).encode())
    return digest


def _feed(digest: hashlib.blake2b, name: str, pieces: tuple[memoryview, ...]) -> None:
    """One data file into the checksum: its name, its size and its bytes (``pieces``, in order)."""
    digest.update(f"{name}:{sum(p.nbytes for p in pieces)}:".encode())
    for piece in pieces:
        digest.update(piece)


def _read(file: BinaryIO, name: str) -> np.ndarray:
    """A whole file's bytes in memory, checked to be as long as it was when opened: a file cut
    short while it is read is damage, never a fault, as a memory map of it would be."""
    size = os.fstat(file.fileno()).st_size
    data = np.empty(size, np.uint8)
    view, done = memoryview(data), 0
    file.seek(0)
    while done < size and (n := file.readinto(view[done : done + _HASH_CHUNK])):
        done += n
    if done != size or file.read(1):
        raise _Damage(f"{name} changed while it was read")
    return data


def _loaded(eid: str, checked: _Checked, files: dict[str, BinaryIO]) -> Trace:
    """The trace, read into memory, once the checksum over the bytes read and every invariant
    hold. A first-layout entry is checked against its id instead and comes back renumbered."""
    entry = checked.entry
    parts = {name: _read(files[name], name) for name in DATA_FILES}
    if _digest(entry, parts) != entry.checksum:
        raise _Damage("its content does not match the checksum taken at import")
    blocks, offsets = (_array(parts[n], checked.arrays[n]) for n in ("blocks.npy", "offsets.npy"))
    requests = _requests(parts.pop("requests.parquet"), entry)
    if problem := array_problem(blocks, offsets, {len(requests)}):
        raise _Damage(problem)
    if not np.array_equal(requests["n_blocks"].to_numpy(), np.diff(offsets)):
        raise _Damage("the request table's block counts do not match the offsets")
    try:
        trace = Trace(
            requests,
            blocks,
            offsets,
            entry.block_size,
            entry.has_block_ids,
            entry.name,
            entry.warnings,
            entry.how_read,
            ids_dense=entry.version > 1,
        )
    except InputError:  # the Trace checks the dense ids itself, so they are scanned once
        raise _Damage(dense_problem(blocks) or "its arrays are inconsistent") from None
    return trace if entry.version > 1 else _upgraded(eid, entry, trace)


def _array(data: np.ndarray, at: _Array) -> np.ndarray:
    """An array in a file's bytes (from its checked header), read-only: sessions share it."""
    if at.offset % at.dtype.itemsize:
        raise _Damage("an array file's values are not aligned")
    return read_only(data[at.offset :].view(at.dtype))


def _requests(data: np.ndarray, entry: Entry) -> pd.DataFrame:
    """The request table, once the columns every view reads are there as whole numbers, one row
    per request, with arrival times sorted and not negative and lengths in range."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(arrow_input.from_bytes(data)).to_pandas()
    except Exception:  # noqa: BLE001 - pyarrow raises many types for a bad file; the entry is damaged
        raise _Damage("requests.parquet cannot be read") from None
    for column in (*BASE_COLUMNS, "n_blocks"):
        if column not in table or table[column].dtype != np.int64:
            raise _Damage(f"the request table has no whole-number column '{column}'")
    if len(table) != entry.requests:
        raise _Damage(f"the request table has {len(table):,} rows where {META} says {entry.requests:,}")
    times, inputs, outputs = (table[c].to_numpy() for c in BASE_COLUMNS)
    problems = [
        (bool((times < 0).any()), "arrival times below 0"),
        (bool((np.diff(times) < 0).any()), "arrival times out of order"),
        (bool((inputs < 1).any()), "an input length below 1"),
        (bool((inputs > MAX_INPUT_LENGTH).any()), f"an input length above {MAX_INPUT_LENGTH:,}"),
        (bool((outputs < 0).any()), "an output length below 0"),
        (bool((outputs > MAX_OUTPUT_LENGTH).any()), f"an output length above {MAX_OUTPUT_LENGTH:,}"),
    ]
    for bad, what in problems:
        if bad:
            raise _Damage(f"the request table has {what}")
    return table


def _upgraded(eid: str, entry: Entry, trace: Trace) -> Trace:
    """A first-layout entry, whose checksum left ``meta.json`` out: accepted once the trace it
    describes (block size included) has the entry's id, then renumbered and, where the library
    can be written, stored again in the current layout (keeping its name, owner, pin and time)."""
    if entry_id(trace) != eid:
        raise _Damage(f"its content or the block size in {META} does not match its id")
    dense = replace(trace, blocks=dense_ids(trace.blocks), ids_dense=True)  # a Trace keeps read-only views
    try:
        with _locked(entry.origin) as folder:
            if _inspect(eid).version == 1:
                _rewrite(folder, dense, entry)
    except (InputError, OSError) as exc:  # a read-only library: the entry is upgraded in memory only
        LOG.info("library entry %s kept in its first layout (%s)", eid, exc)
    return dense


def _rewrite(folder: Path, trace: Trace, entry: Entry) -> None:
    """Store an entry again in the current layout in place of the one there (under the lock)."""
    tmp = folder / f".tmp-{entry.id}-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        new = _write(tmp, trace, entry.id, entry.name, entry.origin, pinned=entry.pinned, created=entry.created)
        _discard_entry(folder, entry.id)
        os.replace(tmp, folder / new.id)
    finally:
        _discard(tmp)


def _broken(eid: str, reason: str) -> Entry:
    """A damaged entry as listed: its size on disk and its folder's time (never following a link)."""
    folder = root() / eid
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        raise _missing(eid) from None
    return Entry(
        eid,
        eid,
        0,
        0,
        0.0,
        1,
        False,
        _disk_size(folder) if stat.S_ISDIR(info.st_mode) else 0,
        info.st_mtime,
        "",
        "",
        False,
        damaged=reason,
    )


def _disk_size(folder: Path) -> int:
    """The bytes of the files directly in ``folder`` (links not followed; 0 if it cannot be read)."""
    try:
        with os.scandir(folder) as children:
            return sum(c.stat(follow_symlinks=False).st_size for c in children)
    except OSError:
        return 0


def _inspect(eid: str) -> Entry:
    """The entry as listed: its description, or damaged with the reason. Cheap (no checksum)."""
    try:
        with _opened(eid) as files:
            return _checked(eid, files).entry
    except _Damage as damage:
        return _broken(eid, str(damage))
    except OSError as exc:
        return _broken(eid, f"it cannot be read: {_reason(exc)}")


def entries(*, verify: bool = False) -> list[Entry]:
    """Every entry, newest first; damaged ones flagged (``Entry.damaged``), never hidden.

    The listing reads each entry's description and array headers only; damage that only the
    checksum reveals is flagged once this process has opened the entry, or, with ``verify``,
    by reading every entry whole now (the command line's ``--list``)."""
    folder = root()
    try:
        with os.scandir(folder) as children:
            names = [c.name for c in children if is_entry_id(c.name)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"the trace library cannot be read here ({_reason(exc)})", field="trace") from None
    found = []
    for name in names:
        try:
            if verify:
                with suppress(InputError):  # damage is flagged by _inspect below
                    open_entry(name)
            found.append(_inspect(name))
        except InputError:  # removed while we listed
            continue
    return sorted(found, key=lambda e: e.created, reverse=True)


def open_entry(eid: str) -> Trace:
    """The stored trace, verified, in memory (its arrays read-only), its block ids dense."""
    _require_id(eid)
    try:
        with _opened(eid) as files:
            checked = _checked(eid, files)
            try:
                trace = _loaded(eid, checked, files)
            except _Damage as damage:
                _CHECKED[eid] = (checked.stamp, str(damage))
                raise
            _CHECKED[eid] = (checked.stamp, None)
            _SERVED[id(trace)] = (eid, checked.stamp)
            weakref.finalize(trace, _SERVED.pop, id(trace), None)
            return trace
    except _Damage as damage:
        if not os.path.lexists(root() / eid):
            raise _missing(eid) from None
        raise _damaged(eid, str(damage)) from None
    except OSError as exc:
        raise _damaged(eid, f"it cannot be read: {_reason(exc)}") from None


def unchanged(trace: Trace) -> bool:
    """Whether a trace ``open_entry`` returned may be served again: its entry's files are still
    the ones it was read from (same files, sizes, modification and change times). A cache asks
    before each use (a few ``stat`` calls); False sends it back to ``open_entry``, which reads
    the entry again or names its damage. True for a trace that did not come from the library."""
    known = _SERVED.get(id(trace))
    if known is None:
        return True
    eid, stamp = known
    try:
        with _opened(eid) as files:
            return _stamp(files) == stamp
    except (_Damage, InputError, OSError):
        return False


def _verified(eid: str) -> Entry | None:
    """The entry if it is whole and sound (fully verified), else None (absent or damaged)."""
    try:
        open_entry(eid)
    except InputError:
        return None
    return _inspect(eid)


# --- writing --------------------------------------------------------------------------------------------


def _write_error(exc: OSError, origin: str) -> InputError:
    """An operating-system error while writing, in one line without the library's folder."""
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        advice = (
            "traces cannot be kept on this server" if origin == WEB else f"set {ROOT_ENV} to a folder you can write"
        )
        return InputError(f"{READ_ONLY}; {advice}")
    return InputError(f"the trace library could not be written ({_reason(exc)})")


_HOLDING = threading.local()  # whether this thread holds the lock (an upgrade inside a store)


@contextmanager
def _locked(origin: str) -> Iterator[Path]:
    """The library folder, held under the library-wide lock (again by a thread that holds it
    already); an unwritable library is refused."""
    folder = root()
    if getattr(_HOLDING, "held", False):
        yield folder
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                f"the trace library's lock file ({_LOCK}) is a link, which it did not make: remove it"
            ) from None
        raise _write_error(exc, origin) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HOLDING.held = True
        yield folder
    except OSError as exc:
        raise _write_error(exc, origin) from None
    finally:
        _HOLDING.held = False
        os.close(fd)


def store(trace: Trace, name: str | None = None, *, origin: str = CLI) -> Stored:
    """Put a trace in the library and return what happened.

    An equal trace already stored and sound is kept (a ``name`` given on the command line renames
    it; a command-line import pins a web-kept one); a damaged one is replaced. A new entry must fit:
    from the command line, unpinned entries are evicted oldest first if needed; from the web
    (``origin="web"``) nothing is ever evicted, and the entry must fit its own limit and the web's
    share. Settings are validated before anything is written.
    """
    if origin not in (CLI, WEB):
        raise ValueError(f"origin {origin!r}")
    bounds = limits()
    contents = _contents(trace)
    eid = entry_id(trace)
    title = (name or trace.name)[:NAME_LIMIT]
    rename = name[:NAME_LIMIT] if name is not None and origin == CLI else None
    with _locked(origin):
        if done := _keep_existing(eid, rename, origin):
            return done
    _plan([e for e in entries() if e.id != eid], _estimate(trace), bounds, origin)  # early: before writing
    with _locked(origin) as folder:
        _drop_stale(folder)
        tmp = folder / f".tmp-{eid}-{uuid.uuid4().hex}"
        tmp.mkdir()
    try:
        entry = _write(tmp, trace, eid, title, origin, contents=contents)
        with _locked(origin):
            return _keep_existing(eid, rename, origin) or _place(tmp, entry, bounds, origin)
    except OSError as exc:
        raise _write_error(exc, origin) from None
    finally:
        _discard(tmp)


class _Beside:
    """A result made on a thread of its own while the caller does other work, handed over once
    (``take``) and then no longer held. ``store`` makes the data files' contents this way while the
    content hash names the entry, and ``_put`` writes a file while the checksum reads it: passes
    that run without the interpreter's lock, so on two cores the one hides the other. Made for
    nothing when the entry exists already."""

    def __init__(self, make: Callable[[], T], name: str) -> None:
        self._out: dict[str, object] = {}
        self._thread = threading.Thread(target=self._run, args=(make,), name=f"kvviz-{name}", daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], T]) -> None:
        try:
            self._out["value"] = make()
        except BaseException as exc:  # raised in the caller's thread, by take
            self._out["error"] = exc

    def take(self) -> T:
        self._thread.join()
        if "error" in self._out:
            raise self._out.pop("error")
        return self._out.pop("value")


Contents = dict[str, Callable[[], tuple[memoryview, ...]]]
"""Per data file, what hands over its bytes (in pieces, in order) once they are made."""


def _contents(trace: Trace) -> Contents:
    """The data files' bytes, the request table's and the renumbered block ids' each made on a
    thread of its own (``_Beside``), started now."""
    _ = trace.requests  # the table built once, here, before two threads read it
    table = _Beside(lambda: _parquet(trace), "parquet")
    blocks = _Beside(lambda: _npy(trace.blocks if trace.ids_dense else dense_ids(trace.blocks)), "renumber")
    return {
        "requests.parquet": table.take,
        "blocks.npy": blocks.take,
        "offsets.npy": lambda: _npy(trace.offsets.astype(np.int64, copy=False)),
    }


def _parquet(trace: Trace) -> tuple[memoryview, ...]:
    """The request table in Parquet, in Arrow's memory (what writing it to its file would write)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(trace.requests, preserve_index=False), sink)
    return (memoryview(sink.getvalue()),)


def _npy(array: np.ndarray) -> tuple[memoryview, ...]:
    """A one-dimensional array's ``.npy`` file (what ``np.save`` writes): its header, then its values."""
    from numpy.lib import format as npy

    array = np.ascontiguousarray(array)
    header = io.BytesIO()
    npy.write_array_header_1_0(header, npy.header_data_from_array_1_0(array))
    return memoryview(header.getvalue()), memoryview(array).cast("B")


def _put(folder: Path, name: str, pieces: tuple[memoryview, ...], digest: hashlib.blake2b) -> None:
    """A data file written from its bytes while the checksum reads the same bytes: the write on a
    thread of its own, the hash here, so the file is never read back for its checksum."""
    writing = _Beside(lambda: _write_pieces(folder / name, pieces), "write")
    _feed(digest, name, pieces)
    writing.take()


def _write_pieces(path: Path, pieces: tuple[memoryview, ...]) -> None:
    with open(path, "xb") as out:
        for piece in pieces:
            out.write(piece)


def _estimate(trace: Trace) -> int:
    """A lower bound of an entry's size: its arrays (the request table comes on top)."""
    return int(trace.blocks.nbytes + trace.offsets.nbytes)


def _keep_existing(eid: str, rename: str | None, origin: str) -> Stored | None:
    """When a sound entry with this id exists: keep it, renamed or pinned as asked (under the lock)."""
    entry = _verified(eid)
    if entry is None:
        return None
    changes, notes = {}, []
    if rename is not None and rename != entry.name:
        changes["name"] = rename
        notes.append(f"already in the library as {eid}; renamed from '{entry.name}' to '{rename}'")
    if origin == CLI and not entry.pinned:
        changes["pinned"] = True
        notes.append(f"already in the library as {eid} (kept from the web); now pinned, so never evicted")
    if changes:
        entry = _rewrite_meta(entry, **changes)
    return Stored(entry, tuple(notes) or (f"already in the library as {eid}; kept as it was",))


def _write(
    tmp: Path,
    trace: Trace,
    eid: str,
    name: str,
    origin: str,
    *,
    pinned: bool | None = None,
    created: float | None = None,
    contents: Contents | None = None,
) -> Entry:
    """The entry's files in ``tmp``, block ids renumbered in order of first use (``contents``: the
    files' bytes, when the caller has begun making them), its checksum taken from the bytes
    written. ``pinned`` defaults to the origin's (a command-line import pins)."""
    contents = contents or _contents(trace)
    ts = trace.column("timestamp")
    entry = Entry(
        eid,
        name,
        trace.n_requests,
        int(len(trace.blocks)),
        float(ts.max() - ts.min()) / 1000 if len(ts) else 0.0,
        trace.block_size,
        trace.has_block_ids,
        0,
        time.time() if created is None else created,
        "",
        origin,
        origin == CLI if pinned is None else pinned,
        _notes(trace.how_read),
        _notes(trace.warnings),
    )
    digest = _covering(entry)
    for file in DATA_FILES:  # the renumbered ids are not held past their file
        _put(tmp, file, contents[file](), digest)
    size = sum(p.stat().st_size for p in tmp.iterdir()) + 4096
    entry = replace(entry, bytes=size, checksum=digest.hexdigest())
    _write_meta(tmp, entry)
    return entry


def _notes(notes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(note[:_NOTE_LIMIT] for note in notes[:_NOTES])


def _write_meta(folder: Path, entry: Entry) -> None:
    """``meta.json`` replaced in one rename, so a reader sees the old or the new, whole; written
    relative to the entry's folder, opened without following a link (as the readers do)."""
    data = json.dumps({k: v for k, v in asdict(entry).items() if k != "damaged"}).encode()
    part = f".{META}-{uuid.uuid4().hex}"
    at = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=at)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(part, META, src_dir_fd=at, dst_dir_fd=at)
    finally:
        os.close(at)


def _rewrite_meta(entry: Entry, **changes) -> Entry:
    entry = replace(entry, **changes)
    _write_meta(root() / entry.id, entry)
    return entry


def _plan(others: list[Entry], size: int, bounds: Limits, origin: str) -> list[Entry]:
    """The entries to evict so that ``size`` more bytes fit (oldest unpinned first), or a refusal."""
    total = sum(e.bytes for e in others) + size
    if origin == WEB:
        unpinned = sum(e.bytes for e in others if not e.pinned and not e.damaged) + size
        refusals = [
            (
                size > bounds.web_entry,
                f"this trace needs {_size(size)}; a trace kept from the web may take at most {_size(bounds.web_entry)}",
            ),
            (
                unpinned > bounds.web_share,
                f"traces kept from the web would take {_size(unpinned)}, over "
                f"their share of the library ({_size(bounds.web_share)})",
            ),
            (total > bounds.cap, f"the library would hold {_size(total)}, over its cap of {_size(bounds.cap)}"),
        ]
        for refused, why in refusals:
            if refused:
                raise InputError(
                    f"not kept: {why}; keeping a trace never removes other traces, so ask whoever "
                    "runs this server to make room"
                )
        return []
    evict = []
    for entry in sorted((e for e in others if not e.pinned and not e.damaged), key=lambda e: e.created):
        if total <= bounds.cap:
            break
        evict.append(entry)
        total -= entry.bytes
    if total > bounds.cap:
        raise InputError(
            f"not stored: the trace needs {_size(size)} and the library's cap is {_size(bounds.cap)}, "
            f"with {_size(total - size)} in pinned or damaged entries that are never evicted; remove or "
            f"unpin some (import --remove ID, --unpin ID) or raise {CAP_ENV}; nothing was evicted"
        )
    return evict


def _place(tmp: Path, entry: Entry, bounds: Limits, origin: str) -> Stored:
    """Move the written entry in (replacing a damaged one) and evict what the cap requires (under the lock)."""
    folder = tmp.parent
    listed = entries()
    evict = _plan([e for e in listed if e.id != entry.id], entry.bytes, bounds, origin)
    notes = []
    final = folder / entry.id
    if os.path.lexists(final):
        if owner := _owner(entry.id):
            entry = replace(entry, origin=owner[0], pinned=entry.pinned or owner[1])
            _write_meta(tmp, entry)
        _discard_entry(folder, entry.id)
        notes.append(f"replaced the damaged entry {entry.id}")
        _event("repaired", entry, "imported again")
    os.replace(tmp, final)
    for old in evict:
        _discard_entry(folder, old.id)
        _event("evicted", old, f"to make room for {entry.id} under the cap of {_size(bounds.cap)}")
    notes += [
        f"evicted {e.id} ('{e.name}', {_size(e.bytes)}, kept from the web) to stay under the library's cap"
        for e in evict
    ]
    return Stored(entry, tuple(notes), tuple(evict))


def _owner(eid: str) -> tuple[str, bool] | None:
    """A damaged entry's origin and pin, when its ``meta.json`` still gives them, so that a repair
    keeps them (a web Keep repairing a command-line entry leaves it pinned); None otherwise."""
    try:
        folder = os.open(root() / eid, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with _open_file(folder, META) as file:
            data = _read_meta(file)
    except (_Damage, OSError):
        return None
    finally:
        os.close(folder)
    if not isinstance(data, dict) or data.get("origin") not in (CLI, WEB) or type(data.get("pinned")) is not bool:
        return None
    return data["origin"], data["pinned"]


def _discard_entry(folder: Path, eid: str) -> None:
    """Take an entry's folder out in one rename, then delete it (a reader sees it whole or not at all)."""
    gone = folder / f".tmp-gone-{eid}-{uuid.uuid4().hex}"
    os.replace(folder / eid, gone)
    _discard(gone)


def _discard(path: Path) -> None:
    """Delete a folder, or a link or file in its place, never following a link."""
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        return


def _drop_stale(folder: Path) -> None:
    """Leftovers of interrupted imports (under the lock, so none is another import's work)."""
    now = time.time()
    for child in folder.glob(".tmp-*"):
        try:
            if now - child.lstat().st_mtime > _STALE_TMP_S:
                _discard(child)
        except OSError:
            continue


def _event(kind: str, entry: Entry, why: str) -> None:
    """Log one change to the library (logger ``kvviz.library``) and append it to ``events.log``."""
    level = logging.WARNING if kind == "evicted" else logging.INFO
    LOG.log(
        level,
        "%s %s (%r, %d bytes, %s): %s",
        kind,
        entry.id,
        entry.name,
        entry.bytes,
        "pinned" if entry.pinned else entry.origin,
        why,
    )
    line = (
        json.dumps(
            {"time": time.time(), "event": kind, "id": entry.id, "name": entry.name, "bytes": entry.bytes, "why": why}
        )
        + "\n"
    )
    log = root() / EVENTS
    try:
        if os.path.isfile(log) and not os.path.islink(log) and os.lstat(log).st_size > EVENTS_LIMIT:
            os.replace(log, log.with_name(EVENTS + ".1"))  # a rename moves a link, never its target
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        LOG.warning(
            "the library's event log %s; nothing was written to it",
            f"({EVENTS}) is a link, which the library did not make: remove it"
            if exc.errno == errno.ELOOP
            else f"could not be opened ({_reason(exc)})",
        )
        return
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            LOG.warning("the library's event log (%s) is not a regular file; nothing was written to it", EVENTS)
            return
        out.write(line)


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


# --- the operator's commands ----------------------------------------------------------------------------


def remove(eid: str) -> Entry | None:
    """Take an entry out (damaged or not) and return it; None when there was none."""
    _require_id(eid)
    if not os.path.lexists(root() / eid):
        return None
    with _locked(CLI) as folder:
        try:
            entry = _inspect(eid)
        except InputError:
            return None
        _discard_entry(folder, eid)
        _event("removed", entry, "by the operator")
    return entry


def set_pinned(eid: str, pinned: bool) -> Entry:
    """Pin an entry (never evicted) or unpin it (evictable by a command-line import over the cap)."""
    _require_id(eid)
    if not os.path.lexists(root() / eid):
        raise _missing(eid)
    with _locked(CLI):
        entry = _inspect(eid)
        if entry.damaged:
            raise _damaged(eid, entry.damaged)
        if entry.pinned != pinned:
            entry = _rewrite_meta(entry, pinned=pinned)
            _event("pinned" if pinned else "unpinned", entry, "by the operator")
    return entry
