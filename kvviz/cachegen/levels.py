"""CacheGen's streaming levels, measured rather than assumed (SIGCOMM'24 §5.3, Table 1).

The paper pre-encodes every chunk at a few levels; its Table 1 reports Mistral-7B's KV of a LongChat
context at 622 MB with 8-bit quantization and 176 MB with CacheGen, at accuracy 1.00 and 0.98. Here
each level's numbers come from running the project's codec (``kvviz.cachegen.codec``, the paper's
encoder at the artifact's bin tables for levels 1-3) and the 8-bit baseline:

* **Size**: bits per value of one encoded chunk, either of a synthetic KV with the model's layer
  count and the chunk's token count (``sizes="synthetic"``), or of the record-world model's real KV
  (``sizes="model"``). The coded words and 8-bit anchors are counted as encoded; the fp16 per-token
  scales are counted at the target model's channel count (one scale per layer, K/V and token is
  16 bits over ``kv_heads x head_dim`` values), since the sample's few channels would overstate them.
* **Quality**: the record-world model's answers over its own KV decoded at that level
  (``kvviz.cachegen.model_kv.Judge``): the share answered as at full precision, the accuracy, and the
  mean KL divergence of the answer distribution, which moves before accuracy does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from kvviz.cachegen import codec, model_kv
from kvviz.cachegen.codec import PAPER
from kvviz.cachegen.kv import SyntheticKV, profile_context, synthetic_kv
from kvviz.cachegen.streaming import MAX_CHUNKS, MODEL_NAME, ChunkMeasures, Level, kv_values_per_token
from kvviz.common import budget, hardware
from kvviz.common.errors import require

SIZE_SOURCES = {"synthetic": "a synthetic KV chunk with the model's layers", "model": "the record-world model's KV"}
"""Where the level sizes come from, and how the page says it."""
SAMPLE_CHANNELS = 64  # channels of the synthetic chunk (the scales are re-counted at the model's)
MAX_SAMPLE_TOKENS = 2_048  # a chunk longer than this is sized from its first 2,048 tokens
QUANT8_BINS = 256
CONTEXT_TABLE1 = 9_490  # tokens that make 622 MB at 8 bits on Mistral-7B (research notes §A.0)
SCALE_BITS = 16
DEFAULT_DOCUMENTS = 100
ENCODES_PER_S = 1.5e7  # values encoded per CPU second (a 1M-value KV, 35 encodes, 2.1 CPU s)


@dataclass(frozen=True)
class LevelStudy:
    """What the levels are measured on."""

    sizes: str = "synthetic"  # "synthetic" (the model's layers, one chunk of tokens) or "model"
    chunk_tokens: int = 1_500
    documents: int = DEFAULT_DOCUMENTS  # record-world documents judged (24 tokens, 12 questions each)
    seed: int = 0
    group: int = 10
    model: str = MODEL_NAME
    chunks: int = 1  # with sizes="model": the documents split into this many chunks, each
    #                              encoded on its own and decoded on arrival (``Measured.per_chunk``)

    def validate(self) -> None:
        require(
            self.sizes in SIZE_SOURCES,
            f"sizes must be one of {', '.join(SIZE_SOURCES)}, got {self.sizes!r}",
            field="sizes",
        )
        require(1 <= self.chunk_tokens, "the chunk must have at least 1 token", field="chunk")
        require(
            1 <= self.documents <= model_kv.MAX_DOCUMENTS,
            f"documents must be 1..{model_kv.MAX_DOCUMENTS}, got {self.documents}",
            field="documents",
        )
        require(
            1 <= self.chunks <= self.documents,
            f"{self.chunks} chunks need at least as many record-world documents (got {self.documents})",
            field="documents",
        )
        hardware.model(self.model)

    @classmethod
    def for_stream(
        cls, sizes: str, context: int, chunk: int, seed: int = 0, documents: int = DEFAULT_DOCUMENTS
    ) -> LevelStudy:
        """The study a stream of ``context`` tokens in ``chunk``-token chunks needs: with the record-world
        KV as the source, one group of documents per chunk (at least ``documents`` in all)."""
        require(chunk >= 1, f"the chunk size must be at least 1 token, got {chunk}", field="chunk")
        require(
            chunk <= context,
            f"the chunk size ({chunk:,} tokens) is larger than the context ({context:,} tokens)",
            field="chunk",
        )
        chunks = -(-context // chunk)
        require(chunks <= MAX_CHUNKS, f"{chunks:,} chunks is too many (at most {MAX_CHUNKS:,})", field="chunk")
        per_chunk = sizes == "model"
        return cls(
            sizes, chunk, max(documents, chunks) if per_chunk else documents, seed, chunks=chunks if per_chunk else 1
        )

    @property
    def sample(self) -> SyntheticKV:
        """The synthetic chunk the sizes are measured on."""
        return SyntheticKV(
            layers=hardware.model(self.model).layers,
            tokens=max(2, min(self.chunk_tokens, MAX_SAMPLE_TOKENS)),
            channels=SAMPLE_CHANNELS,
            seed=self.seed,
        )


@dataclass(frozen=True)
class Measured:
    """The levels and the 8-bit baseline as streaming configurations, and the table they came from."""

    levels: tuple[Level, ...]
    quant8: Level
    table: pd.DataFrame
    per_chunk: ChunkMeasures | None = None


def cost(study: LevelStudy) -> budget.Cost:
    """The work of ``measure``: encodes of the size sample and of the model's KV, before any runs."""
    study.validate()
    sample = 0 if study.sizes == "model" else study.sample.values
    model_values = model_kv.kv_values(study.documents)
    n = len(codec.ARTIFACT_LEVELS)
    return budget.cost(
        "measuring the levels",
        n * (2 * sample + 4 * model_values),
        "values encoded",
        ENCODES_PER_S,
        "the chunk or the documents",
    )


