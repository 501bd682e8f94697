"""Shared setup for the trace-library tests: a fresh library per test, a library that refuses
writes, and damage "sealed" under a matching checksum."""

from __future__ import annotations

import errno
import json
import os
from contextlib import ExitStack
from pathlib import Path

import pytest

from kvviz.traces import library


def fresh_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty library in the test's folder, with every size setting at its default."""
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "lib"))
    for name in (library.CAP_ENV, library.WEB_MAX_ENV, library.WEB_SHARE_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "lib"


def refuse_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file opened for writing fails with "permission denied", as in a read-only library
    (the tests run as root, for whom a folder's mode refuses nothing)."""
    real_open = os.open

    def open_read_only(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_read_only)


def seal(folder: Path) -> None:
    """Record an entry's current checksum in its meta.json, as if its damage had come before the
    import: what is left to find it are the checks behind the checksum."""
    meta = json.loads((folder / library.META).read_text())
    entry = library._entry_from_meta(folder.name, meta)
    meta["checksum"] = checksum_of_files(folder, entry)
    (folder / library.META).write_text(json.dumps(meta))


def checksum_of_files(folder: Path, entry: library.Entry) -> str:
    """``entry``'s checksum over its data files as they are in ``folder`` now, read back."""
    with ExitStack() as stack:
        files = {n: stack.enter_context(open(folder / n, "rb")) for n in library.DATA_FILES}
        return library._digest(entry, {n: library._read(files[n], n) for n in library.DATA_FILES})
