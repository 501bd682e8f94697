"""A synthetic "LLM-like" KV tensor, for the codec when no real model is at hand.

It has the three properties CacheGen's encoder exploits (SIGCOMM'24 §5.1), each tunable:
per-channel offsets and scales (so grouping by (layer, channel) lowers entropy), a few outlier
channels (large magnitudes, as real K caches have), and token-to-token correlation ``rho`` in
each channel (an AR(1) process along the tokens, so neighbouring tokens are alike). With
``rho = 0`` tokens are independent and the anchor/delta step can only hurt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kvviz.common.errors import require

MAX_VALUES = 64 * 2**20  # 64M floats (256 MB as float32)


@dataclass(frozen=True)
class SyntheticKV:
    """Shape and statistics of a synthetic KV tensor ``[layers, 2 (K, V), tokens, channels]``."""

    layers: int = 8
    tokens: int = 1024
    channels: int = 64
    rho: float = 0.9  # lag-1 correlation of a channel along the tokens
    offset: float = 1.0  # spread of per-channel offsets, in units of the noise
    outliers: int = 2  # outlier channels per (layer, K/V)
    outlier_scale: float = 8.0  # how much larger an outlier channel is
    seed: int = 0  # the "model": channel offsets, scales and outliers
    context: int = 0  # the "context": the token-by-token noise

    @property
    def values(self) -> int:
        """Floats in the tensor."""
        return self.layers * 2 * self.tokens * self.channels

    def validate(self) -> None:
        require(1 <= self.layers <= 128, f"layers must be 1..128, got {self.layers}", field="layers")
        require(2 <= self.tokens <= 65_536, f"tokens must be 2..65536, got {self.tokens}", field="tokens")
        require(1 <= self.channels <= 8192, f"channels must be 1..8192, got {self.channels}", field="channels")
        require(
            self.layers * 2 * self.tokens * self.channels <= MAX_VALUES,
            f"the KV would hold {self.layers * 2 * self.tokens * self.channels:,} values; the limit is {MAX_VALUES:,}",
            field="tokens",
        )
        require(0.0 <= self.rho < 1.0, f"rho must be in [0, 1), got {self.rho}", field="rho")
        require(0.0 <= self.offset <= 100.0, f"offset must be in [0, 100], got {self.offset}", field="offset")
        require(
            0 <= self.outliers <= self.channels,
            f"outliers must be 0..channels ({self.channels}), got {self.outliers}",
            field="outliers",
        )
        require(
            1.0 <= self.outlier_scale <= 1000.0,
            f"outlier_scale must be in [1, 1000], got {self.outlier_scale}",
            field="outlier_scale",
        )


def synthetic_kv(spec: SyntheticKV) -> np.ndarray:
    """Draw the KV tensor, float32 ``[layers, 2, tokens, channels]``."""
    spec.validate()
    rng = np.random.default_rng(spec.seed)
    shape = (spec.layers, 2, spec.tokens, spec.channels)
    noise = np.random.default_rng([spec.seed, spec.context]).standard_normal(shape, dtype=np.float32)
    z = _ar1(noise, spec.rho)
    scale = rng.lognormal(0.0, 0.3, (spec.layers, 2, 1, spec.channels)).astype(np.float32)
    offset = (spec.offset * rng.standard_normal((spec.layers, 2, 1, spec.channels))).astype(np.float32)
    if spec.outliers:
        picks = np.argsort(rng.random((spec.layers, 2, spec.channels)), axis=2)[..., : spec.outliers]
        boost = np.ones((spec.layers, 2, spec.channels), np.float32)
        np.put_along_axis(boost, picks, np.float32(spec.outlier_scale), axis=2)
        scale = scale * boost[:, :, None, :]
        offset = offset * boost[:, :, None, :]
    return offset + scale * z


def _ar1(noise: np.ndarray, rho: float) -> np.ndarray:
    """AR(1) along the tokens (axis 2), started in its stationary distribution: z_t = rho z_{t-1} + e_t
    with innovations e_t = sqrt(1 - rho^2) noise_t, and z_0 = e_0 + rho noise_0 in float64, float32 out.

    One vector step per token over every (layer, K/V, channel) at once, in the order of operations of
    scipy.signal.lfilter([sqrt(1 - rho^2)], [1, -rho], ...), so it draws the same values without
    importing scipy.signal, which the page that first meets it would wait for.
    """
    z = np.moveaxis(noise, 2, 0).astype(np.float64)  # tokens first: each step is one contiguous row
    z *= np.sqrt(1.0 - rho**2)
    z[0] += (rho * noise[:, :, 0, :]).astype(np.float64)
    for t in range(1, len(z)):
        z[t] += rho * z[t - 1]
    return np.moveaxis(z, 0, 2).astype(np.float32)


def profile_context(spec: SyntheticKV) -> SyntheticKV:
    """Another context of the same "model": what the paper profiles its offline tables on."""
    return replace(spec, context=spec.context + 1)


def locality(kv: np.ndarray, group: int) -> dict[str, float]:
    """CacheGen's observation 1, measured: variance of the values vs of their deltas to the anchor.

    ``raw/delta`` compares with the raw values (per-channel offsets included), as the paper's
    2.4-2.9x does; ``centred/delta`` first removes each channel's mean, which per-channel
    quantisation would remove anyway, so it isolates what the token-to-token correlation buys.
    """
    t = kv.shape[2]
    anchors = kv[:, :, (np.arange(t) // group) * group, :]
    members = (np.arange(t) % group) != 0
    delta = (kv - anchors)[:, :, members, :]
    raw = kv.astype(np.float64)
    centred = raw - raw.mean(axis=2, keepdims=True)
    d2 = float(np.mean(delta.astype(np.float64) ** 2))
    return {
        "raw/delta": float(np.mean(raw**2)) / d2 if d2 else float("inf"),
        "centred/delta": float(np.mean(centred**2)) / d2 if d2 else float("inf"),
    }
