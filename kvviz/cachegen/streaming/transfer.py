"""One policy's transfer of the context: the chunks sent one after another over K bandwidth traces,
each as the configuration the policy chooses, and the ``Run`` it leaves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.cachegen.streaming.bandwidth import Bandwidth
from kvviz.cachegen.streaming.setup import StreamSetup
from kvviz.common.errors import require


@dataclass(frozen=True)
class Run:
    """One policy over K traces: per (trace, chunk) arrays, and per-trace outcomes."""

    policy: str
    config: np.ndarray  # [K, n] index into setup.config_names
    start: np.ndarray  # [K, n] seconds
    end: np.ndarray  # [K, n]
    bits: np.ndarray  # [K, n]
    seen_gbps: np.ndarray  # [K, n] throughput the chunk's transfer saw
    estimate_gbps: np.ndarray  # [K, n] the rule's bandwidth estimate (NaN when it uses none)
    quality: np.ndarray  # [K] token-weighted quality proxy
    slo_s: float

    @property
    def ttft(self) -> np.ndarray:
        return self.end[:, -1]

    @property
    def met(self) -> np.ndarray:
        return self.ttft <= self.slo_s * (1 + 1e-9)


def check_bandwidth(setup: StreamSetup, bw: Bandwidth) -> None:
    """Per-chunk traces must give every chunk of the context a bandwidth."""
    if bw.kind == "chunk":
        require(
            bw.gbps.shape[1] >= setup.n_chunks,
            f"the bandwidth trace has {bw.gbps.shape[1]} chunk values but the context has {setup.n_chunks} chunks",
            field="bandwidth",
        )


def stream(setup: StreamSetup, bw: Bandwidth, policy: str, choose) -> Run:
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
    return Run(
        policy,
        config,
        start,
        end,
        bits[np.arange(n)[None, :], config],
        seen,
        estimate,
        _quality(setup, config),
        setup.slo_s,
    )


def adaptive_configs(setup: StreamSetup) -> np.ndarray:
    """What the adaptive rules and the oracle choose from: the CacheGen levels and text."""
    return np.array([*range(len(setup.levels)), setup.text_index])


def _quality(setup: StreamSetup, config: np.ndarray) -> np.ndarray:
    w = setup.tokens / setup.context_tokens
    return (setup.quality[np.arange(setup.n_chunks)[None, :], config] * w[None, :]).sum(axis=1)
