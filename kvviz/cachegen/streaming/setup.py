"""What is streamed: the context, its chunks, the measured configurations (levels, 8-bit quantisation,
text) with their sizes and what they do to the answers, the SLO, and the GPU time to recompute text."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvviz.common import hardware
from kvviz.common.errors import require

# The paper's setting: Mistral-7B (Table 1) recomputed on an A40 (§7.1). Both come from kvviz.common.hardware,
# the one home of KV bytes per token and prefill FLOPs.
MODEL_NAME, GPU_NAME = "mistral-7b", "a40"
ARTIFACT_TEXT_S = 0.2  # run_adaptation.py's fixed per-chunk text cost
TEXT_BYTES_PER_TOKEN = 4  # token ids
MAX_CHUNKS = 1_000
KL_TIE = 1e-3
"""Weight of the KL divergence (nats) against the quality share in the oracle's sum over chunks: the
quality decides, and between equal qualities the smaller KL (the finer level) wins. The paper rule ranks
one chunk's options in order instead (``policies``), which holds however small the KLs are."""


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
    model: str = MODEL_NAME  # kvviz.common.hardware model: KV values per token, prefill FLOPs
    gpu: str = GPU_NAME  # kvviz.common.hardware GPU that recomputes text
    values_per_token: int | None = None  # None: the model's (kvviz.common.hardware); set only by unit tests
    recompute: str = "prefill"  # "prefill" (kvviz.common.hardware's FLOPs model) or "fixed" (artifact's 0.2 s)
    fixed_recompute_s: float = ARTIFACT_TEXT_S
    initial_gbps: float | None = None  # the paper rule's first estimate; None = the trace's mean
    per_chunk: ChunkMeasures | None = None  # each chunk's own sizes and qualities; None: the levels' for all

    def validate(self) -> None:
        require(self.slo_s > 0 and math.isfinite(self.slo_s), f"the SLO must be > 0 s, got {self.slo_s}", field="slo")
        require(
            self.context_tokens >= 1,
            f"the context must have at least 1 token, got {self.context_tokens}",
            field="context",
        )
        require(
            self.chunk_tokens >= 1, f"the chunk size must be at least 1 token, got {self.chunk_tokens}", field="chunk"
        )
        require(
            self.chunk_tokens <= self.context_tokens,
            f"the chunk size ({self.chunk_tokens:,} tokens) is larger than the context "
            f"({self.context_tokens:,} tokens)",
            field="chunk",
        )
        require(
            self.n_chunks <= MAX_CHUNKS, f"{self.n_chunks:,} chunks is too many (at most {MAX_CHUNKS:,})", field="chunk"
        )
        require(len(self.levels) >= 1, "at least one encoding level is needed", field="levels")
        require(
            self.recompute in ("prefill", "fixed"),
            f"recompute must be 'prefill' or 'fixed', got {self.recompute!r}",
            field="recompute",
        )
        require(self.fixed_recompute_s > 0, "the fixed recompute time must be > 0 s", field="recompute")
        require(
            self.initial_gbps is None or (self.initial_gbps > 0 and math.isfinite(self.initial_gbps)),
            f"the initial bandwidth estimate must be > 0 Gb/s, got {self.initial_gbps}",
            field="initial_gbps",
        )
        hardware.model(self.model), hardware.gpu(self.gpu)
        for lv in (*self.levels, self.quant8):
            require(lv.bits_per_value > 0, f"level {lv.name} must have > 0 bits per value", field="levels")
        if self.per_chunk is not None:
            require(
                self.per_chunk.bits_per_value.shape == (self.n_chunks, len(self.levels) + 1),
                f"per-chunk measures for {self.per_chunk.bits_per_value.shape[0]} chunks, the context has "
                f"{self.n_chunks}",
                field="chunk",
            )

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
            kv = np.broadcast_to(
                [getattr(lv, field) for lv in (*self.levels, self.quant8)], (self.n_chunks, len(self.levels) + 1)
            )
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
        """What the oracle maximises, per (chunk, configuration): quality first, then least KL (``KL_TIE``).
        Counted from lossless (text: 0) down, so a confident model's KLs of 1e-11 nats are not rounded away
        against a quality of 1."""
        return (self.quality - 1.0) - KL_TIE * self.kl

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
    return hardware.prefill_seconds(
        hardware.model(model), hardware.Compute(hardware.gpu(gpu)), new_tokens, cached_tokens
    )
