"""CacheBlend on the record-world model: chunked KV reuse and selective recompute.

Yao et al., "CacheBlend: Fast Large Language Model Serving for RAG with Cached Knowledge
Fusion" (EuroSys 2025): §3 (why concatenating per-chunk KV loses cross-chunk attention),
§4.2 (selective recompute of high-KV-deviation, HKVD, tokens), §4.3 (gradual filtering across
layers), §5.1 (the loading controller), Appendix A (moving cached K with a RoPE rotation).
Lecture 27 §5 gives the record-world version reproduced here.

Every document is cut into chunks of ``chunk_len`` tokens; each chunk's KV is precomputed as
if the chunk were a prefix (positions from 0), then K is rotated to the chunk's offset and the
chunks are concatenated. Methods, all answering the question ``? k`` with the question tokens
computed at every layer:

- ``full_prefill``: no reuse (ground truth);
- ``full_reuse``: plain concatenation, nothing recomputed;
- ``prefix``: prefix caching, only the first chunk reused, everything after it recomputed;
- ``cacheblend``: HKVD selection (``VARIANTS`` lists the paper's and the implementations');
- ``random``: the same number of tokens as CacheBlend's target r·N, picked at random.

Recomputing a token at a layer means computing its Q, K, V from its (recomputed) residual,
writing K, V over the cached entries, attending to the whole mixed cache, and running the MLP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.cacheblend.model import Model, attend, causal_mask, finish, forward, merge_heads, qkv, rope, unembed
from kvviz.cacheblend.record_world import QUERY, Documents, check_chunk_len, chunk_ids, cut_records
from kvviz.common import hardware as hw
from kvviz.common.errors import require

METHODS = ("full_prefill", "full_reuse", "prefix", "cacheblend", "random")
GRADUAL = (1.25, 0.75)  # first and last multiple of r·N kept after layers 0 .. L-2 (lecture notes)


@dataclass(frozen=True)
class Variant:
    """A token-selection rule: where it ranks tokens, by what, and how many it keeps."""

    name: str
    label: str
    source: str
    first_rank_layer: int
    metric: str  # deviation used at layers >= 1: "kv", "v" or "k"
    gradual: bool


VARIANTS = {
    "paper": Variant(
        "paper",
        "Paper: gradual filtering, ‖ΔK‖²+‖ΔV‖²",
        "paper §4.3 and lecture notes: layer-0 attention deviation picks 1.25·r·N, "
        "then KV deviation keeps 1.0·r·N, 0.75·r·N",
        0,
        "kv",
        True,
    ),
    "v_layer1": Variant(
        "v_layer1",
        "Prototype / LMCache v0: one pick at layer 1, ‖ΔV‖²",
        "YaoJiayi/CacheBlend and LMCache v0: layers 0-1 in full, one selection of r·N at layer 1 by V deviation",
        1,
        "v",
        False,
    ),
    "k_layer1": Variant(
        "k_layer1",
        "LMCache v1: one pick at layer 1, ‖ΔK‖² (after RoPE)",
        "LMCache v1 LMCBlender: layers 0-1 in full, one selection of r·N at layer 1 by post-RoPE K deviation",
        1,
        "k",
        False,
    ),
}


@dataclass
class KV:
    """Per-layer caches for a batch of documents: ``k`` (after RoPE), ``v`` [L, D, H, N, hd]."""

    k: np.ndarray
    v: np.ndarray

    def copy(self) -> KV:
        return KV(self.k.copy(), self.v.copy())


@dataclass
class Blended:
    """What a selective recompute produced: the mixed cache, which tokens each layer recomputed
    (``computed`` [L, D, N]; at layer 0, whose cached K, V are exact, the tokens carried on to
    layer 1) and the deviation score each layer ranked them by (NaN elsewhere)."""

    kv: KV
    computed: np.ndarray
    scores: np.ndarray


# ---- caches -----------------------------------------------------------------------------------


def full_prefill_kv(model: Model, tokens: np.ndarray) -> KV:
    """The documents' KV under a normal causal prefill: the ground truth."""
    run = forward(model, tokens, record=True)
    return KV(np.stack([rec.k for rec in run.layers]), np.stack([rec.v for rec in run.layers]))


