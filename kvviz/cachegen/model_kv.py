"""The record-world model's real KV as a codec source, and what compression does to its answers.

Lecture 27 §3.4 runs CacheGen's recipe on the record-world tiny LLaMA (``kvviz.model``, trained
by ``kvviz.train_record_world``): documents of ``key value`` records, questions ``? key``. Here
the documents' full-prefill KV (K after RoPE, and V; ``kvviz.blend.full_prefill_kv``) is laid out
as one codec tensor ``[layers, 2, documents x tokens, heads x head_dim]``, encoded, decoded, put
back, and every record is asked over the decoded cache (``kvviz.blend.answer``): accuracy is the
share of questions answered right, the quality measure the synthetic source lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.errors import require

MAX_DOCUMENTS = 2_000


@dataclass(frozen=True)
class ModelContext:
    """The model, the documents, and the shape of the cache they were laid out from."""

    model: object
    docs: object
    shape: tuple[int, int, int, int, int]      # layers, documents, heads, tokens, head_dim


def available() -> bool:
    """Whether the record-world weights are on disk."""
    from kvviz.model import WEIGHTS
    return WEIGHTS.is_file()


def record_world_kv(documents: int = 200, seed: int = 0, model=None) -> tuple[np.ndarray, ModelContext]:
    """``documents`` fresh record-world documents' KV, as a codec tensor, and their context.

    ``model`` defaults to the trained weights (``kvviz.model.load_model``)."""
    from kvviz.blend import full_prefill_kv
    from kvviz.model import load_model
    from kvviz.record_world import sample_documents

    require(1 <= documents <= MAX_DOCUMENTS, f"documents must be 1..{MAX_DOCUMENTS}, got {documents}",
            field="documents")
    model = model or load_model()
    docs = sample_documents(documents, seed)
    cache = full_prefill_kv(model, docs.tokens)
    return to_codec(cache.k, cache.v), ModelContext(model, docs, cache.k.shape)


def judged_kv(documents: int, seed: int = 0):
    """The model's KV for the codec study, profiling KV from other documents, and a judge that
    scores a decoded KV by the share of questions the model still answers right."""
    kv, ctx = record_world_kv(documents, seed)
    profile = record_world_kv(documents, seed + 1, ctx.model)[0]
    return kv, profile, lambda kv_hat: accuracy(kv_hat, ctx)


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


def accuracy(kv: np.ndarray, ctx: ModelContext) -> float:
    """Share of the documents' records the model answers right over the cache ``kv``."""
    from kvviz.blend import KV, answer

    k, v = from_codec(kv, ctx.shape)
    return float(np.mean(answer(ctx.model, KV(k, v), ctx.docs) == ctx.docs.values))
