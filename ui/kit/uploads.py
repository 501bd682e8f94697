"""Uploads held in server memory: one copy per content, for as long as a connected session shows it.

A viewer's upload is held here, keyed by its content's digest: its bytes and the traces parsed from
them. A session keeps only the digest, so a closed tab leaves no copy in the sessions Streamlit
keeps for reconnecting. Each trace picker of a session (a *slot*) holds at most one upload: its last,
kept while the viewer looks at another source (so coming back finds it) and replaced by the next.

Every ``SWEEP_S`` seconds (``$KVVIZ_UPLOAD_SWEEP_S`` sets another interval) a thread looks at the
sessions that hold an upload. One whose browser has been gone ``GRACE_S`` seconds (a closed tab, not a
network blip; ``$KVVIZ_UPLOAD_GRACE_S`` sets another wait) is shut down, which frees its uploaded files
and its state, and every upload no session shows any more is dropped, with the cache entries derived
from it (``released_with_upload``). So a closed tab's upload is gone within ``GRACE_S + 2 * SWEEP_S``
seconds (the first sweep that finds the browser gone starts the grace, a later one ends it). While
uploads are held the sweeper also collects garbage and asks glibc to return freed memory to the
system (``sweep``).

Parsing takes several times a file's size in passing, so large parses (``RUNS_ALONE_BYTES`` and
more, and every compressed file, which may inflate) run one at a time, in arrival order, and a
viewer whose parse waits is told so.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import streamlit as st

from kvviz.traces import MIB, Trace, fingerprint
from kvviz.traces.ingest import return_freed_memory
from kvviz.traces.library import SettingError, setting
from ui.kit import streamlit_private

_LOG = logging.getLogger(__name__)
GRACE_S = 30  # a browser gone this long has closed its tab: its session ends
GRACE_ENV = "KVVIZ_UPLOAD_GRACE_S"
SWEEP_S = 10  # how often the sweeper looks
SWEEP_ENV = "KVVIZ_UPLOAD_SWEEP_S"
RUNS_ALONE_BYTES = 2 * MIB
COMPRESSED = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd")  # gzip, zstd: what they inflate to is not known in advance
PARSES_KEPT = 2  # parsed traces kept per upload (a viewer switching reading options back and forth)
SESSION_SLOT = "session trace"
"""The slot of a session trace that still carries its bytes (see ``trace``)."""


@dataclass
class Upload:
    """One upload's bytes and the traces parsed from them, by (name, reading options), newest last."""

    data: bytes
    traces: dict[tuple, Trace] = field(default_factory=dict)


class Registry:
    """Uploads by digest, and which slot of which session shows each.

    ``connected`` says whether a session has a browser now; ``close`` shuts a session down; the
    clock is injectable so that tests need no sleeping. Thread-safe.
    """

    def __init__(
        self,
        connected: Callable[[str], bool],
        close: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        grace_s: float = GRACE_S,
    ) -> None:
        self.uploads: dict[str, Upload] = {}
        self.shown: dict[str, dict[str, str]] = {}  # session -> slot -> digest
        self._gone: dict[str, float] = {}  # session -> when first seen without a browser
        self._connected, self._close, self._clock, self._grace_s = connected, close, clock, grace_s
        self._lock = threading.Lock()

    def show(self, session: str, slot: str, digest: str, data: bytes | None = None) -> list[Upload]:
        """``slot`` of ``session`` shows the upload ``digest``, whose bytes are ``data`` if it is new;
        without them, an upload no longer held (its session ended) is not held again and the slot
        shows none. Returns the uploads no one shows now (dropped)."""
        with self._lock:
            if digest not in self.uploads and data is not None:
                self.uploads[digest] = Upload(data)
            if digest in self.uploads:
                self.shown.setdefault(session, {})[slot] = digest
            else:
                self._let_go(session, slot)
        return self._drop_unshown()

    def let_go(self, session: str, slot: str) -> list[Upload]:
        """``slot`` shows no upload any more; returns the uploads no one shows now (dropped)."""
        with self._lock:
            self._let_go(session, slot)
        return self._drop_unshown()

    def _let_go(self, session: str, slot: str) -> None:
        slots = self.shown.get(session, {})
        slots.pop(slot, None)
        if not slots:  # only sessions that show an upload are watched
            self.shown.pop(session, None)
            self._gone.pop(session, None)

    def upload(self, digest: str) -> Upload | None:
        with self._lock:
            return self.uploads.get(digest)

    def keep_trace(self, digest: str, key: tuple, trace: Trace) -> None:
        """Remember a parsed trace of a held upload (the newest ``PARSES_KEPT``)."""
        with self._lock:
            if (upload := self.uploads.get(digest)) is None:
                return
            upload.traces.pop(key, None)
            upload.traces[key] = trace
            for old in list(upload.traces)[:-PARSES_KEPT]:
                del upload.traces[old]

    def sweep(self) -> list[Upload]:
        """Shut down the sessions gone ``grace_s`` seconds (a session back in time keeps its uploads);
        returns the uploads dropped because no session shows them any more."""
        now, ended = self._clock(), []
        with self._lock:
            for session in list(self.shown):
                if self._connected(session):
                    self._gone.pop(session, None)
                elif now - self._gone.setdefault(session, now) >= self._grace_s:
                    del self.shown[session], self._gone[session]
                    ended.append(session)
        for session in ended:
            self._close(session)
        return self._drop_unshown()

    def _drop_unshown(self) -> list[Upload]:
        with self._lock:
            shown = {digest for slots in self.shown.values() for digest in slots.values()}
            return [self.uploads.pop(digest) for digest in list(self.uploads) if digest not in shown]


