"""CacheGen's KV encoder and decoder (SIGCOMM'24 §5.2, Fig. 6), with each step switchable.

1. **Anchor/delta** (the paper): tokens in groups of ``group``; the group's first token (the
   anchor) is quantised at 8 bits and sent as is, the others send their delta to the
   *reconstructed* anchor. The released artifact has no such step (``delta=False``).
2. **Layer-wise quantisation**: ``bins`` per layer from the artifact's tables (finer for shallow
   layers), symmetric, with the artifact's scale of one fp16 maximum per (layer, K/V, token):
   ``q = round(x (bins/2-1) / m) + bins/2-1`` in ``[0, bins-2]``.
3. **Arithmetic coding** of the symbols with one distribution per (layer, K/V, channel), or one
   global distribution; one rANS stream per (layer, K/V, channel) (``kvviz.cachegen.rans``),
   interleaved, so unlike the artifact's layout no per-stream lengths are sent.
   The artifact ships each chunk's histograms with the bitstream (``tables="shipped"``, 16-bit
   CDFs); the paper profiles them offline on other contexts and shares them (``"offline"``).

``encode`` returns a ``Bitstream`` that holds only what a receiver gets; ``decode`` rebuilds the
KV from it alone. Sizes count every byte sent: coded words, scales, anchors and, when shipped,
the tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kvviz.cachegen import rans
from kvviz.common.errors import require

LEVELS = (0, 1, 2, 3, 4)
ARTIFACT_LEVELS = (1, 2, 3)
ANCHOR_BINS = 256  # anchors are quantised at 8 bits (lecture notes §3.3)
FP16_MAX = 65504.0  # the scales travel as fp16
# Bins by layer group, as (first-layer fraction, bins) for keys and values. Levels 1-3 are the
# released artifact's Mistral-7B tables (its ``cachegen_basics.py``: keys [0,10) [10,20) [20,32), values
# [0,2) [2,32) of 32 layers); levels 0 and 4 extend the sweep one step coarser and finer.
_KEY_SPLITS, _VALUE_SPLITS = (0, 10 / 32, 20 / 32), (0, 2 / 32)
BIN_TABLES: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
    0: ((8, 8, 6), (8, 6)),
    1: ((16, 16, 12), (16, 12)),
    2: ((32, 16, 16), (32, 16)),
    3: ((32, 32, 32), (32, 32)),
    4: ((64, 64, 64), (64, 64)),
}


@dataclass(frozen=True)
class CodecConfig:
    """One encoder variant; the defaults are the paper's encoder at the artifact's level 2."""

    level: int = 2
    delta: bool = True
    group: int = 10
    layer_bins: bool = True
    per_channel: bool = True
    entropy: bool = True
    tables: str = "offline"  # "offline" (paper) or "shipped" (artifact)

    def validate(self) -> None:
        require(self.level in LEVELS, f"level must be one of {LEVELS}, got {self.level}", field="level")
        require(2 <= self.group <= 1024, f"group must be 2..1024 tokens, got {self.group}", field="group")
        require(
            self.tables in ("offline", "shipped"),
            f"tables must be 'offline' or 'shipped', got {self.tables!r}",
            field="tables",
        )


PAPER = CodecConfig()
ARTIFACT = CodecConfig(delta=False, tables="shipped")


def layer_bins(level: int, layers: int, by_layer: bool = True) -> np.ndarray:
    """Bins per (layer, K/V), ``[layers, 2]``: the table's groups scaled to ``layers`` layers.

    Without ``by_layer`` every layer gets the bins most layers get in the table (its deep group).
    """
    keys, values = BIN_TABLES[level]
    out = np.empty((layers, 2), dtype=np.int64)
    for col, (splits, bins) in enumerate(((_KEY_SPLITS, keys), (_VALUE_SPLITS, values))):
        starts = [math.ceil(f * layers) for f in splits]
        for start, b in zip(starts, bins):
            out[start:, col] = b
    if not by_layer:
        out[:] = [np.bincount(out[:, 0]).argmax(), np.bincount(out[:, 1]).argmax()]
    return out


def _fp16_scale(x: np.ndarray) -> np.ndarray:
    """The per-(layer, K/V, token) maximum |x| over channels, as sent: fp16, never zero."""
    m = np.abs(x).max(axis=-1, keepdims=True).astype(np.float16)
    return np.where(m > 0, m, np.float16(1)).astype(np.float32)


def quantize(x: np.ndarray, bins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The artifact's symmetric per-token quantiser. ``bins`` broadcasts to ``x[..., :1]``."""
    half = (np.asarray(bins) // 2 - 1).astype(np.float32)
    m = _fp16_scale(x)
    q = np.clip(np.rint(x * (half / m)) + half, 0, 2 * half)
    return q.astype(np.uint16), m


def dequantize(q: np.ndarray, m: np.ndarray, bins: np.ndarray) -> np.ndarray:
    half = (np.asarray(bins) // 2 - 1).astype(np.float32)
    return (q.astype(np.float32) - half) * (m / half)


@dataclass(frozen=True)
class Quantized:
    """The lossy half of the encoder: symbols, their scales, and the anchors."""

    symbols: np.ndarray  # [L, 2, T', C] uint16 (T' = non-anchor tokens with delta)
    scales: np.ndarray  # [L, 2, T, 1] float32 (fp16 values)
    anchors: np.ndarray | None  # [L, 2, n_groups, C] uint16, 8-bit symbols
    bins: np.ndarray  # [L, 2]


def _anchor_index(tokens: int, group: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(tokens)
    return t[t % group == 0], t[t % group != 0]


def quantize_kv(kv: np.ndarray, cfg: CodecConfig) -> Quantized:
    cfg.validate()
    layers, _, tokens, _ = kv.shape
    bins = layer_bins(cfg.level, layers, cfg.layer_bins)
    b = bins[:, :, None, None]
    if not cfg.delta:
        q, m = quantize(kv, b)
        return Quantized(q, m, None, bins)
    anchor_t, member_t = _anchor_index(tokens, cfg.group)
    qa, ma = quantize(kv[:, :, anchor_t], np.int64(ANCHOR_BINS))
    anchor_hat = dequantize(qa, ma, np.int64(ANCHOR_BINS))
    delta = kv[:, :, member_t] - anchor_hat[:, :, member_t // cfg.group]
    qd, md = quantize(delta, b)
    scales = np.empty((*kv.shape[:3], 1), np.float32)
    scales[:, :, anchor_t], scales[:, :, member_t] = ma, md
    return Quantized(qd, scales, qa, bins)


def reconstruct(qz: Quantized, cfg: CodecConfig, tokens: int) -> np.ndarray:
    """The decoder's dequantisation: symbols, scales and anchors back to a KV tensor."""
    b = qz.bins[:, :, None, None]
    if qz.anchors is None:
        return dequantize(qz.symbols, qz.scales, b)
    anchor_t, member_t = _anchor_index(tokens, cfg.group)
    anchor_hat = dequantize(qz.anchors, qz.scales[:, :, anchor_t], np.int64(ANCHOR_BINS))
    out = np.empty((*qz.anchors.shape[:2], tokens, qz.anchors.shape[3]), np.float32)
    out[:, :, anchor_t] = anchor_hat
    out[:, :, member_t] = anchor_hat[:, :, member_t // cfg.group] + dequantize(qz.symbols, qz.scales[:, :, member_t], b)
    return out


def _rows(symbols: np.ndarray) -> np.ndarray:
    """[L, 2, T', C] -> [T', L*2*C]: time-major, one column (stream) per (layer, K/V, channel)."""
    layers, kv2, t, c = symbols.shape
    return symbols.transpose(2, 0, 1, 3).reshape(t, layers * kv2 * c)


def _symbols(rows: np.ndarray, layers: int, channels: int) -> np.ndarray:
    """Invert ``_rows``."""
    return rows.reshape(rows.shape[0], layers, 2, channels).transpose(1, 2, 0, 3)


def _counts(rows: np.ndarray, alphabet: int, per_channel: bool) -> np.ndarray:
    """Histograms per stream ([S, A]), or one over everything ([1, A])."""
    t, n = rows.shape
    if not per_channel:
        return np.bincount(rows.ravel(), minlength=alphabet)[None, :].astype(np.int64)
    flat = (np.arange(n, dtype=np.int32)[None, :] * alphabet + rows).ravel()
    return np.bincount(flat, minlength=n * alphabet).reshape(n, alphabet)


@dataclass(frozen=True)
class Bitstream:
    """Everything the receiver gets for one KV tensor, and its size in bytes by part."""

    config: CodecConfig
    shape: tuple[int, int, int, int]
    scales: np.ndarray  # fp16 values
    anchors: np.ndarray | None
    coded: rans.Encoded | None  # None when entropy coding is off
    raw_symbols: np.ndarray | None  # fixed-width symbols when entropy coding is off
    model: rans.Model | None  # the tables (shipped, or the shared offline ones)
    data_bytes: int
    header_bytes: int
    anchor_bytes: int
    ideal_data_bits: float  # −Σ log2 p of the symbols under their own histograms

    @property
    def total_bytes(self) -> int:
        return self.data_bytes + self.header_bytes + self.anchor_bytes

    @property
    def values(self) -> int:
        return int(np.prod(self.shape))

    @property
    def bits_per_value(self) -> float:
        return 8.0 * self.total_bytes / self.values


def offline_counts(profile_kv: np.ndarray, cfg: CodecConfig) -> np.ndarray:
    """The paper's offline tables: histograms of another context's symbols, +1 smoothed so any
    symbol stays codable (a shared table cannot know which symbols this context will use)."""
    qz = quantize_kv(profile_kv, cfg)
    alphabet = int(qz.bins.max()) - 1
    return _counts(_rows(qz.symbols), alphabet, cfg.per_channel) + 1


def encode(kv: np.ndarray, cfg: CodecConfig, profile: np.ndarray | None = None) -> Bitstream:
    """Encode ``kv [L, 2, T, C]``. ``profile`` is the offline table (``offline_counts``); it is
    needed when ``cfg.tables == "offline"`` and entropy coding is on."""
    kv = check_kv(kv)
    return encode_quantized(quantize_kv(kv, cfg), kv.shape, cfg, profile)


def check_kv(kv: np.ndarray) -> np.ndarray:
    """A KV tensor the codec can take: [layers, 2, tokens, channels], finite, within fp16 (float32)."""
    kv = np.asarray(kv, dtype=np.float32)
    require(kv.ndim == 4 and kv.shape[1] == 2, f"KV must be [layers, 2, tokens, channels], got {kv.shape}")
    require(bool(np.all(np.isfinite(kv))), "KV holds NaN or infinite values")
    peak = float(np.abs(kv).max(initial=0))
    require(peak < FP16_MAX, f"KV values reach {peak:.3g}, beyond the fp16 range of the scales ({FP16_MAX:g})")
    return kv


def encode_quantized(qz: Quantized, shape: tuple, cfg: CodecConfig, profile: np.ndarray | None = None) -> Bitstream:
    """The lossless half of ``encode``: code already-quantised symbols."""
    layers, _, tokens, channels = shape
    rows = _rows(qz.symbols)
    n_streams = rows.shape[1]
    alphabet = int(qz.bins.max()) - 1
    scale_bytes = layers * 2 * tokens * 2
    anchor_bytes = 0 if qz.anchors is None else int(qz.anchors.size)
    own = _counts(rows, alphabet, cfg.per_channel)
    dist = np.arange(n_streams) if cfg.per_channel else np.zeros(n_streams, np.int64)
    ideal = rans.entropy_bits(own)
    common = dict(
        config=cfg,
        shape=tuple(shape),
        scales=qz.scales,
        anchors=qz.anchors,
        anchor_bytes=anchor_bytes,
        ideal_data_bits=ideal,
    )
    if not cfg.entropy:
        width = np.ceil(np.log2(qz.bins - 1)).astype(np.int64)  # bits per symbol, [L, 2]
        data_bits = int((width * channels * rows.shape[0]).sum())
        return Bitstream(
            coded=None, raw_symbols=rows, model=None, data_bytes=-(-data_bits // 8), header_bytes=scale_bytes, **common
        )
    if cfg.tables == "shipped":
        model, table_bytes = rans.fit_model(own), int(own.shape[0] * (alphabet + 1) * 2)
    else:
        require(profile is not None, "offline tables need a profile (offline_counts of another context)")
        model, table_bytes = rans.fit_model(profile), 0
    coded = rans.encode_rows(rows, model, dist)
    header = scale_bytes + table_bytes  # interleaved streams need no per-stream lengths
    return Bitstream(coded=coded, raw_symbols=None, model=model, data_bytes=coded.nbytes, header_bytes=header, **common)


def decode(bs: Bitstream) -> np.ndarray:
    """Rebuild the KV tensor from the bitstream alone."""
    layers, _, tokens, channels = bs.shape
    cfg = bs.config
    if bs.coded is None:
        rows = bs.raw_symbols
    else:
        n = bs.coded.streams
        dist = np.arange(n) if cfg.per_channel else np.zeros(n, np.int64)
        rows = rans.decode_rows(bs.coded, bs.model, dist)
    symbols = _symbols(rows, layers, channels)
    bins = layer_bins(cfg.level, layers, cfg.layer_bins)
    return reconstruct(Quantized(symbols, bs.scales, bs.anchors, bins), cfg, tokens)


def variant(cfg: CodecConfig, **changes) -> CodecConfig:
    return replace(cfg, **changes)