def chunk_kv(model: Model, tokens: np.ndarray, chunk_len: int) -> KV:
    """Each chunk precomputed as if it were a prefix, K rotated to the chunk's offset, concatenated.

    One forward pass does all chunks: positions restart at 0 in every chunk and a block-diagonal
    causal mask keeps each chunk to itself. Then K moves by the chunk offset (Appendix A).
    """
    n = tokens.shape[1]
    chunk = chunk_ids(n, chunk_len)
    offset = chunk * chunk_len
    local = np.arange(n) - offset
    allowed = causal_mask(n) & (chunk[:, None] == chunk[None, :])
    run = forward(model, tokens, positions=local, allowed=allowed, record=True)
    k = np.stack([rope(rec.k, offset, model.config.rope_base) for rec in run.layers])
    return KV(k, np.stack([rec.v for rec in run.layers]))


# ---- selective recompute --------------------------------------------------------------------


def n_tokens(fraction: float, n: int) -> int:
    """round(fraction · n), clipped to 0..n."""
    return int(min(n, max(0, np.floor(fraction * n + 0.5))))


def keep_schedule(variant: Variant, ratio: float, n: int, n_layers: int) -> list[int | None]:
    """How many tokens stay selected after each layer (None: no ranking at that layer)."""
    keep: list[int | None] = [None] * n_layers
    if variant.gradual:
        mults = np.linspace(GRADUAL[0], GRADUAL[1], n_layers - 1) if n_layers > 2 else [1.0]
        for layer, mult in enumerate(mults):
            keep[layer] = n_tokens(mult * ratio, n)
    else:
        keep[variant.first_rank_layer] = n_tokens(ratio, n)
    return keep


