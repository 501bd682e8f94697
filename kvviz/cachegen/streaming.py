"""CacheGen's bandwidth-adaptive streaming of a context's KV, chunk by chunk (SIGCOMM'24 §5.3).

The context is cut into chunks (default 1,500 tokens); each chunk is pre-encoded at several
levels and can also be sent as text, which the GPU recomputes over the earlier chunks' KV. A
policy picks one configuration per chunk while the bandwidth changes; TTFT is the time the last
chunk is ready, and the SLO is met when TTFT <= SLO. Policies (CLI names):

- ``paper``: estimate the bandwidth from the previous chunk's measured throughput, and pick the
  least-loss configuration whose expected delay fits this chunk's share of the remaining SLO
  (its share of the remaining tokens); when nothing fits, the fastest one.
- ``artifact``: the released code (``run_adaptation.py``): a fixed budget SLO/n per chunk, the
  *current* chunk's bandwidth, levels tried best first, else text at the recompute cost.
- ``level1``..: one level throughout; ``quant8``: 8-bit quantisation; ``text``: text only.
- ``oracle``: knows the whole bandwidth trace; the best quality that meets the SLO (dynamic
  programming on a time grid), else the earliest finish. It is the bound.

Everything is vectorised across K bandwidth traces at once, so 1,000 random traces take a
fraction of a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr

from kvviz.common import budget, hardware
from kvviz.common.errors import InputError, quote, require

# The paper's setting: Mistral-7B (Table 1) recomputed on an A40 (§7.1). Both come from kvviz.common.hardware,
# the one home of KV bytes per token and prefill FLOPs.
MODEL_NAME, GPU_NAME = "mistral-7b", "a40"
ARTIFACT_TEXT_S = 0.2                 # run_adaptation.py's fixed per-chunk text cost
TEXT_BYTES_PER_TOKEN = 4              # token ids
ORACLE_GRID = 400
MAX_TRACES = 20_000
MAX_CHUNKS = 1_000
KL_TIE = 1e-3
"""Weight of the KL divergence (nats) against the quality share when a rule ranks configurations: the
quality decides, and between equal qualities the smaller KL (the finer level) wins."""
# Measured on this 2-core machine (bench/bench_cachegen.py): the oracle's programme dominates.
ORACLE_CELLS_PER_S = 4.0e7            # (trace x chunk x grid point x option) cells per CPU second (1,000 x 7 x 401 x 4 in 0.22 s)
CHUNK_STEPS_PER_S = 2.0e6             # (trace x chunk x policy) steps of the other rules per CPU second


@dataclass(frozen=True)
class Level:
    """One pre-encoded configuration, as measured: its size and what it does to the answers.

    ``quality`` is the share of questions the record-world model answers as it does at full precision
    over this configuration's decoded KV; ``kl`` the mean KL divergence (nats) of its answer
    distribution from full precision's, which moves before any answer flips."""

    name: str
    bits_per_value: float
    quality: float
    kl: float = 0.0


@dataclass(frozen=True, eq=False)
class ChunkMeasures:
    """Each chunk's own encoded bitstream, decoded on arrival: ``[n_chunks, levels + quant8]`` arrays of
    bits per value, quality and KL (``kvviz.cachegen.levels`` with the record-world KV as the source)."""

    bits_per_value: np.ndarray
    quality: np.ndarray
    kl: np.ndarray


def kv_values_per_token(model: hardware.ModelSpec) -> int:
    """K and V values one token adds to the cache (65,536 for Mistral-7B)."""
    return int(round(model.kv_bytes_per_token / model.bytes_per_value))