def grace_s() -> float:
    """How long a session's browser must be gone before the session ends: ``$KVVIZ_UPLOAD_GRACE_S``
    seconds (1 to 86,400), else ``GRACE_S``."""
    return _seconds(GRACE_ENV, GRACE_S, 1, 86_400, "closed tabs' uploads are kept")


def sweep_s() -> float:
    """How often the sweeper looks: ``$KVVIZ_UPLOAD_SWEEP_S`` seconds (0.5 to 3,600), else
    ``SWEEP_S``. Each look that finds uploads held also collects garbage, hence the floor."""
    return _seconds(SWEEP_ENV, SWEEP_S, 0.5, 3_600, "uploads are looked over every")


def _seconds(name: str, default: float, low: float, high: float, meaning: str) -> float:
    """A number of seconds from the environment variable ``name``. A value that is not valid is
    refused: the server log names it, and the default holds (a viewer's page has nothing to do about it)."""
    try:
        return setting(name, default, low, high, f"a number of seconds from {low:,g} to {high:,g}")
    except SettingError as exc:
        _LOG.error("%s; %s %s seconds", exc, meaning, default)
        return default


REGISTRY = Registry(streamlit_private.connected, streamlit_private.close, grace_s=grace_s())
_SWEEP_EVERY_S = sweep_s()
_RELEASED_WITH: dict[tuple[str, str], Callable] = {}


def released_with_upload(cached: Callable) -> Callable:
    """Decorate a module's ``st.cache_data`` / ``st.cache_resource`` function called as
    ``f(fingerprint, _trace)``: its entry for an upload's trace is cleared when the upload is dropped.
    Not for a function defined in a page: kept here, it would keep that page run's data alive."""
    if cached.__module__ == "__main__":
        raise ValueError(f"{cached.__qualname__} is defined in a page: move it into a module")
    _RELEASED_WITH[(cached.__module__, cached.__qualname__)] = cached
    return cached


def release(dropped: list[Upload]) -> None:
    """Clear the cache entries derived from dropped uploads' traces."""
    for key in {fingerprint(trace) for upload in dropped for trace in upload.traces.values()}:
        for cached in list(_RELEASED_WITH.values()):
            cached.clear(key, None)


_sweeper_started = threading.Event()
_sweeper_lock = threading.Lock()


def _sweep_forever() -> None:
    last = Sweeps()
    while True:
        time.sleep(_SWEEP_EVERY_S)
        try:
            sweep(last, time.monotonic())
        except Exception:  # one failed sweep must not end the sweeping
            _LOG.exception("sweeping uploads failed")


@dataclass
class Sweeps:
    """What the sweeper remembers between two looks."""

    held: bool = False  # whether uploads were held at the last look
    collected_at: float = -math.inf  # when it last collected garbage


def sweep(last: Sweeps, now: float) -> None:
    """End the sessions gone ``GRACE_S`` and drop what no one shows. Then collect garbage and hand
    freed memory back to the system: when this sweep dropped uploads or none is held any more, and
    every ``SWEEP_S`` seconds while uploads are held, however often the sweeper looks (a full
    collection costs the server a moment). ``runner.postScriptGC`` is off (.streamlit/config.toml),
    and a page run's namespace, a reference cycle of its functions and globals, keeps that run's
    arrays until Python's own full collection, which can be long in coming."""
    dropped = REGISTRY.sweep()
    release(dropped)
    held = bool(REGISTRY.uploads)
    if dropped or (last.held and not held) or (held and now - last.collected_at >= SWEEP_S):
        _collect()
        last.collected_at = now
    last.held = held


