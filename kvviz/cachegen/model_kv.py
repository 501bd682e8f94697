"""The record-world model's real KV as a codec source, and what compression does to its answers.

Lecture 27 §3.4 runs CacheGen's recipe on the record-world tiny LLaMA (``kvviz.cacheblend.model``, trained
by ``kvviz.cacheblend.train``): documents of ``key value`` records, questions ``? key``. Here
the documents' full-prefill KV (K after RoPE, and V; ``kvviz.cacheblend.blend.full_prefill_kv``) is laid out
as one codec tensor ``[layers, 2, documents x tokens, heads x head_dim]``, encoded, decoded, put
back, and every record is asked over the decoded cache (``kvviz.cacheblend.blend.answer_logits``): accuracy is the
share of questions answered right, and the KL divergence of the answer distribution from full
precision's moves before any answer flips: the quality measures the synthetic source lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.common.errors import require

MAX_DOCUMENTS = 2_000


@dataclass(frozen=True)
class ModelContext:
    """The model, the documents, and the shape of the cache they were laid out from."""

    model: object
    docs: object
    shape: tuple[int, int, int, int, int]  # layers, documents, heads, tokens, head_dim


def kv_values(documents: int) -> int:
    """Floats in the codec tensor of ``documents`` documents (4 layers, K and V, 24 tokens, 64 channels)."""
    from kvviz.cacheblend.model import Config
    from kvviz.cacheblend.record_world import N_RECORDS

    config = Config()
    return config.n_layers * 2 * 2 * N_RECORDS * documents * config.d_model


def available() -> bool:
    """Whether the record-world weights are on disk."""
    from kvviz.cacheblend.model import WEIGHTS

    return WEIGHTS.is_file()


def record_world_kv(documents: int = 200, seed: int = 0, model=None) -> tuple[np.ndarray, ModelContext]:
    """``documents`` fresh record-world documents' KV, as a codec tensor, and their context.

    ``model`` defaults to the trained weights (``kvviz.cacheblend.model.load_model``)."""
    from kvviz.cacheblend.blend import full_prefill_kv
    from kvviz.cacheblend.model import load_model
    from kvviz.cacheblend.record_world import sample_documents

    require(
        1 <= documents <= MAX_DOCUMENTS, f"documents must be 1..{MAX_DOCUMENTS}, got {documents}", field="documents"
    )
    model = model or load_model()
    docs = sample_documents(documents, seed)
    cache = full_prefill_kv(model, docs.tokens)
    return to_codec(cache.k, cache.v), ModelContext(model, docs, cache.k.shape)


@dataclass(frozen=True)
class Answers:
    """What a decoded KV does to the model's answers, against its full-precision KV."""

    accuracy: float  # share of questions answered right
    agreement: float  # share answered as over the full-precision KV (1 = no answer changed)
    kl: float  # mean KL(full-precision answer distribution || this one), nats
    logprob: float  # mean log-probability of the right answer


class Judge:
    """Scores a decoded KV by the model's answers over it; the full-precision answers are computed once."""

    def __init__(self, kv: np.ndarray, ctx: ModelContext):
        self.ctx = ctx
        self.full_logp = _log_softmax(logits(kv, ctx))
        self.full_answer = self.full_logp.argmax(axis=-1)

    def __call__(self, kv_hat: np.ndarray) -> Answers:
        logp = _log_softmax(logits(kv_hat, self.ctx))
        picked = logp.argmax(axis=-1)
        kl = (np.exp(self.full_logp) * (self.full_logp - logp)).sum(axis=-1)
        right = np.take_along_axis(logp, self.ctx.docs.values[..., None], axis=-1)[..., 0]
        return Answers(
            float(np.mean(picked == self.ctx.docs.values)),
            float(np.mean(picked == self.full_answer)),
            float(max(kl.mean(), 0.0)),
            float(right.mean()),
        )


def subset(ctx: ModelContext, documents: np.ndarray) -> ModelContext:
    """The context of some of its documents (a contiguous run of them, as a streamed chunk holds)."""
    from kvviz.cacheblend.record_world import Documents

    docs = Documents(*(x[documents] for x in (ctx.docs.tokens, ctx.docs.keys, ctx.docs.values)))
    layers, _, heads, tokens, hd = ctx.shape
    return ModelContext(ctx.model, docs, (layers, len(documents), heads, tokens, hd))


def judged_kv(documents: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Judge]:
    """The model's KV for the codec study, profiling KV from other documents, and a judge that
    scores a decoded KV by the model's answers over it."""
    kv, ctx = record_world_kv(documents, seed)
    profile = record_world_kv(documents, seed + 1, ctx.model)[0]
    return kv, profile, Judge(kv, ctx)


def to_codec(k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """[L, D, H, N, hd] K and V -> [L, 2, D*N, H*hd]: tokens of all documents, one after another."""
    layers, docs, heads, tokens, hd = k.shape
    flat = [x.transpose(0, 1, 3, 2, 4).reshape(layers, docs * tokens, heads * hd) for x in (k, v)]
    return np.stack(flat, axis=1).astype(np.float32)


def from_codec(kv: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Invert ``to_codec``."""
    layers, docs, heads, tokens, hd = shape
    k, v = (kv[:, i].reshape(layers, docs, tokens, heads, hd).transpose(0, 1, 3, 2, 4) for i in (0, 1))
    return np.ascontiguousarray(k), np.ascontiguousarray(v)


def logits(kv: np.ndarray, ctx: ModelContext) -> np.ndarray:
    """The model's logits [documents, records, vocab] after each question over the cache ``kv``."""
    from kvviz.cacheblend.blend import KV, answer_logits

    k, v = from_codec(kv, ctx.shape)
    return answer_logits(ctx.model, KV(k, v), ctx.docs).astype(np.float64)


def accuracy(kv: np.ndarray, ctx: ModelContext) -> float:
    """Share of the documents' records the model answers right over the cache ``kv``."""
    return float(np.mean(logits(kv, ctx).argmax(axis=-1) == ctx.docs.values))


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