@dataclass(frozen=True)
class StreamSetup:
    """The context, its chunks, the measured configurations and the SLO."""

    levels: tuple[Level, ...]
    quant8: Level
    context_tokens: int = 9_500
    chunk_tokens: int = 1_500
    slo_s: float = 1.0
    model: str = MODEL_NAME            # kvviz.common.hardware model: KV values per token, prefill FLOPs
    gpu: str = GPU_NAME                # kvviz.common.hardware GPU that recomputes text
    values_per_token: int | None = None  # None: the model's (kvviz.common.hardware); set only by unit tests
    recompute: str = "prefill"         # "prefill" (kvviz.common.hardware's FLOPs model) or "fixed" (the artifact's 0.2 s)
    fixed_recompute_s: float = ARTIFACT_TEXT_S
    initial_gbps: float | None = None  # the paper rule's first estimate; None = the trace's mean
    per_chunk: ChunkMeasures | None = None  # each chunk's own sizes and qualities; None: the levels' for all

    def validate(self) -> None:
        require(self.slo_s > 0 and math.isfinite(self.slo_s), f"the SLO must be > 0 s, got {self.slo_s}",
                field="slo")
        require(self.context_tokens >= 1, f"the context must have at least 1 token, got {self.context_tokens}",
                field="context")
        require(self.chunk_tokens >= 1, f"the chunk size must be at least 1 token, got {self.chunk_tokens}",
                field="chunk")
        require(self.chunk_tokens <= self.context_tokens,
                f"the chunk size ({self.chunk_tokens:,} tokens) is larger than the context "
                f"({self.context_tokens:,} tokens)", field="chunk")
        require(self.n_chunks <= MAX_CHUNKS, f"{self.n_chunks:,} chunks is too many (at most {MAX_CHUNKS:,})",
                field="chunk")
        require(len(self.levels) >= 1, "at least one encoding level is needed", field="levels")
        require(self.recompute in ("prefill", "fixed"),
                f"recompute must be 'prefill' or 'fixed', got {self.recompute!r}", field="recompute")
        require(self.fixed_recompute_s > 0, "the fixed recompute time must be > 0 s", field="recompute")
        require(self.initial_gbps is None or (self.initial_gbps > 0 and math.isfinite(self.initial_gbps)),
                f"the initial bandwidth estimate must be > 0 Gb/s, got {self.initial_gbps}", field="initial_gbps")
        hardware.model(self.model), hardware.gpu(self.gpu)
        for lv in (*self.levels, self.quant8):
            require(lv.bits_per_value > 0, f"level {lv.name} must have > 0 bits per value", field="levels")
        if self.per_chunk is not None:
            require(self.per_chunk.bits_per_value.shape == (self.n_chunks, len(self.levels) + 1),
                    f"per-chunk measures for {self.per_chunk.bits_per_value.shape[0]} chunks, the context has "
                    f"{self.n_chunks}", field="chunk")

    @property
    def n_chunks(self) -> int:
        return -(-self.context_tokens // self.chunk_tokens)

    @property
    def tokens(self) -> np.ndarray:
        """Tokens per chunk; the last chunk holds the remainder."""
        t = np.full(self.n_chunks, self.chunk_tokens, dtype=np.int64)
        t[-1] = self.context_tokens - self.chunk_tokens * (self.n_chunks - 1)
        return t

    @property
    def kv_values(self) -> int:
        return self.values_per_token or kv_values_per_token(hardware.model(self.model))

    @property
    def config_names(self) -> tuple[str, ...]:
        return (*(lv.name for lv in self.levels), "quant8", "text")

    def _per_chunk(self, field: str, text: float) -> np.ndarray:
        """``[n_chunks, n_configs]``: the chunk's own measure, or the level's for every chunk; text last."""
        if self.per_chunk is not None:
            kv = getattr(self.per_chunk, field)
        else:
            kv = np.broadcast_to([getattr(lv, field) for lv in (*self.levels, self.quant8)],
                                 (self.n_chunks, len(self.levels) + 1))
        return np.concatenate([kv, np.full((self.n_chunks, 1), text)], axis=1)

    @property
    def quality(self) -> np.ndarray:
        """Share of answers kept, per (chunk, configuration)."""
        return self._per_chunk("quality", 1.0)

    @property
    def kl(self) -> np.ndarray:
        return self._per_chunk("kl", 0.0)

    @property
    def utility(self) -> np.ndarray:
        """What the rules and the oracle maximise, per (chunk, configuration): quality first, then
        least KL (``KL_TIE``)."""
        return self.quality - KL_TIE * self.kl

    @property
    def text_index(self) -> int:
        return len(self.levels) + 1

    def bits(self) -> np.ndarray:
        """Bits sent per (chunk, configuration), ``[n_chunks, n_configs]``."""
        per_value = self._per_chunk("bits_per_value", 0.0)[:, :-1]
        kv = self.tokens[:, None] * self.kv_values * per_value
        text = self.tokens[:, None] * TEXT_BYTES_PER_TOKEN * 8.0
        return np.concatenate([kv, text], axis=1)

    def recompute_s(self) -> np.ndarray:
        """GPU time to recompute each chunk from text over the earlier chunks' KV."""
        if self.recompute == "fixed":
            return np.full(self.n_chunks, self.fixed_recompute_s)
        prefix = np.concatenate([[0], np.cumsum(self.tokens)[:-1]])
        return np.array([prefill_seconds(int(n), int(c), self.model, self.gpu) for n, c in zip(self.tokens, prefix)])


def prefill_seconds(new_tokens: int, cached_tokens: int = 0, model: str = MODEL_NAME, gpu: str = GPU_NAME) -> float:
    """Prefill time of ``new_tokens`` after ``cached_tokens`` cached ones: kvviz.common.hardware's paper-GPU
    model (FLOPs of the model at the GPU's peak x the default MFU)."""
    return hardware.prefill_seconds(hardware.model(model), hardware.Compute(hardware.gpu(gpu)), new_tokens,
                                    cached_tokens)


def stream_cost(setup: StreamSetup, traces: int, policies: int, repeats: int = 1) -> budget.Cost:
    """The work of streaming ``traces`` traces under ``policies`` policies (one of them the oracle),
    ``repeats`` times (points of a sweep), estimated from the inputs before anything runs."""
    cells = traces * setup.n_chunks * (ORACLE_GRID + 1) * (len(setup.levels) + 1)
    seconds = repeats * (cells / ORACLE_CELLS_PER_S + traces * setup.n_chunks * policies / CHUNK_STEPS_PER_S)
    return budget.Cost("streaming every policy", repeats * traces * setup.n_chunks * policies,
                       "trace-chunk-policy steps", seconds, "the random traces (K) or the chunk count")


# ----------------------------------------------------------------------------- bandwidth traces

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


def persistent_traces(traces: int, chunks: int, persistence: float = 0.9, seed: int = 0,
                      name: str | None = None) -> Bandwidth:
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


STEP_TRACE = ((0.0, 10.0), (0.3, 1.0), (3.0, 5.0))     # lecture 27 §4.2: 10 -> 1 -> 5 Gb/s


def step_trace() -> Bandwidth:
    """The lecture notes' step: 10 Gb/s for 0.3 s, 1 Gb/s until 3 s, then 5 Gb/s."""
    times, gbps = zip(*STEP_TRACE)
    return Bandwidth("timed", np.array([gbps], float), np.array([times], float), "step 10 → 1 → 5 Gb/s")


MAX_CSV_BYTES, MAX_CSV_ROWS, MAX_LINE_CHARS = 1 << 20, 100_000, 200
MIN_GBPS, MAX_GBPS = 1e-3, 1e4         # 1 Mb/s to 10 Tb/s: beyond either end a "link" is a typo
MAX_TIME_S = 86_400.0                  # a trace longer than a day cannot describe one request


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
        require(path.stat().st_size <= MAX_CSV_BYTES, f"{path.name} is larger than {MAX_CSV_BYTES >> 20} MiB",
                field="bandwidth")
        data, name = path.read_bytes(), path.name
    require(len(data) <= MAX_CSV_BYTES, f"the bandwidth file is larger than {MAX_CSV_BYTES >> 20} MiB",
            field="bandwidth")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError("the bandwidth file is not UTF-8 text", field="bandwidth") from exc
    times, gbps = _parse_rows(text.splitlines())
    require(len(times) > 0, "the bandwidth file has no data rows (expected 'time_s, gbps' lines)", field="bandwidth")
    times = np.array(times) - times[0]
    return Bandwidth("timed", np.array([gbps]), times[None, :], name)


BANDWIDTH_KINDS = ("persistent", "iid", "step", "upload")


def make_bandwidth(kind: str, traces: int, chunks: int, persistence: float = 0.9, seed: int = 0,
                   csv: str | Path | bytes | None = None, name: str = "uploaded trace") -> Bandwidth:
    """The bandwidth source by name: ``persistent``, ``iid``, ``step``, or ``upload`` (``csv``)."""
    if kind == "persistent":
        return persistent_traces(traces, chunks, persistence, seed)
    if kind == "iid":
        return iid_traces(traces, chunks, seed)
    if kind == "step":
        return step_trace()
    require(kind == "upload" and csv is not None,
            f"unknown bandwidth source '{kind}' (one of {', '.join(BANDWIDTH_KINDS)} or a CSV)", field="bandwidth")
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
            continue                                  # a header line
        t = _number(cells[0], line, "time_s", 0.0, MAX_TIME_S, "s")
        b = _number(cells[1], line, "gbps", MIN_GBPS, MAX_GBPS, "Gb/s")
        if times and t <= times[-1]:
            raise InputError(f"times must increase: {t:g} s comes after {times[-1]:g} s", line=line,
                             field="time_s")
        if len(times) == MAX_CSV_ROWS:
            raise InputError(f"more than {MAX_CSV_ROWS:,} rows", line=line)
        times.append(t)
        gbps.append(b)
    return times, gbps


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _number(cell: str, line: int, field: str, low: float, high: float, unit: str) -> float:
    """One cell as a finite number in ``[low, high]``, or an InputError naming the line and field."""
    shown = cell if len(cell) <= 20 else cell[:20] + "…"
    try:
        value = float(cell)
    except ValueError:
        raise InputError(f"not a number: {shown!r}", line=line, field=field) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(f"must be between {low:g} and {high:g} {unit}, got {shown}", line=line, field=field)
    return value


# ----------------------------------------------------------------------------- policies

@dataclass(frozen=True)
class Run:
    """One policy over K traces: per (trace, chunk) arrays, and per-trace outcomes."""

    policy: str
    config: np.ndarray          # [K, n] index into setup.config_names
    start: np.ndarray           # [K, n] seconds
    end: np.ndarray             # [K, n]
    bits: np.ndarray            # [K, n]
    seen_gbps: np.ndarray       # [K, n] throughput the chunk's transfer saw
    estimate_gbps: np.ndarray   # [K, n] the rule's bandwidth estimate (NaN when it uses none)
    quality: np.ndarray         # [K] token-weighted quality proxy
    slo_s: float

    @property
    def ttft(self) -> np.ndarray:
        return self.end[:, -1]

    @property
    def met(self) -> np.ndarray:
        return self.ttft <= self.slo_s * (1 + 1e-9)


def policy_names(setup: StreamSetup) -> tuple[str, ...]:
    return ("paper", "artifact", *(lv.name for lv in setup.levels), "quant8", "text", "oracle")


def _check_bandwidth(setup: StreamSetup, bw: Bandwidth) -> None:
    if bw.kind == "chunk":
        require(bw.gbps.shape[1] >= setup.n_chunks,
                f"the bandwidth trace has {bw.gbps.shape[1]} chunk values but the context has "
                f"{setup.n_chunks} chunks", field="bandwidth")


def simulate(setup: StreamSetup, bw: Bandwidth, policy: str) -> Run:
    """Stream the context under one policy over every trace in ``bw``."""
    setup.validate()
    _check_bandwidth(setup, bw)
    names = policy_names(setup)
    require(policy in names, f"unknown policy '{quote(policy)}'; choose one of {', '.join(names)}", field="policy")
    if policy == "oracle":
        return _oracle(setup, bw)
    bits, recompute = setup.bits(), setup.recompute_s()
    fixed = {name: i for i, name in enumerate(setup.config_names)}
    prior = bw.mean_gbps() if setup.initial_gbps is None else np.full(bw.traces, setup.initial_gbps)

    def choose(i: int, t: np.ndarray, seen: np.ndarray):
        if policy == "paper":
            estimate = prior if i == 0 else seen[:, i - 1]
            return _paper_choice(setup, i, t, estimate, bits[i], recompute[i]), estimate
        if policy == "artifact":
            now = bw.at(i, t)
            return _artifact_choice(setup, now, bits[i]), now
        return np.full(bw.traces, fixed[policy]), None

    return _stream(setup, bw, policy, choose)


def _stream(setup: StreamSetup, bw: Bandwidth, policy: str, choose) -> Run:
    """Send the chunks one after another; ``choose(i, t, seen) -> (configs [K], estimate or None)``."""
    k, n = bw.traces, setup.n_chunks
    bits, recompute, text = setup.bits(), setup.recompute_s(), setup.text_index
    config = np.zeros((k, n), np.int64)
    start, end, seen = (np.zeros((k, n)) for _ in range(3))
    estimate = np.full((k, n), np.nan)
    t = np.zeros(k)
    for i in range(n):
        c, est = choose(i, t, seen)
        if est is not None:
            estimate[:, i] = est
        b = bits[i, c]
        arrived = bw.finish(i, t, b)
        seen[:, i] = b / np.maximum(arrived - t, 1e-15) / 1e9
        config[:, i], start[:, i] = c, t
        t = arrived + np.where(c == text, recompute[i], 0.0)
        end[:, i] = t
    return Run(policy, config, start, end, bits[np.arange(n)[None, :], config], seen, estimate,
               _quality(setup, config), setup.slo_s)


def _adaptive_configs(setup: StreamSetup) -> np.ndarray:
    """What the adaptive rules and the oracle choose from: the CacheGen levels and text."""
    return np.array([*range(len(setup.levels)), setup.text_index])


def _paper_choice(setup: StreamSetup, i: int, t: np.ndarray, est: np.ndarray, bits: np.ndarray,
                  recompute: float) -> np.ndarray:
    """Least loss whose expected delay fits this chunk's share of the remaining SLO."""
    tokens = setup.tokens
    share = tokens[i] / tokens[i:].sum()
    allowed_s = (setup.slo_s - t) * share                                        # [K]
    options = _adaptive_configs(setup)
    delay = bits[options][None, :] / (np.maximum(est, 1e-9)[:, None] * 1e9)  # [K, C]
    delay[:, options == setup.text_index] += recompute
    fits = delay <= allowed_s[:, None]
    q = setup.utility[i, options]
    score = np.where(fits, q[None, :], -np.inf)
    best = np.argmax(score - 1e-12 * delay, axis=1)                          # ties: the faster one
    fastest = np.argmin(delay, axis=1)
    return options[np.where(fits.any(axis=1), best, fastest)]


def _artifact_choice(setup: StreamSetup, now_gbps: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """run_adaptation.py: the first level (best first) whose transfer fits SLO / n, else text."""
    allowed_s = setup.slo_s / setup.n_chunks
    choice = np.full(now_gbps.shape, setup.text_index)
    for level in range(len(setup.levels)):                  # worst first, so the best fit wins
        fits = bits[level] / (now_gbps * 1e9) < allowed_s
        choice = np.where(fits, level, choice)
    return choice


def _quality(setup: StreamSetup, config: np.ndarray) -> np.ndarray:
    w = setup.tokens / setup.context_tokens
    return (setup.quality[np.arange(setup.n_chunks)[None, :], config] * w[None, :]).sum(axis=1)


@dataclass(frozen=True)
class OraclePlan:
    """The oracle's dynamic programme: ``plan[i, k, g]`` is the option to send chunk i in at grid
    point g; ``value[k, g]`` the best total quality from the start. For per-chunk traces the grid
    is *remaining* time (so one programme serves every SLO up to ``horizon``); for timed traces
    it is elapsed time on [0, SLO]."""

    plan: np.ndarray
    value: np.ndarray
    dt: float
    remaining: bool

    def index(self, t: np.ndarray, slo: float) -> np.ndarray:
        g = (slo - t) / self.dt if self.remaining else t / self.dt
        g = np.floor(g + 1e-9) if self.remaining else np.ceil(g - 1e-9)
        return np.clip(g, 0, self.plan.shape[2] - 1).astype(np.int64)


def _durations(setup: StreamSetup, bw: Bandwidth, i: int, start: np.ndarray, options: np.ndarray,
               bits: np.ndarray, recompute: np.ndarray) -> list:
    """How long each option takes for chunk ``i`` begun at ``start`` (``bits``, ``recompute``: the setup's)."""
    return [bw.finish(i, start, bits[i, c]) - start + (recompute[i] if c == setup.text_index else 0.0)
            for c in options]


def oracle_plan(setup: StreamSetup, bw: Bandwidth, horizon: float | None = None) -> OraclePlan:
    """Solve the oracle's programme. Durations are rounded *up* to the grid and start times
    conservatively, so every plan it returns is truly feasible; it is optimal to within the grid."""
    k, n, options = bw.traces, setup.n_chunks, _adaptive_configs(setup)
    costs = setup.bits(), setup.recompute_s()
    remaining = bw.kind == "chunk"
    dt = (horizon or setup.slo_s) / ORACLE_GRID
    grid = np.arange(ORACLE_GRID + 1) * dt
    weight = setup.tokens / setup.context_tokens
    value = np.zeros((k, ORACLE_GRID + 2))           # column 0 = "out of time" (-inf), then the grid
    value[:, 0] = -np.inf
    plan = np.zeros((n, k, ORACLE_GRID + 1), np.int8)
    g = np.arange(ORACLE_GRID + 1)
    for i in range(n - 1, -1, -1):
        cands = np.empty((len(options), k, ORACLE_GRID + 1))
        if remaining:
            for j, d in enumerate(_durations(setup, bw, i, np.zeros(k), options, *costs)):
                steps = np.ceil(d / dt - 1e-9).astype(np.int64)
                idx = np.maximum(g[None, :] - steps[:, None] + 1, 0)
                cands[j] = setup.utility[i, options[j]] * weight[i] + np.take_along_axis(value, idx, axis=1)
        else:
            start = np.broadcast_to(grid, (k, grid.size))
            for j, d in enumerate(_durations(setup, bw, i, start, options, *costs)):
                idx = np.ceil((start + d) / dt - 1e-9).astype(np.int64) + 1
                idx = np.where(idx > ORACLE_GRID + 1, 0, idx)
                cands[j] = setup.utility[i, options[j]] * weight[i] + np.take_along_axis(value, idx, axis=1)
        plan[i] = cands.argmax(axis=0)
        value = np.concatenate([np.full((k, 1), -np.inf), cands.max(axis=0)], axis=1)
    return OraclePlan(plan, value[:, 1:], dt, remaining)


def _oracle(setup: StreamSetup, bw: Bandwidth, solved: OraclePlan | None = None) -> Run:
    """Follow the plan; where no plan meets the SLO, send each chunk the fastest way (earliest
    finish is optimal then, since a later start never finishes earlier)."""
    solved = solved or oracle_plan(setup, bw)
    k, options = bw.traces, _adaptive_configs(setup)
    costs = setup.bits(), setup.recompute_s()
    rows = np.arange(k)
    feasible = np.isfinite(solved.value[rows, solved.index(np.zeros(k), setup.slo_s)])

    def choose(i: int, t: np.ndarray, seen: np.ndarray):
        planned = options[solved.plan[i, rows, solved.index(t, setup.slo_s)]]
        fastest = options[np.argmin(np.stack(_durations(setup, bw, i, t, options, *costs), axis=1), axis=1)]
        return np.where(feasible, planned, fastest), None

    return _stream(setup, bw, "oracle", choose)


# ----------------------------------------------------------------------------- outputs

def timeline(setup: StreamSetup, run: Run, trace: int = 0) -> pd.DataFrame:
    """The per-chunk table of one trace: start, end, configuration, size, bandwidth seen."""
    names = np.array(setup.config_names)
    return pd.DataFrame({
        "policy": run.policy,
        "chunk": np.arange(setup.n_chunks),
        "tokens": setup.tokens,
        "start_s": run.start[trace],
        "end_s": run.end[trace],
        "config": names[run.config[trace]],
        "MB": run.bits[trace] / 8e6,
        "gbps_seen": run.seen_gbps[trace],
        "estimate_gbps": run.estimate_gbps[trace],
        "quality": setup.quality[np.arange(setup.n_chunks), run.config[trace]],
        "kl": setup.kl[np.arange(setup.n_chunks), run.config[trace]],
    })


def summary(runs: list[Run]) -> pd.DataFrame:
    """Per policy over its K traces: SLO-violation rate, mean quality, mean and p95 TTFT."""
    return pd.DataFrame([{
        "policy": r.policy,
        "violation_rate": float(1 - r.met.mean()),
        "mean_quality": float(r.quality.mean()),
        "mean_ttft_s": float(r.ttft.mean()),
        "p95_ttft_s": float(np.percentile(r.ttft, 95)),
    } for r in runs])


def run_all(setup: StreamSetup, bw: Bandwidth, policies: tuple[str, ...] | None = None) -> list[Run]:
    return [simulate(setup, bw, p) for p in (policies or policy_names(setup))]


def by_mean_bandwidth(runs: list[Run], bw: Bandwidth, bins: int = 8) -> pd.DataFrame:
    """Violation rate and mean quality per policy, with the traces grouped by the mean bandwidth
    their chunks see (equal-count groups): where in the bandwidth range each policy fails."""
    n = runs[0].config.shape[1]
    mean = bw.gbps[:, :n].mean(axis=1)
    groups = min(bins, bw.traces)
    edges = np.quantile(mean, np.linspace(0, 1, groups + 1))
    group = np.clip(np.searchsorted(edges, mean, side="right") - 1, 0, groups - 1)
    rows = []
    for run in runs:
        for g in range(groups):
            pick = group == g
            if pick.any():
                rows.append({"policy": run.policy, "mean_gbps": float(mean[pick].mean()), "traces": int(pick.sum()),
                             "violation_rate": float(1 - run.met[pick].mean()),
                             "mean_quality": float(run.quality[pick].mean())})
    return pd.DataFrame(rows)


PERSISTENCE_GRID = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99)


def persistence_sweep(setup: StreamSetup, traces: int, seed: int = 0,
                      persistences: tuple[float, ...] = PERSISTENCE_GRID, progress=None) -> pd.DataFrame:
    """Violation rate and mean quality per policy as the bandwidth's persistence grows from i.i.d.
    (0) towards constant, with the marginal Uniform(0.1, 10) Gb/s held fixed: the test of "the last
    chunk predicts the next"."""
    frames = []
    for j, phi in enumerate(persistences):
        frame = summary(run_all(setup, persistent_traces(traces, setup.n_chunks, phi, seed)))
        frame.insert(0, "persistence", float(phi))
        frames.append(frame)
        if progress:
            progress((j + 1) / len(persistences))
    return pd.concat(frames, ignore_index=True)


def slo_sweep(setup: StreamSetup, bw: Bandwidth, slos: np.ndarray,
              policies: tuple[str, ...] | None = None, progress=None, horizon: float | None = None) -> pd.DataFrame:
    """Violation rate and mean quality per policy at each SLO, over all K traces.

    The oracle's programme is solved once on a grid up to ``horizon`` (default: the largest SLO),
    so a sweep computed one SLO at a time with the same horizon gives the same numbers."""
    frames = []
    policies = policies or policy_names(setup)
    horizon = float(horizon if horizon is not None else max(slos))
    shared = oracle_plan(setup, bw, horizon) if bw.kind == "chunk" and "oracle" in policies else None
    for j, slo in enumerate(slos):
        s = replace(setup, slo_s=float(slo))
        runs = [_oracle(s, bw, shared) if p == "oracle" and shared else simulate(s, bw, p) for p in policies]
        frame = summary(runs)
        frame.insert(0, "slo_s", float(slo))
        frames.append(frame)
        if progress:
            progress((j + 1) / len(slos))
    return pd.concat(frames, ignore_index=True)