def _collect() -> None:
    gc.collect()
    # glibc keeps freed memory for reuse, in the heap of each thread that freed it, and a closed
    # session or the garbage of a class's page runs frees hundreds of MB.
    return_freed_memory()


def _start_sweeper() -> None:
    """One daemon thread per process, started by its first upload."""
    if _sweeper_started.is_set():
        return
    with _sweeper_lock:
        if not _sweeper_started.is_set():
            threading.Thread(target=_sweep_forever, name="kvviz-upload-sweeper", daemon=True).start()
            _sweeper_started.set()


def show(slot: str, spec: dict | None) -> dict | None:
    """This session's ``slot`` (a trace picker) now shows ``spec``. An upload is held for the
    session, and a spec fresh from the uploader gives its bytes to the registry: the spec returned
    keeps only their digest. Any other spec leaves the slot's upload held, for the viewer to come
    back to. An upload no longer held (its session ended) is not held again: ``trace`` then returns None."""
    session = streamlit_private.current() or ""
    if spec is None or spec["kind"] != "upload":
        return spec
    data = spec.get("data")
    spec = {key: value for key, value in spec.items() if key != "data"}
    if data is not None:
        spec["digest"] = hashlib.blake2b(data, digest_size=16).hexdigest()
    release(REGISTRY.show(session, slot, spec["digest"], data))
    _start_sweeper()
    return spec


def trace(spec: dict, parse: Callable[[bytes], Trace]) -> Trace | None:
    """The trace of an upload spec, parsed by ``parse`` once per name and reading options; None when
    its bytes are no longer held (the session that uploaded them ended). A spec that still carries
    its bytes (a session trace set into the session by other code than a trace picker) is held
    first."""
    if "data" in spec:
        spec = show(SESSION_SLOT, spec)
    digest, key = spec["digest"], (spec.get("name"), tuple(spec["options"]))
    if (upload := REGISTRY.upload(digest)) is None:
        return None
    if (parsed := upload.traces.get(key)) is not None:
        return parsed
    with _turn(upload.data):
        if (parsed := upload.traces.get(key)) is None:  # parsed while this one waited
            with st.spinner("Parsing the trace…"):
                parsed = parse(upload.data)
            REGISTRY.keep_trace(digest, key, parsed)
    return parsed


def unparsed(spec: dict) -> bytes | None:
    """The bytes of an upload spec that ``trace`` has not parsed yet with its name and reading
    options, for what must come before the parse; None when parsed already, or no longer held."""
    if "data" in spec:
        return spec["data"]
    upload = REGISTRY.upload(spec["digest"])
    if upload is None or (spec.get("name"), tuple(spec["options"])) in upload.traces:
        return None
    return upload.data


def runs_alone(data: bytes) -> bool:
    """Whether parsing ``data`` waits for the other large parses: big, or compressed."""
    return len(data) >= RUNS_ALONE_BYTES or data.startswith(COMPRESSED)


class ParseQueue:
    """Large parses one at a time, in arrival order. A waiter that leaves (its run stopped) gives
    its place up; ``waiting(n)`` is called each time the number of parses before it changes."""

    def __init__(self) -> None:
        self._line: list[object] = []  # the first parses; the rest wait in order
        self._moved = threading.Condition()

    @contextmanager
    def turn(self, waiting: Callable[[int], None]) -> Iterator[None]:
        me = object()
        with self._moved:
            self._line.append(me)
        try:
            told = 0
            while ahead := self._ahead(me, told):
                waiting(ahead)
                told = ahead
            yield
        finally:
            with self._moved:
                self._line.remove(me)
                self._moved.notify_all()

    def _ahead(self, me: object, told: int) -> int:
        """How many are before ``me``, once that differs from ``told`` (or is 0)."""
        with self._moved:
            while (ahead := self._line.index(me)) == told and ahead:
                self._moved.wait()
            return ahead


QUEUE = ParseQueue()


@contextmanager
def _turn(data: bytes) -> Iterator[None]:
    """Wait for this parse's turn if it runs alone, telling the viewer how many are before it."""
    if not runs_alone(data):
        yield
        return
    note = st.empty()
    with QUEUE.turn(lambda ahead: note.info(waiting_text(ahead), icon=":material/hourglass_top:")):
        note.empty()
        yield


def waiting_text(ahead: int) -> str:
    """What a viewer whose upload waits reads, with ``ahead`` parses before theirs."""
    if ahead == 1:
        return "Another upload is being parsed; yours is next. This page goes on by itself."
    return f"Another upload is being parsed and {ahead - 1} more are waiting before yours. This page goes on by itself."
