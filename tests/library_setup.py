"""Shared setup for the trace-library tests: a fresh library per test, and a library that refuses writes."""

from __future__ import annotations

import errno
import os
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
