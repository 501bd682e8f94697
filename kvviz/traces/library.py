"""The trace library: imported traces stored by content hash, opened memory-mapped.

An entry is a folder ``<root>/<id>/`` holding the request table (``requests.parquet``), the
prepared block ids and offsets (``blocks.npy``, ``offsets.npy``, memory-mapped when read) and
``meta.json``. The id is the first 16 hex digits of the trace's content fingerprint, so the
same trace imported twice is one entry, and an id never comes from a user's path. Writes go to a
temporary folder renamed into place (``os.replace``): a reader sees a whole entry or none, and two
concurrent imports of one trace leave one intact entry. Past the size cap the oldest entries go.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kvviz.errors import InputError
from kvviz.traces.model import Trace, fingerprint

ROOT_ENV = "KVVIZ_TRACES"
CAP_ENV = "KVVIZ_TRACES_MAX_GB"
DEFAULT_ROOT = Path("~/.cache/kvviz/traces")
DEFAULT_CAP_GB = 50.0
ID_LENGTH = 16
_ID = re.compile(rf"[0-9a-f]{{{ID_LENGTH}}}")
_STALE_TMP_S = 6 * 3600


@dataclass(frozen=True)
class Entry:
    """What the library knows about one stored trace (its ``meta.json``)."""

    id: str
    name: str
    requests: int
    accesses: int
    span_s: float
    block_size: int
    has_block_ids: bool
    bytes: int
    created: float
    how_read: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def label(self) -> str:
        blocks = f"{self.accesses:,} block accesses" if self.has_block_ids else "no block ids"
        return f"{self.name} · {self.requests:,} requests · {self.span_s:,.0f} s · {blocks}"


def root() -> Path:
    """The library folder: ``$KVVIZ_TRACES``, else ``~/.cache/kvviz/traces``."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT).expanduser()


def cap_bytes() -> int:
    try:
        gb = float(os.environ.get(CAP_ENV, DEFAULT_CAP_GB))
    except ValueError:
        gb = DEFAULT_CAP_GB
    return int((gb if gb > 0 else DEFAULT_CAP_GB) * 1e9)


def is_entry_id(text: str) -> bool:
    return isinstance(text, str) and _ID.fullmatch(text) is not None


def entry_id(trace: Trace) -> str:
    return fingerprint(trace)[:ID_LENGTH]


def store(trace: Trace, name: str | None = None) -> Entry:
    """Put a trace in the library (atomically) and return its entry; an equal trace is stored once."""
    folder = root()
    folder.mkdir(parents=True, exist_ok=True)
    eid = entry_id(trace)
    final = folder / eid
    if (final / "meta.json").is_file():
        return _meta(eid)
    tmp = folder / f".tmp-{eid}-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        entry = _write(tmp, trace, eid, name or trace.name)
        try:
            os.replace(tmp, final)
        except OSError:
            if not (final / "meta.json").is_file():   # someone else's import won; anything else is an error
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cleanup(keep=eid)
    return entry if (final / "meta.json").is_file() else _meta(eid)


def _write(tmp: Path, trace: Trace, eid: str, name: str) -> Entry:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(trace.requests, preserve_index=False), tmp / "requests.parquet")
    np.save(tmp / "blocks.npy", np.ascontiguousarray(trace.blocks))
    np.save(tmp / "offsets.npy", np.ascontiguousarray(trace.offsets, dtype=np.int64))
    ts = trace.requests["timestamp"].to_numpy()
    size = sum(p.stat().st_size for p in tmp.iterdir()) + 4096
    entry = Entry(eid, name[:200], trace.n_requests, int(len(trace.blocks)),
                  float(ts.max() - ts.min()) / 1000 if len(ts) else 0.0, trace.block_size, trace.has_block_ids,
                  size, time.time(), tuple(trace.how_read), tuple(trace.warnings))
    (tmp / "meta.json").write_text(json.dumps(asdict(entry)))
    return entry


def _meta(eid: str) -> Entry:
    try:
        data = json.loads((root() / eid / "meta.json").read_text())
        data["how_read"], data["warnings"] = tuple(data.get("how_read", ())), tuple(data.get("warnings", ()))
        return Entry(**data)
    except (OSError, ValueError, TypeError):
        raise InputError(f"no trace '{eid}' in the library", field="trace") from None


def entries() -> list[Entry]:
    """Every whole entry, newest first."""
    folder = root()
    if not folder.is_dir():
        return []
    found = []
    for child in folder.iterdir():
        if is_entry_id(child.name) and (child / "meta.json").is_file():
            try:
                found.append(_meta(child.name))
            except InputError:
                continue
    return sorted(found, key=lambda e: e.created, reverse=True)


def open_entry(eid: str) -> Trace:
    """The stored trace, its block arrays memory-mapped (read-only)."""
    if not is_entry_id(eid):
        raise InputError(f"'{eid[:40]}' is not a library id ({ID_LENGTH} hex digits)", field="trace")
    import pyarrow.parquet as pq

    entry = _meta(eid)
    folder = root() / eid
    try:
        requests = pq.read_table(folder / "requests.parquet").to_pandas()
        blocks = np.load(folder / "blocks.npy", mmap_mode="r")
        offsets = np.load(folder / "offsets.npy", mmap_mode="r")
    except (OSError, ValueError):
        raise InputError(f"the library entry '{eid}' is damaged; import the trace again", field="trace") from None
    return Trace(requests, blocks, offsets, entry.block_size, entry.has_block_ids, entry.name,
                 entry.warnings, entry.how_read)


def remove(eid: str) -> None:
    """Take an entry out: renamed away first, so no reader sees half an entry."""
    folder = root()
    gone = folder / f".tmp-gone-{eid}-{uuid.uuid4().hex}"
    try:
        os.replace(folder / eid, gone)
    except OSError:
        return
    shutil.rmtree(gone, ignore_errors=True)


def cleanup(keep: str | None = None) -> list[str]:
    """Drop the oldest entries while the library is over its size cap (never ``keep``); also
    leftovers of interrupted imports. Returns the ids removed."""
    folder, now = root(), time.time()
    for child in folder.glob(".tmp-*"):
        try:
            if now - child.stat().st_mtime > _STALE_TMP_S:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:
            continue
    listed = entries()
    total, removed = sum(e.bytes for e in listed), []
    for entry in sorted(listed, key=lambda e: e.created):
        if total <= cap_bytes():
            break
        if entry.id == keep:
            continue
        remove(entry.id)
        total -= entry.bytes
        removed.append(entry.id)
    return removed
