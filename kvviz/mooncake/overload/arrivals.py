"""The offered requests: Poisson arrivals at a multiple of the cluster's capacity, or a trace's
arrivals replayed faster, and each pool's capacity for a mix of lengths."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvviz.common.errors import require
from kvviz.mooncake.overload.config import ClusterConfig
from kvviz.traces import Trace

MAX_ARRIVALS = 500_000


@dataclass(frozen=True)
class Arrivals:
    """The offered requests: arrival times (s), prompt and output lengths (tokens), and a trace's
    block ids (request i's are ``blocks[offsets[i]:offsets[i + 1]]``) when it has them."""

    time_s: np.ndarray
    input_length: np.ndarray
    output_length: np.ndarray
    source: str = "poisson"
    blocks: np.ndarray | None = None
    offsets: np.ndarray | None = None
    block_size: int = 0

    def __post_init__(self):
        require(
            len(self.time_s) == len(self.input_length) == len(self.output_length),
            "arrival columns differ in length",
            field="arrivals",
        )
        require(
            len(self.time_s) <= MAX_ARRIVALS,
            f"at most {MAX_ARRIVALS:,} arrivals per run; shorten the duration or lower the load",
            field="arrivals",
        )

    @property
    def n_blocks(self) -> int:
        """Block ids held (0 without them)."""
        return len(self.blocks) if self.blocks is not None else 0

    @property
    def span_s(self) -> float:
        return float(self.time_s[-1]) if len(self.time_s) else 0.0


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, size: int) -> np.ndarray:
    return np.maximum(1, np.rint(rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, size))).astype(np.int64)


@dataclass(frozen=True)
class Capacity:
    """Sustainable request rates of each pool for a given mix of lengths (requests/s)."""

    prefill_rps: float
    decode_rps: float

    @property
    def rps(self) -> float:
        return min(self.prefill_rps, self.decode_rps)

    @property
    def bottleneck(self) -> str:
        return "prefill" if self.prefill_rps <= self.decode_rps else "decode"


def capacity(config: ClusterConfig, input_length: np.ndarray, output_length: np.ndarray) -> Capacity:
    """Each pool's capacity for requests with these lengths (prefill all busy, decode batches full)."""
    mean_prefill = float(np.mean(config.prefill.time(input_length)))
    b = config.max_batch()
    mean_decode = float(np.mean(output_length)) * config.tbt(b)
    return Capacity(config.prefill_instances / mean_prefill, config.decode_instances * b / mean_decode)


def poisson_rate(config: ClusterConfig, load: float, mean_input: int = 20_000, mean_output: int = 200) -> float:
    """Arrivals per second at ``load`` times the cluster's capacity (the same for every seed)."""
    require(load > 0, "the overload factor must be positive", field="load")
    require(
        1 <= mean_input <= 1_000_000 and 1 <= mean_output <= 100_000,
        "mean lengths must be 1..1,000,000 input and 1..100,000 output tokens",
        field="mean_input",
    )
    config.validate()
    # Capacity from a large fixed-seed sample, so every seed is offered the same rate.
    ref = np.random.default_rng(12345)
    cap = capacity(config, _lognormal(ref, mean_input, 0.6, 20_000), _lognormal(ref, mean_output, 0.6, 20_000))
    return load * cap.rps


def poisson_arrivals(
    config: ClusterConfig, load: float, duration_s: float, seed: int, mean_input: int = 20_000, mean_output: int = 200
) -> Arrivals:
    """Poisson arrivals at ``load`` times the cluster's capacity; log-normal lengths (sigma 0.6)."""
    require(0 < duration_s <= 7 * 24 * 3600, "the duration must be in (0, 1 week]", field="duration_s")
    rate = poisson_rate(config, load, mean_input, mean_output)
    expected = rate * duration_s
    require(
        expected <= MAX_ARRIVALS,
        f"{expected:,.0f} arrivals expected; at most {MAX_ARRIVALS:,} per run: shorten the duration or lower the load",
        field="duration_s",
    )
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, int(expected + 6 * math.sqrt(expected) + 20))
    times = np.cumsum(gaps)
    times = times[times < duration_s]
    n = len(times)
    return Arrivals(times, _lognormal(rng, mean_input, 0.6, n), _lognormal(rng, mean_output, 0.6, n), "poisson")


def trace_arrivals(trace: Trace, speedup: float = 2.0) -> Arrivals:
    """A trace's arrivals replayed ``speedup`` times faster (the paper replays at 2x)."""
    require(speedup > 0, "the speed-up must be positive", field="speedup")
    require(trace.n_requests > 0, "the trace has no requests", field="timestamp")
    ts = trace.requests["timestamp"].to_numpy(np.float64)
    require(bool(np.all(np.isfinite(ts))), "the trace needs a timestamp for every request", field="timestamp")
    times = (ts - ts[0]) / 1000.0 / speedup
    ids = (trace.blocks, trace.offsets, trace.block_size) if trace.has_block_ids else (None, None, 0)
    return Arrivals(
        times,
        trace.requests["input_length"].to_numpy(np.int64),
        np.maximum(1, trace.requests["output_length"].to_numpy(np.int64)),
        f"trace x{speedup:g}",
        *ids,
    )