@lru_cache(maxsize=8)
def measure(study: LevelStudy = LevelStudy()) -> Measured:
    """Encode and judge levels 1-3 of the paper's encoder and the 8-bit baseline (once per study and
    process: the result depends on the study alone)."""
    budget.check(cost(study))
    spec = hardware.model(study.model)
    channels = spec.kv_heads * spec.head_dim
    kv, profile, judge = model_kv.judged_kv(study.documents, study.seed)
    sized = (
        (kv, profile)
        if study.sizes == "model"
        else (synthetic_kv(study.sample), synthetic_kv(profile_context(study.sample)))
    )
    rows, levels = [], []
    for lvl in codec.ARTIFACT_LEVELS:
        cfg = codec.variant(PAPER, level=lvl, group=study.group)
        bits = _coded_bits(*sized, cfg, channels)
        qz = codec.quantize_kv(kv, cfg)
        answers = judge(codec.reconstruct(qz, cfg, kv.shape[2]))
        levels.append(Level(f"level{lvl}", bits, answers.agreement, answers.kl))
        rows.append(_row(levels[-1], answers, study.model))
    q, m = codec.quantize(kv, np.int64(QUANT8_BINS))
    answers = judge(codec.dequantize(q, m, np.int64(QUANT8_BINS)))
    quant8 = Level("quant8", 8.0 + SCALE_BITS / channels, answers.agreement, answers.kl)
    rows.append(_row(quant8, answers, study.model))
    per_chunk = (
        _per_chunk(kv, profile, judge.ctx, study, channels) if study.sizes == "model" and study.chunks > 1 else None
    )
    return Measured(tuple(levels), quant8, pd.DataFrame(rows), per_chunk)


def _per_chunk(
    kv: np.ndarray, profile: np.ndarray, ctx: model_kv.ModelContext, study: LevelStudy, channels: int
) -> ChunkMeasures:
    """Each chunk's documents encoded as their own bitstream at every level, decoded, and asked their
    questions: ``[chunks, levels + quant8]`` bits per value, quality and KL."""
    shape = (study.chunks, len(codec.ARTIFACT_LEVELS) + 1)
    bits, quality, kl = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    cfgs = [codec.variant(PAPER, level=lvl, group=study.group) for lvl in codec.ARTIFACT_LEVELS]
    tables = [codec.offline_counts(profile, cfg) for cfg in cfgs]
    per_doc = ctx.shape[3]
    for i, docs in enumerate(np.array_split(np.arange(ctx.docs.n), study.chunks)):
        part = kv[:, :, docs[0] * per_doc : (docs[-1] + 1) * per_doc]
        judge = model_kv.Judge(part, model_kv.subset(ctx, docs))
        for j, (cfg, table) in enumerate(zip(cfgs, tables)):
            bs = codec.encode(part, cfg, table)
            bits[i, j] = _bits_sent(bs, channels)
            a = judge(codec.decode(bs))
            quality[i, j], kl[i, j] = a.agreement, a.kl
        q, m = codec.quantize(part, np.int64(QUANT8_BINS))
        a = judge(codec.dequantize(q, m, np.int64(QUANT8_BINS)))
        bits[i, -1], quality[i, -1], kl[i, -1] = 8.0 + SCALE_BITS / channels, a.agreement, a.kl
    return ChunkMeasures(bits, quality, kl)


def _coded_bits(kv: np.ndarray, profile: np.ndarray, cfg: codec.CodecConfig, channels: int) -> float:
    """Bits per value sent for ``kv`` at ``cfg``."""
    return _bits_sent(codec.encode(kv, cfg, codec.offline_counts(profile, cfg)), channels)


def _bits_sent(bs: codec.Bitstream, channels: int) -> float:
    """Coded words and anchors as encoded, the fp16 per-token scales counted at ``channels`` per value."""
    layers, _, tokens, _ = bs.shape
    return 8.0 * (bs.total_bytes - layers * 2 * tokens * 2) / bs.values + SCALE_BITS / channels


def context_mb(bits_per_value: float, model: str = MODEL_NAME, tokens: int = CONTEXT_TABLE1) -> float:
    """MB of a ``tokens``-token context's KV at ``bits_per_value`` (Table 1's context by default)."""
    return bits_per_value * kv_values_per_token(hardware.model(model)) * tokens / 8e6


def _row(level: Level, answers: model_kv.Answers, model: str) -> dict:
    return {
        "config": level.name,
        "bits_per_value": level.bits_per_value,
        f"MB ({CONTEXT_TABLE1:,} tokens)": context_mb(level.bits_per_value, model),
        "accuracy": answers.accuracy,
        "same answer as fp16": answers.agreement,
        "kl": answers.kl,
        "log p(right answer)": answers.logprob,
    }