def _gather(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """x [D, H, N, hd] at token indices idx [D, n] -> [D, H, n, hd]."""
    return np.take_along_axis(x, idx[:, None, :, None], axis=2)


def _scatter(x: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    np.put_along_axis(x, idx[:, None, :, None], values, axis=2)


def _deviation(metric: str, k_new, v_new, k_old, v_old) -> np.ndarray:
    """Per-token squared deviation [D, n], summed over heads and channels."""
    dk = np.sum((k_new - k_old) ** 2, axis=(1, 3))
    dv = np.sum((v_new - v_old) ** 2, axis=(1, 3))
    return {"kv": dk + dv, "k": dk, "v": dv}[metric]


def selective_recompute(
    model: Model,
    tokens: np.ndarray,
    reused: KV,
    chunk_len: int,
    keep: list[int | None],
    first: str = "attention",
    metric: str = "kv",
    rng: np.random.Generator | None = None,
) -> Blended:
    """Recompute a shrinking set of tokens layer by layer over the reused cache.

    All tokens enter layer 0, where the cached K, V are already exact. After layer l, when
    ``keep[l]`` is set, the active tokens are ranked and the top ``keep[l]`` stay active: after
    layer 0 by ``first`` ("attention": full-mask vs chunk-mask attention output over the same
    K, V; "random"; "prefix": every token after the first chunk), after later layers by the
    deviation ``metric`` ("kv", "k" or "v") between the fresh and the reused K, V.
    """
    config, (d_docs, n) = model.config, tokens.shape
    kv = reused.copy()
    computed = np.zeros((config.n_layers, d_docs, n), dtype=bool)
    scores = np.full((config.n_layers, d_docs, n), np.nan)
    rows = np.arange(d_docs)[:, None]
    idx = np.broadcast_to(np.arange(n), (d_docs, n)).copy()
    h = model.params["embed"][tokens]
    chunk = chunk_ids(n, chunk_len)
    for layer_i in range(config.n_layers):
        layer = model.layer(layer_i)
        _, _, q, k_new, v_new = qkv(layer, h, idx, config)
        k_old, v_old = _gather(kv.k[layer_i], idx), _gather(kv.v[layer_i], idx)
        _scatter(kv.k[layer_i], idx, k_new)
        _scatter(kv.v[layer_i], idx, v_new)
        out, _ = attend(q, kv.k[layer_i], kv.v[layer_i], np.arange(n)[None, None, :] <= idx[:, :, None])
        if layer_i > 0:
            computed[layer_i, rows, idx] = True
        if keep[layer_i] is not None:
            if layer_i == 0:
                score = _first_score(first, q, kv, idx, out, chunk, rng)
            else:
                score = _deviation(metric, k_new, v_new, k_old, v_old)
            scores[layer_i, rows, idx] = score
            top = np.sort(np.argsort(-score, axis=1, kind="stable")[:, : keep[layer_i]], axis=1)
            h, out, idx = np.take_along_axis(h, top[..., None], 1), _gather(out, top), idx[rows, top]
        if layer_i == 0:  # layer-0 K, V are exact: only the tokens carried forward count
            computed[0, rows, idx] = True
        if idx.shape[1] == 0:
            break
        h = finish(layer, h, out, config)[0]
    return Blended(kv, computed, scores)


def _first_score(first: str, q, kv: KV, idx, out, chunk, rng) -> np.ndarray:
    """The layer-0 ranking of all tokens."""
    if first == "random":
        return (rng or np.random.default_rng(0)).random(idx.shape)
    if first == "prefix":
        return (chunk[idx] > 0).astype(float)
    same_chunk = chunk[None, :] == chunk[:, None]  # [N, N]
    allowed = (np.arange(len(chunk))[None, None, :] <= idx[:, :, None]) & same_chunk[idx]
    out_local, _ = attend(q, kv.k[0], kv.v[0], allowed)
    return np.sum((merge_heads(out) - merge_heads(out_local)) ** 2, axis=-1)


def blend(
    model: Model, tokens: np.ndarray, chunk_len: int, ratio: float, variant: str = "paper", reused: KV | None = None
) -> Blended:
    """CacheBlend over documents ``tokens`` [D, N] with recompute ratio ``ratio``."""
    check_ratio(ratio)
    require(
        variant in VARIANTS,
        f"unknown selection variant '{variant}'; choose one of {', '.join(VARIANTS)}",
        field="variant",
    )
    var = VARIANTS[variant]
    reused = chunk_kv(model, tokens, chunk_len) if reused is None else reused
    keep = keep_schedule(var, ratio, tokens.shape[1], model.config.n_layers)
    return selective_recompute(model, tokens, reused, chunk_len, keep, "attention", var.metric)


def check_ratio(ratio: float) -> None:
    require(
        np.isfinite(ratio) and 0.0 <= ratio <= 1.0, f"recompute ratio must be in [0, 1], got {ratio}", field="ratio"
    )


# ---- answering the questions ----------------------------------------------------------------


def answer(model: Model, kv: KV, docs: Documents) -> np.ndarray:
    """Every record of every document asked over the cache ``kv``: the predicted tokens [D, R]."""
    return np.argmax(answer_logits(model, kv, docs), axis=-1)


def answer_logits(model: Model, kv: KV, docs: Documents) -> np.ndarray:
    """The logits [D, R, vocab] after every question ``? k`` over the cache ``kv``.

    Each question is ``? k`` at positions N, N+1. All R questions of a document share one pass:
    their ``?`` is the same token at the same place over the same cache, so it is computed once,
    and each key sees the cache, the ``?`` and itself, never another question.
    """
    config, (d_docs, n) = model.config, docs.tokens.shape
    r = docs.n_records
    q_tokens = np.concatenate([np.full((d_docs, 1), QUERY), docs.keys], axis=1)  # [D, 1 + R]
    positions = np.r_[n, np.full(r, n + 1)]
    own = np.eye(1 + r, dtype=bool)
    own[:, 0] = True
    allowed = np.concatenate([np.ones((1 + r, n), dtype=bool), own], axis=1)
    h = model.params["embed"][q_tokens]
    for layer_i in range(config.n_layers):
        layer = model.layer(layer_i)
        _, _, q, k, v = qkv(layer, h, positions, config)
        out, _ = attend(
            q, np.concatenate([kv.k[layer_i], k], axis=2), np.concatenate([kv.v[layer_i], v], axis=2), allowed
        )
        h = finish(layer, h, out, config)[0]
    return unembed(model, h[:, 1:])[0]


# ---- evaluation over many documents ---------------------------------------------------------


@dataclass
class Setup:
    """Documents and their two reference caches, computed once per (documents, chunk length)."""

    docs: Documents
    chunk_len: int
    full: KV
    reused: KV

    @property
    def cut(self) -> np.ndarray:
        return cut_records(self.docs.n_records, self.chunk_len)


def setup(model: Model, docs: Documents, chunk_len: int, full: KV | None = None) -> Setup:
    """Both reference caches of ``docs`` (pass ``full`` to reuse a full prefill of the same docs)."""
    check_chunk_len(chunk_len)
    full = full_prefill_kv(model, docs.tokens) if full is None else full
    return Setup(docs, chunk_len, full, chunk_kv(model, docs.tokens, chunk_len))


def method_kv(
    model: Model, s: Setup, method: str, ratio: float = 0.0, variant: str = "paper", seed: int = 0
) -> tuple[KV, float, Blended | None]:
    """The cache a method answers from, the share of document tokens it recomputes, and its selection."""
    check_ratio(ratio)
    require(method in METHODS, f"unknown method '{method}'; choose from {', '.join(METHODS)}", field="method")
    n, layers = s.docs.tokens.shape[1], model.config.n_layers
    if method == "full_prefill":
        return s.full, 1.0, None
    if method == "full_reuse":
        return s.reused, 0.0, None
    if method == "prefix":
        keep = [max(0, n - s.chunk_len)] + [None] * (layers - 1)
        res = selective_recompute(model, s.docs.tokens, s.reused, s.chunk_len, keep, first="prefix")
        return res.kv, keep[0] / n, res
    if method == "random":
        keep = [n_tokens(ratio, n)] + [None] * (layers - 1)
        res = selective_recompute(
            model, s.docs.tokens, s.reused, s.chunk_len, keep, first="random", rng=np.random.default_rng(seed)
        )
        return res.kv, ratio, res
    res = blend(model, s.docs.tokens, s.chunk_len, ratio, variant, reused=s.reused)
    return res.kv, ratio, res


def accuracy_row(correct: np.ndarray, cut: np.ndarray) -> dict[str, float]:
    """Answer accuracy on cut records, uncut records and all records (NaN where there are none)."""

    def mean(x: np.ndarray) -> float:
        return float(np.mean(x)) if x.size else float("nan")

    return {"acc_cut": mean(correct[:, cut]), "acc_uncut": mean(correct[:, ~cut]), "acc_all": mean(correct)}


def evaluate(
    model: Model,
    s: Setup,
    ratios: tuple[float, ...],
    methods: tuple[str, ...] = METHODS,
    variant: str = "paper",
    seed: int = 0,
):
    """Accuracy of each method; CacheBlend and random once per ratio, the others once.

    Returns a DataFrame with columns ``method, ratio, acc_cut, acc_uncut, acc_all``; ``ratio``
    is the share of document tokens the method recomputes (1 for full prefill, 0 for full
    reuse, (N - chunk)/N for the prefix cache).
    """
    import pandas as pd

    for ratio in ratios:
        check_ratio(ratio)
    rows = []
    for method in methods:
        for ratio in ratios if method in ("cacheblend", "random") else (0.0,):
            kv, used, _ = method_kv(model, s, method, ratio, variant, seed)
            correct = answer(model, kv, s.docs) == s.docs.values
            rows.append({"method": method, "ratio": used, **accuracy_row(correct, s.cut)})
    return pd.DataFrame(rows, columns=["method", "ratio", "acc_cut", "acc_uncut", "acc_all"])


# ---- deviation statistics (the paper's two insights) ----------------------------------------


def kv_deviation(a: KV, b: KV) -> np.ndarray:
    """Per-token ||ΔK||² + ||ΔV||² between two caches, by layer: [L, D, N]."""
    return np.sum((a.k - b.k) ** 2, axis=(2, 4)) + np.sum((a.v - b.v) ** 2, axis=(2, 4))


def _ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x, axis=-1, kind="stable"), axis=-1, kind="stable").astype(float)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each row of x with the same row of y (ties are rare floats)."""
    rx, ry = _ranks(x), _ranks(y)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    return np.sum(rx * ry, axis=-1) / np.sqrt(np.sum(rx * rx, axis=-1) * np.sum(ry * ry, axis=-1))


def top_share(dev: np.ndarray, fraction: float) -> np.ndarray:
    """Share of each row's total carried by its largest round(fraction · n) entries: [..., n] -> [...]
    (NaN where a row has no deviation at all)."""
    top = np.sort(dev, axis=-1)[..., ::-1][..., : n_tokens(fraction, dev.shape[-1])].sum(axis=-1)
    total = dev.sum(axis=-1)
    return np.where(total > 0, top / np.where(total > 0, total, 1.0), np.nan)


@dataclass
class DeviationStats:
    """The two insights of §4 measured layer by layer on full reuse, as the lecture notes define
    the deviation (the concatenated KV against the full-prefill KV, ||ΔK||²+||ΔV||² per token,
    every document token counted). Layer 0 is left out: its cached K, V are exact, so its
    deviation is float rounding.

    ``layer_share`` {layer: share of that layer's deviation carried by the top ``top_fraction`` of
    the document's tokens, mean over documents}; ``top_share`` the mean over those layers;
    ``start_share`` {layer: share carried by the tokens that start a chunk after the first};
    ``spearman`` {(l, l+1): mean rank correlation over documents of per-token deviation, tokens
    after the first chunk (inside it every layer's deviation is exactly zero, and those ties
    would count as agreement)}; ``catch_first``/``catch_final``: share of cut-record values in
    CacheBlend's first selection and in its last layer's set."""

    top_fraction: float
    layer_share: dict[int, float]
    start_share: dict[int, float]
    spearman: dict[tuple[int, int], float]
    catch_first: float
    catch_final: float

    @property
    def top_share(self) -> float:
        return float(np.mean(list(self.layer_share.values())))


def deviation_stats(
    model: Model,
    s: Setup,
    ratio: float,
    variant: str = "paper",
    top_fraction: float = 0.15,
    blended: Blended | None = None,
) -> DeviationStats:
    """The two insights of §4 measured on full reuse, and what CacheBlend's selection catches
    (pass ``blended`` if CacheBlend already ran on ``s`` with this ratio and variant)."""
    dev = kv_deviation(s.reused, s.full).astype(np.float64)  # [L, D, N]
    n_layers, n = dev.shape[0], dev.shape[2]
    layers = range(1, n_layers)
    starts = np.zeros(n, dtype=bool)
    starts[s.chunk_len :: s.chunk_len] = True
    layer_share = {i: float(np.nanmean(top_share(dev[i], top_fraction))) for i in layers}
    start_share = {i: float(dev[i][:, starts].sum() / max(dev[i].sum(), 1e-30)) for i in layers}
    later = slice(min(s.chunk_len, n - 1), n)
    spearman = {
        (i, i + 1): float(np.nanmean(spearman_rows(dev[i, :, later], dev[i + 1, :, later])))
        for i in range(1, n_layers - 1)
    }
    res = blend(model, s.docs.tokens, s.chunk_len, ratio, variant, reused=s.reused) if blended is None else blended
    values = 2 * np.flatnonzero(s.cut) + 1
    first = res.computed[VARIANTS[variant].first_rank_layer + 1] if n_layers > 1 else res.computed[0]
    catch = (
        float(np.mean(first[:, values])) if values.size else float("nan"),
        float(np.mean(res.computed[-1][:, values])) if values.size else float("nan"),
    )
    return DeviationStats(top_fraction, layer_share, start_share, spearman, *catch)


# ---- the loading controller (§5.1) ----------------------------------------------------------

R_MIN = 0.15  # the paper's quality floor r*

CONTROLLER_MFU = 0.6  # calibration: fits the paper's per-layer examples (7B: 3 ms for 15%; 70B on 2×A40: ~7 ms)


@dataclass(frozen=True)
class ServingModel:
    """A served model, for the controller: its KV layout and FLOPs (``kvviz.common.hardware``) and the GPUs
    its prefill runs on."""

    name: str
    model: hw.ModelSpec
    compute: hw.Compute

    @property
    def n_layers(self) -> int:
        return self.model.layers

    def kv_bytes_per_token_layer(self) -> float:
        return hw.kv_bytes_per_token_layer(self.model)

    def prefill_layer_seconds(self, tokens: int) -> float:
        """One layer's share of the paper-GPU prefill of ``tokens`` tokens."""
        return hw.prefill_layer_seconds(self.model, self.compute, tokens)


SERVING_MODELS = {
    "7B MHA": ServingModel(
        "LLaMA-7B (MHA, 32 KV heads) on 1×A40", hw.model("llama-2-7b"), hw.Compute(hw.gpu("a40"), CONTROLLER_MFU, 1)
    ),
    "70B GQA": ServingModel(
        "LLaMA-70B (GQA, 8 KV heads) on 2×A40", hw.model("llama-3.1-70b"), hw.Compute(hw.gpu("a40"), CONTROLLER_MFU, 2)
    ),
}
DEVICES_GBPS = {"NVMe SSD (4.8 GB/s)": 4.8, "CPU DRAM over PCIe 4 (25 GB/s)": 25.0, "10 Gb/s network": 1.25}


@dataclass(frozen=True)
class ControllerResult:
    """Per-layer times (s), the ratio the controller picks, and TTFT with and without CacheBlend."""

    load: float
    prefill: float
    ratio: float
    ttft_blend: float
    ttft_full: float
    reuse_pays: bool


def plan(load: float, prefill: float, n_layers: int, r_min: float = R_MIN) -> ControllerResult:
    """The controller's choice from per-layer load and prefill times (seconds).

    Pick r so recompute hides under loading (r·T_prefill ≈ T_load), never below ``r_min``.
    Loading layer l+1 overlaps recomputing layer l, so each layer costs max(T_load, r·T_prefill).
    When loading a layer is slower than prefilling it, reuse cannot pay: full prefill is faster.
    """
    check_ratio(r_min)
    ratio = min(1.0, max(r_min, load / prefill))
    full = n_layers * prefill
    blended = n_layers * max(load, ratio * prefill)
    return ControllerResult(load, prefill, ratio, min(blended, full), full, blended < full)


def loading_controller(
    model: ServingModel, tokens: int, bandwidth_gbps: float, r_min: float = R_MIN
) -> ControllerResult:
    """The controller for a served model reading ``tokens`` tokens of KV at ``bandwidth_gbps`` GB/s."""
    require(tokens >= 1, f"context length must be at least 1 token, got {tokens}", field="tokens")
    require(bandwidth_gbps > 0, f"bandwidth must be positive, got {bandwidth_gbps}", field="bandwidth")
    load = model.kv_bytes_per_token_layer() * tokens / (bandwidth_gbps * 1e9)
    return plan(load, model.prefill_layer_seconds(tokens), model.n_layers, r_min)


# ---- one document, for the page -------------------------------------------------------------


@dataclass
class DocumentView:
    """One document under CacheBlend: token texts, kinds, what each layer recomputed, the
    deviation scores, each method's answers (the predicted value's text at each value's
    position, None at keys) and the KV deviation from full prefill by layer under full reuse
    and after CacheBlend, [L, N]."""

    texts: list[str]
    is_value: np.ndarray
    cut_value: np.ndarray
    computed: np.ndarray
    scores: np.ndarray
    answers: dict[str, list[str | None]]
    dev_reuse: np.ndarray
    dev_blend: np.ndarray


def inspect_document(
    model: Model, docs: Documents, chunk_len: int, ratio: float, variant: str = "paper", seed: int = 0
) -> DocumentView:
    """Everything the token strip and the deviation heatmap show, for the first of ``docs``."""
    from kvviz.cacheblend.record_world import is_value, token_text

    s = setup(model, Documents(docs.tokens[:1], docs.keys[:1], docs.values[:1]), chunk_len)
    tokens = s.docs.tokens[0]
    n = len(tokens)
    answers, blended = {}, None
    for method, label in (("full_reuse", "full reuse"), ("cacheblend", "CacheBlend"), ("random", "random")):
        kv, _, res = method_kv(model, s, method, ratio, variant, seed)
        blended = res if method == "cacheblend" else blended
        said = [None] * n
        said[1::2] = [token_text(int(t)) for t in answer(model, kv, s.docs)[0]]
        answers[label] = said
    cut_value = np.zeros(n, dtype=bool)
    cut_value[1::2] = s.cut
    return DocumentView(
        [token_text(int(t)) for t in tokens],
        is_value(tokens),
        cut_value,
        blended.computed[:, 0],
        blended.scores[:, 0],
        answers,
        kv_deviation(s.reused, s.full)[:, 0],
        kv_deviation(blended.kv, s.full)[:, 0],
    )


# ---- the lecture notes' setting -------------------------------------------------------------

LECTURE = {"chunk_len": 5, "ratio": 0.2, "variant": "paper", "short_chunk": 3}


def lecture_numbers(model: Model, docs: Documents) -> dict[str, float]:
    """This run's values of the numbers lecture 27 §5 reports (chunk length 5, r = 20%)."""
    s = setup(model, docs, LECTURE["chunk_len"])
    r, var = LECTURE["ratio"], LECTURE["variant"]
    runs = {m: method_kv(model, s, m, r, var) for m in ("full_prefill", "full_reuse", "cacheblend", "random")}
    acc = {m: accuracy_row(answer(model, kv, docs) == docs.values, s.cut) for m, (kv, _, _) in runs.items()}
    short = setup(model, docs, LECTURE["short_chunk"], full=s.full)
    short_acc = accuracy_row(
        answer(model, method_kv(model, short, "cacheblend", r, var)[0], docs) == docs.values, short.cut
    )
    stats = deviation_stats(model, s, r, var, blended=runs["cacheblend"][2])
    pairs = list(stats.spearman.values())
    return {
        "full_prefill_all": acc["full_prefill"]["acc_all"],
        "full_reuse_cut": acc["full_reuse"]["acc_cut"],
        "full_reuse_uncut": acc["full_reuse"]["acc_uncut"],
        "cacheblend_cut": acc["cacheblend"]["acc_cut"],
        "random_cut": acc["random"]["acc_cut"],
        "short_cacheblend_cut": short_acc["acc_cut"],
        "top_share": stats.top_share,
        "top_share_min": min(stats.layer_share.values()),
        "top_share_max": max(stats.layer_share.values()),
        "start_share_first": stats.start_share[1],
        "start_share_last": stats.start_share[max(stats.start_share)],
        "spearman_min": min(pairs),
        "spearman_max": max(pairs),
        "catch_first": stats.catch_first,
    }
