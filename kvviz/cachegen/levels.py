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

from kvviz import budget, hardware
from kvviz.cachegen import codec, model_kv
from kvviz.cachegen.codec import PAPER
from kvviz.cachegen.kv import SyntheticKV, profile_context, synthetic_kv
from kvviz.cachegen.streaming import MODEL_NAME, Level, kv_values_per_token
from kvviz.errors import require

SIZE_SOURCES = {"synthetic": "a synthetic KV chunk with the model's layers", "model": "the record-world model's KV"}
"""Where the level sizes come from, and how the page says it."""
SAMPLE_CHANNELS = 64            # channels of the synthetic chunk (the scales are re-counted at the model's)
MAX_SAMPLE_TOKENS = 2_048       # a chunk longer than this is sized from its first 2,048 tokens
QUANT8_BINS = 256
CONTEXT_TABLE1 = 9_490          # tokens that make 622 MB at 8 bits on Mistral-7B (research notes §A.0)
SCALE_BITS = 16
ENCODES_PER_S = 1.5e7           # values encoded per CPU second (a 1M-value KV, 35 encodes, 2.1 CPU s)


@dataclass(frozen=True)
class LevelStudy:
    """What the levels are measured on."""

    sizes: str = "synthetic"     # "synthetic" (the model's layers, one chunk of tokens) or "model"
    chunk_tokens: int = 1_500
    documents: int = 100         # record-world documents judged (24 tokens, 12 questions each)
    seed: int = 0
    group: int = 10
    model: str = MODEL_NAME

    def validate(self) -> None:
        require(self.sizes in SIZE_SOURCES, f"sizes must be one of {', '.join(SIZE_SOURCES)}, got {self.sizes!r}",
                field="sizes")
        require(1 <= self.chunk_tokens, "the chunk must have at least 1 token", field="chunk")
        require(1 <= self.documents <= model_kv.MAX_DOCUMENTS,
                f"documents must be 1..{model_kv.MAX_DOCUMENTS}, got {self.documents}", field="documents")
        hardware.model(self.model)

    @property
    def sample(self) -> SyntheticKV:
        """The synthetic chunk the sizes are measured on."""
        return SyntheticKV(layers=hardware.model(self.model).layers, tokens=max(2, min(self.chunk_tokens,
                           MAX_SAMPLE_TOKENS)), channels=SAMPLE_CHANNELS, seed=self.seed)


@dataclass(frozen=True)
class Measured:
    """The levels and the 8-bit baseline as streaming configurations, and the table they came from."""

    levels: tuple[Level, ...]
    quant8: Level
    table: pd.DataFrame


def cost(study: LevelStudy) -> budget.Cost:
    """The work of ``measure``: encodes of the size sample and of the model's KV, before any runs."""
    study.validate()
    sample = 0 if study.sizes == "model" else study.sample.values
    model_values = model_kv.kv_values(study.documents)
    n = len(codec.ARTIFACT_LEVELS)
    return budget.cost("measuring the levels", n * (2 * sample + 3 * model_values), "values encoded",
                       ENCODES_PER_S, "the chunk or the documents")


@lru_cache(maxsize=8)
def measure(study: LevelStudy = LevelStudy()) -> Measured:
    """Encode and judge levels 1-3 of the paper's encoder and the 8-bit baseline (once per study and
    process: the result depends on the study alone)."""
    budget.check(cost(study))
    spec = hardware.model(study.model)
    channels = spec.kv_heads * spec.head_dim
    kv, profile, judge = model_kv.judged_kv(study.documents, study.seed)
    sized = (kv, profile) if study.sizes == "model" else (synthetic_kv(study.sample),
                                                           synthetic_kv(profile_context(study.sample)))
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
    return Measured(tuple(levels), quant8, pd.DataFrame(rows))


def _coded_bits(kv: np.ndarray, profile: np.ndarray, cfg: codec.CodecConfig, channels: int) -> float:
    """Bits per value sent for ``kv`` at ``cfg``: coded words and anchors as encoded, scales at ``channels``."""
    bs = codec.encode(kv, cfg, codec.offline_counts(profile, cfg))
    scale_bytes = kv.shape[0] * 2 * kv.shape[2] * 2
    return 8.0 * (bs.total_bytes - scale_bytes) / bs.values + SCALE_BITS / channels


def context_mb(bits_per_value: float, model: str = MODEL_NAME, tokens: int = CONTEXT_TABLE1) -> float:
    """MB of a ``tokens``-token context's KV at ``bits_per_value`` (Table 1's context by default)."""
    return bits_per_value * kv_values_per_token(hardware.model(model)) * tokens / 8e6


def _row(level: Level, answers: model_kv.Answers, model: str) -> dict:
    return {"config": level.name, "bits_per_value": level.bits_per_value,
            f"MB ({CONTEXT_TABLE1:,} tokens)": context_mb(level.bits_per_value, model),
            "accuracy": answers.accuracy, "same answer as fp16": answers.agreement, "kl": answers.kl,
            "log p(right answer)": answers.logprob}
