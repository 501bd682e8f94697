"""The bandwidth a context's chunks see: K traces per chunk (i.i.d. like the artifact's generator,
or persistent with the same marginal), the lecture notes' timed step, or an uploaded ``time_s, gbps``
CSV, each number of which is read by :mod:`kvviz.common.args`' ranged parser."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import ndtr

from kvviz.common import args
from kvviz.common.errors import InputError, quote, require

MAX_TRACES = 20_000


@dataclass(frozen=True)
class Bandwidth:
    """K bandwidth traces. ``kind="chunk"``: ``gbps[k, i]`` is what chunk i sees, whenever it is
    sent (the artifact's model). ``kind="timed"``: piecewise constant in time, ``gbps[k, j]`` from
    ``times[k, j]`` on (the first time is 0, the last value lasts forever)."""

    kind: str
    gbps: np.ndarray
    times: np.ndarray | None = None
    name: str = ""

    @property
    def traces(self) -> int:
        return self.gbps.shape[0]

    def first(self) -> Bandwidth:
        """Just trace 0."""
        return Bandwidth(self.kind, self.gbps[:1], None if self.times is None else self.times[:1], self.name)

    def mean_gbps(self) -> np.ndarray:
        return self.gbps.mean(axis=1)

    def at(self, chunk: int, t: np.ndarray) -> np.ndarray:
        """The bandwidth (Gb/s) at time ``t [K]`` for chunk ``chunk``."""
        if self.kind == "chunk":
            return self.gbps[:, chunk]
        j = np.array([np.searchsorted(self.times[k], t[k], side="right") - 1 for k in range(self.traces)])
        return self.gbps[np.arange(self.traces), j]

    def finish(self, chunk: int, start: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """When a transfer of ``bits`` begun at ``start`` ends; arrays ``[K, ...]`` broadcast."""
        start, bits = np.broadcast_arrays(np.asarray(start, np.float64), np.asarray(bits, np.float64))
        if self.kind == "chunk":
            shape = (self.traces,) + (1,) * (start.ndim - 1)
            return start + bits / (self.gbps[:, chunk].reshape(shape) * 1e9)
        out = np.empty(start.shape)
        for k in range(self.traces):
            out[k] = _timed_finish(self.times[k], self.gbps[k] * 1e9, start[k], bits[k])
        return out


def _timed_finish(times: np.ndarray, rate: np.ndarray, start: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Invert the cumulative capacity of one piecewise-constant trace."""
    capacity = np.concatenate([[0.0], np.cumsum(rate[:-1] * np.diff(times))])
    j = np.searchsorted(times, start, side="right") - 1
    target = capacity[j] + rate[j] * (start - times[j]) + bits
    m = np.searchsorted(capacity, target, side="right") - 1
    return times[m] + (target - capacity[m]) / rate[m]


UNIFORM_LOW, UNIFORM_HIGH = 0.1, 10.0


def iid_traces(traces: int, chunks: int, seed: int = 0) -> Bandwidth:
    """The artifact's ``bw_generator``: i.i.d. Uniform(0.1, 10) Gb/s per chunk."""
    return persistent_traces(traces, chunks, 0.0, seed, name="i.i.d. Uniform(0.1, 10) per chunk")


def persistent_traces(
    traces: int, chunks: int, persistence: float = 0.9, seed: int = 0, name: str | None = None
) -> Bandwidth:
    """An AR(1) chain across chunks with lag-1 correlation ``persistence`` (Gaussian copula), with
    the same Uniform(0.1, 10) Gb/s marginal as the artifact's generator: only the persistence
    differs, and ``persistence = 0`` is exactly i.i.d."""
    require(1 <= traces <= MAX_TRACES, f"traces must be 1..{MAX_TRACES:,}, got {traces}", field="traces")
    require(0.0 <= persistence < 1.0, f"persistence must be in [0, 1), got {persistence}", field="persistence")
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((traces, chunks))
    z = np.empty_like(e)
    z[:, 0] = e[:, 0]
    for i in range(1, chunks):
        z[:, i] = persistence * z[:, i - 1] + math.sqrt(1 - persistence**2) * e[:, i]
    gbps = UNIFORM_LOW + (UNIFORM_HIGH - UNIFORM_LOW) * ndtr(z)
    label = name or f"persistent (AR(1), persistence {persistence:g}) per chunk"
    return Bandwidth("chunk", gbps, name=label)


STEP_TRACE = ((0.0, 10.0), (0.3, 1.0), (3.0, 5.0))  # lecture 27 §4.2: 10 -> 1 -> 5 Gb/s


def step_trace() -> Bandwidth:
    """The lecture notes' step: 10 Gb/s for 0.3 s, 1 Gb/s until 3 s, then 5 Gb/s."""
    times, gbps = zip(*STEP_TRACE)
    return Bandwidth("timed", np.array([gbps], float), np.array([times], float), "step 10 → 1 → 5 Gb/s")


MAX_CSV_BYTES, MAX_CSV_ROWS, MAX_LINE_CHARS = 1 << 20, 100_000, 200
MIN_GBPS, MAX_GBPS = 1e-3, 1e4  # 1 Mb/s to 10 Tb/s: beyond either end a "link" is a typo
MAX_TIME_S = 86_400.0  # a trace longer than a day cannot describe one request
_TIME_S = args.bounded_float(0.0, MAX_TIME_S)
_GBPS = args.bounded_float(MIN_GBPS, MAX_GBPS)
_ANY_NUMBER = args.bounded_float(-math.inf, math.inf)


def load_bandwidth_csv(source: str | Path | bytes, name: str = "uploaded trace") -> Bandwidth:
    """A ``time_s, gbps`` CSV (header optional, ``#`` comments): times strictly increasing in
    [0, 1 day], bandwidth in [1 Mb/s, 10 Tb/s]. Every problem is one ``InputError`` naming its line
    and field.

    Before the first time the first value holds; after the last, the last value holds.
    """
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        path = Path(source)
        require(path.is_file(), f"no such bandwidth file: {path.name}", field="bandwidth")
        require(
            path.stat().st_size <= MAX_CSV_BYTES,
            f"{path.name} is larger than {MAX_CSV_BYTES >> 20} MiB",
            field="bandwidth",
        )
        data, name = path.read_bytes(), path.name
    require(
        len(data) <= MAX_CSV_BYTES, f"the bandwidth file is larger than {MAX_CSV_BYTES >> 20} MiB", field="bandwidth"
    )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError("the bandwidth file is not UTF-8 text", field="bandwidth") from exc
    times, gbps = _parse_rows(text.splitlines())
    require(len(times) > 0, "the bandwidth file has no data rows (expected 'time_s, gbps' lines)", field="bandwidth")
    times = np.array(times) - times[0]
    return Bandwidth("timed", np.array([gbps]), times[None, :], name)


BANDWIDTH_KINDS = ("persistent", "iid", "step", "upload")


def make_bandwidth(
    kind: str,
    traces: int,
    chunks: int,
    persistence: float = 0.9,
    seed: int = 0,
    csv: str | Path | bytes | None = None,
    name: str = "uploaded trace",
) -> Bandwidth:
    """The bandwidth source by name: ``persistent``, ``iid``, ``step``, or ``upload`` (``csv``)."""
    if kind == "persistent":
        return persistent_traces(traces, chunks, persistence, seed)
    if kind == "iid":
        return iid_traces(traces, chunks, seed)
    if kind == "step":
        return step_trace()
    require(
        kind == "upload" and csv is not None,
        f"unknown bandwidth source '{quote(kind)}' (one of {', '.join(BANDWIDTH_KINDS)} or a CSV)",
        field="bandwidth",
    )
    return load_bandwidth_csv(csv, name)


def _parse_rows(lines: list[str]) -> tuple[list[float], list[float]]:
    times: list[float] = []
    gbps: list[float] = []
    for line, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_CHARS:
            raise InputError(f"the line is {len(raw):,} characters long; expected 'time_s, gbps'", line=line)
        cells = [c.strip().strip('"').strip() for c in raw.split(",")]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if len(cells) != 2:
            raise InputError(f"expected two columns, time_s and gbps; got {len(cells)}", line=line)
        if not times and line == 1 and not _is_number(cells[0]) and not _is_number(cells[1]):
            continue  # a header line
        t = _number(_TIME_S, cells[0], line, "time_s")
        b = _number(_GBPS, cells[1], line, "gbps")
        if times and t <= times[-1]:
            raise InputError(f"times must increase: {t:g} s comes after {times[-1]:g} s", line=line, field="time_s")
        if len(times) == MAX_CSV_ROWS:
            raise InputError(f"more than {MAX_CSV_ROWS:,} rows", line=line)
        times.append(t)
        gbps.append(b)
    return times, gbps


def _is_number(cell: str) -> bool:
    try:
        _ANY_NUMBER(cell)
    except argparse.ArgumentTypeError:
        return False
    return True


def _number(parse: Callable[[str], float], cell: str, line: int, field: str) -> float:
    """One cell read by ``parse`` (a ranged number of :mod:`kvviz.common.args`), or an InputError
    with its complaint, naming the line and field."""
    try:
        return parse(cell)
    except argparse.ArgumentTypeError as exc:
        raise InputError(str(exc), line=line, field=field) from None
