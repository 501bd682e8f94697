"""A progress line for long command-line work: what runs, done/total, elapsed and time left, on stderr.

The command-line counterpart of a page's progress bar. It draws only on a terminal (``isatty``), and
only for work estimated (``budget.Cost``) or seen to take more than ``THRESHOLD_S``, so a short
run, a pipe or a captured stderr get nothing. The line is rewritten in place (``\\r``) by the
calling thread at each finished unit of work (a run, a capacity, a point of a grid: numba kernels
have no callback) and, between units, by a ticker thread that keeps the elapsed time current; it
is erased when the work ends, however it ends, so a Ctrl-C leaves only the command's own one-line
message. While it is drawn on ``sys.stderr``, whatever else is printed there (a trace's warning)
erases it first and it is drawn again below, as ``tqdm.write`` does.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import TextIO

THRESHOLD_S = 2.0
"""Work estimated, or seen, to take longer than this draws a line; shorter work stays silent."""
TICK_S = 0.5
"""How often the line's elapsed time is redrawn while a unit of work runs."""


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """``with Progress("kvviz hitcurve: replaying", 160, "runs", estimate_s) as p: ... p(fraction)``.

    ``p(fraction_done)`` fits the ``progress`` callback the simulations already take; ``p.step(done)``
    counts units. ``total`` None means the work has no count (the line shows elapsed time only).
    Time left is the measured rate over the units done; before the first unit, the estimate.
    """

    def __init__(
        self,
        what: str,
        total: int | None,
        unit: str,
        estimate_s: float | None = None,
        *,
        stream: TextIO | None = None,
        threshold_s: float | None = None,
        tick_s: float | None = None,
    ) -> None:
        self.what, self.total, self.unit, self.estimate_s = what, total, unit, estimate_s
        self.stream = sys.stderr if stream is None else stream
        self.threshold_s = THRESHOLD_S if threshold_s is None else threshold_s
        self.tick_s = TICK_S if tick_s is None else tick_s
        self.done = 0
        self._shown = 0  # characters of the line on screen
        self._held = False  # a message is half written (no newline yet): no redraw over it
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._start = time.monotonic()
        self.active = _is_terminal(self.stream)

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if self.active:
            if self.stream is sys.stderr:
                sys.stderr = _Guard(self)  # type: ignore[assignment]
            self._draw()
            self._ticker = threading.Thread(target=self._tick, name="kvviz-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, fraction: float) -> None:
        self.step(round(fraction * self.total) if self.total else 0)

    def step(self, done: int) -> None:
        """``done`` units of ``total`` are finished."""
        self.done = done
        if self.active:
            self._draw()

    def count(self, done: int, total: int | None) -> None:
        """``done`` units finished of ``total`` (None: of a number not known): the callback of a search
        whose total falls as it learns (a router that meets its target runs no dearer deployment)."""
        self.total = total
        self.step(done)

    def close(self) -> None:
        """Stop the ticker and erase the line (nothing is left on the terminal)."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()
        with self._lock:
            self._erase()
        if isinstance(sys.stderr, _Guard) and sys.stderr.progress is self:
            sys.stderr = self.stream
        self.active = False

    def _erase(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def line(self) -> str:
        """The line as drawn now."""
        elapsed = time.monotonic() - self._start
        count = f"{self.done:,}/{self.total:,} {self.unit}, " if self.total else ""
        if not self.total and self.done:
            count = f"{self.done:,} {self.unit}, "
        left = self._left(elapsed)
        rest = "" if left is None else f", ~{_duration(left)} left"
        return f"{self.what}: {count}{_duration(elapsed)} elapsed{rest}"

    def _left(self, elapsed: float) -> float | None:
        if self.total and self.done:
            return elapsed / self.done * (self.total - self.done)
        if self.estimate_s is not None and self.estimate_s > elapsed:
            return self.estimate_s - elapsed
        return None

    def _due(self) -> bool:
        long = self.estimate_s is not None and self.estimate_s > self.threshold_s
        return long or time.monotonic() - self._start > self.threshold_s

    def _draw(self) -> None:
        with self._lock:
            if not self.active or self._held or not (self._shown or self._due()):
                return
            width = _columns(self.stream) - 1  # never wrap: "\r" returns to the last row only
            text = self.line()[:width]
            self.stream.write("\r" + text + " " * max(0, self._shown - len(text)))
            self.stream.flush()
            self._shown = max(len(text), self._shown)

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            self._draw()


def reading(command: str) -> Progress:
    """The line while ``kvviz command`` reads its trace (a 10M-request file takes tens of seconds)."""
    return Progress(f"kvviz {command}: reading the trace", None, "")


class _Guard:
    """``sys.stderr`` while a line is drawn: a message erases the line first (it is drawn again below)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def write(self, text: str) -> int:
        with self.progress._lock:
            self.progress._erase()
            self.progress._held = not text.endswith("\n")
            return self.progress.stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.progress.stream, name)


def _columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` draws on (standard output may be a file meanwhile)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
