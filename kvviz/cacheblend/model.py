"""A tiny LLaMA in numpy: the record-world model of lecture 27 §0.4.

Token embedding, then ``n_layers`` pre-norm blocks of RMSNorm -> multi-head causal attention
with RoPE -> residual, RMSNorm -> SwiGLU MLP -> residual, a final RMSNorm and a separate
unembedding (Touvron et al. 2023, "LLaMA", §2.2; RoPE: Su et al. 2021, RoFormer §3.4.2,
in the "rotate half" layout LLaMA implementations use). Sizes: 4 layers, d = 64, 4 heads.

``forward`` is written once and serves inference, training (``kvviz.cacheblend.train``
differentiates it by hand from the intermediates it records) and CacheBlend (``kvviz.cacheblend.blend``
reuses its pieces ``qkv``, ``attend`` and ``finish`` on subsets of tokens).

Public API for other pages: ``load_model(path=None) -> Model`` and
``document_kv(model, tokens) -> [layers, 2, tokens, channels]`` (K after RoPE, V).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from kvviz.cacheblend.record_world import VOCAB
from kvviz.common.errors import InputError

WEIGHTS = Path(__file__).resolve().parent / "data" / "record_world.npz"
"""The shipped weights: package data, so an installed ``kvviz`` finds them as a checkout does."""
RETRAIN = "python -m kvviz.cacheblend.train"
LAYER_PARAMS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")


@dataclass(frozen=True)
class Config:
    vocab: int = VOCAB
    d_model: int = 64
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 128
    rope_base: float = 10000.0
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


@dataclass
class Model:
    """The configuration, the parameters by name (``embed``, ``l{i}.wq``, ..., ``head``), and
    what training recorded (``info``: recipe, timings; ``loss``: the loss curve)."""

    config: Config
    params: dict[str, np.ndarray]
    info: dict = field(default_factory=dict)
    loss: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def layer(self, i: int) -> dict[str, np.ndarray]:
        return {name: self.params[f"l{i}.{name}"] for name in LAYER_PARAMS}


@dataclass
class LayerRecord:
    """What one block computed, for every token: inputs and outputs of each step.

    ``q``, ``k`` (after RoPE), ``v`` are [B, heads, T, head_dim]; ``attn`` is [B, heads, T_query, T_key];
    ``h_in``/``h_mid`` are the residual stream before the attention and before the MLP. The rest is what backprop needs.
    """

    h_in: np.ndarray
    r_attn: np.ndarray
    a: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    attn: np.ndarray
    o: np.ndarray
    h_mid: np.ndarray
    r_mlp: np.ndarray
    m: np.ndarray
    gate: np.ndarray
    up: np.ndarray


@dataclass
class Forward:
    """``logits`` [B, T, vocab]; with ``record=True`` also every layer and the final norm."""

    logits: np.ndarray
    layers: list[LayerRecord] = field(default_factory=list)
    h_out: np.ndarray | None = None
    r_final: np.ndarray | None = None


INITS = ("fan_in", "torch")
"""How ``init_params`` draws the weights (``kvviz.cacheblend.train.Recipe.init``)."""


def init_params(config: Config, seed: int = 0, init: str = "fan_in") -> dict[str, np.ndarray]:
    """Random starting weights with unit norm gains and unit-variance embeddings.

    ``fan_in``: normal, std 1/sqrt(fan_in), output projections also divided by sqrt(2·layers).
    At d = 64 the GPT-2 habit of std 0.02 makes attention scores start near zero; in our runs the
    induction head had not formed after 1,000-3,000 steps, against ~350 with this initialisation.
    ``torch``: PyTorch's defaults for a plain script (``nn.Linear``: uniform in
    ±1/sqrt(fan_in), no output scaling; ``nn.Embedding``: N(0, 1)), in case the lecture's
    trainer used them.
    """
    rng = np.random.default_rng(seed)
    d, f = config.d_model, config.d_ff
    out = 1 / np.sqrt(2 * config.n_layers) if init == "fan_in" else 1.0

    def matrix(fan_in: int, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
        if init == "torch":
            return rng.uniform(-scale / np.sqrt(fan_in), scale / np.sqrt(fan_in), shape)
        return rng.normal(0, scale / np.sqrt(fan_in), shape)

    params = {"embed": rng.normal(0, 1.0, (config.vocab, d))}
    for i in range(config.n_layers):
        params |= {
            f"l{i}.attn_norm": np.ones(d),
            f"l{i}.mlp_norm": np.ones(d),
            f"l{i}.wq": matrix(d, (d, d)),
            f"l{i}.wk": matrix(d, (d, d)),
            f"l{i}.wv": matrix(d, (d, d)),
            f"l{i}.wo": matrix(d, (d, d), out),
            f"l{i}.w_gate": matrix(d, (d, f)),
            f"l{i}.w_up": matrix(d, (d, f)),
            f"l{i}.w_down": matrix(f, (f, d), out),
        }
    params |= {"final_norm": np.ones(d), "head": matrix(d, (d, config.vocab))}
    return {k: v.astype(np.float32) for k, v in params.items()}


# ---- the pieces -----------------------------------------------------------------------------


def rmsnorm(x: np.ndarray, gain: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """x / rms(x) · gain, and the factor 1/rms(x) [..., 1] (backprop needs it)."""
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x * r * gain, r


def rope(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """Rotate each head's channel pairs (i, i + hd/2) by position · base^(-2i/hd).

    x: [B, H, T, hd]; positions: [T] or [B, T]. Rotations compose, so ``rope(rope(k, p), s)``
    is ``rope(k, p + s)``: this is how a cached chunk's K moves to a new offset (CacheBlend
    Appendix A), and ``rope(x, -p)`` undoes it (used by backprop).
    """
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half, dtype=np.float64) / half)
    positions = np.asarray(positions, dtype=np.float64)
    angle = positions[..., None] * inv_freq  # [(B,) T, half]
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    # "rotate half" as two whole-row products, x·[cos, cos] + [x2, x1]·[-sin, sin], on
    # contiguous rows so numpy loops over T·hd values at a time rather than hd/2.
    cos2, sin2 = np.concatenate([cos, cos], axis=-1), np.concatenate([-sin, sin], axis=-1)
    if positions.ndim == 2:
        cos2, sin2 = cos2[:, None], sin2[:, None]  # [B, 1, T, hd]
    out = np.ascontiguousarray(x) * cos2
    out += np.concatenate([x[..., half:], x[..., :half]], axis=-1) * sin2
    return out


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """[B, T, d] -> [B, H, T, hd]."""
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """[B, H, T, hd] -> [B, T, d]."""
    b, h, t, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * hd)


def causal_mask(n_query: int, n_key: int | None = None) -> np.ndarray:
    """[Tq, Tk] booleans: query i may see key j when j <= i (queries are the last Tq keys)."""
    n_key = n_query if n_key is None else n_key
    return np.arange(n_key)[None, :] <= np.arange(n_key - n_query, n_key)[:, None]


def qkv(layer: dict, h: np.ndarray, positions: np.ndarray, config: Config):
    """The attention inputs of block ``layer`` for residual ``h`` [B, T, d] at ``positions``.

    Returns (a, r, q, k, v): the normed input, its 1/rms, and q, k (after RoPE), v [B, H, T, hd].
    """
    a, r = rmsnorm(h, layer["attn_norm"], config.eps)
    q = rope(split_heads(a @ layer["wq"], config.n_heads), positions, config.rope_base)
    k = rope(split_heads(a @ layer["wk"], config.n_heads), positions, config.rope_base)
    v = split_heads(a @ layer["wv"], config.n_heads)
    return a, r, q, k, v


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax attention. q [B, H, Tq, hd], k, v [B, H, Tk, hd], allowed [(B,) Tq, Tk].

    Returns the output [B, H, Tq, hd] and the weights [B, H, Tq, Tk].
    """
    weights = q @ np.ascontiguousarray(k.swapaxes(-1, -2))  # numpy multiplies a transposed view slowly
    weights *= q.dtype.type(1.0 / np.sqrt(q.shape[-1]))
    weights += (
        np.where(allowed, 0.0, -np.inf).astype(q.dtype)[:, None]
        if allowed.ndim == 3
        else np.where(allowed, 0.0, -np.inf).astype(q.dtype)
    )
    weights -= weights.max(axis=-1, keepdims=True)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def finish(layer: dict, h: np.ndarray, attn_out: np.ndarray, config: Config):
    """The rest of a block after attention: output projection, residual, SwiGLU MLP, residual.

    Returns (h_out, o, h_mid, r, m, gate, up).
    """
    o = merge_heads(attn_out)
    h_mid = h + o @ layer["wo"]
    m, r = rmsnorm(h_mid, layer["mlp_norm"], config.eps)
    gate, up = m @ layer["w_gate"], m @ layer["w_up"]
    return h_mid + (silu(gate) * up) @ layer["w_down"], o, h_mid, r, m, gate, up


def unembed(model: Model, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Final RMSNorm and the unembedding: logits [..., vocab] and the norm's 1/rms."""
    hf, r = rmsnorm(h, model.params["final_norm"], model.config.eps)
    return hf @ model.params["head"], r


# ---- the forward pass -----------------------------------------------------------------------


def forward(
    model: Model,
    tokens: np.ndarray,
    positions: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    record: bool = False,
) -> Forward:
    """Run the model on ``tokens`` [B, T] (or [T]).

    ``positions`` default to 0..T-1 and ``allowed`` to the causal mask; a block-diagonal mask
    with per-chunk positions computes every chunk as if it were a prefix, in one call.
    """
    tokens = np.atleast_2d(np.asarray(tokens))
    n = tokens.shape[1]
    positions = np.arange(n) if positions is None else positions
    allowed = causal_mask(n) if allowed is None else allowed
    config = model.config
    h = model.params["embed"][tokens]  # [B, T, d]
    out = Forward(logits=np.zeros(0))
    for i in range(config.n_layers):
        layer = model.layer(i)
        a, r_attn, q, k, v = qkv(layer, h, positions, config)
        attn_out, weights = attend(q, k, v, allowed)
        h_next, o, h_mid, r_mlp, m, gate, up = finish(layer, h, attn_out, config)
        if record:
            out.layers.append(LayerRecord(h, r_attn, a, q, k, v, weights, o, h_mid, r_mlp, m, gate, up))
        h = h_next
    out.logits, r_final = unembed(model, h)
    if record:
        out.h_out, out.r_final = h, r_final
    return out


def document_kv(model: Model, tokens: np.ndarray) -> np.ndarray:
    """One document's KV cache under full prefill: [layers, 2, tokens, channels] (K after RoPE).

    ``channels`` = heads × head_dim = d_model; float32, 256 bytes per token per layer in FP16.
    """
    run = forward(model, np.asarray(tokens)[None, :], record=True)
    return np.stack([np.stack([merge_heads(rec.k)[0], merge_heads(rec.v)[0]]) for rec in run.layers])


# ---- weights on disk ------------------------------------------------------------------------


def save_model(model: Model, path: str | Path) -> None:
    """Write an ``.npz`` with the parameters, the config and training info as JSON, and the loss."""
    meta = json.dumps({"config": asdict(model.config), "info": model.info})
    np.savez_compressed(path, **model.params, __meta__=np.array(meta), __loss__=model.loss.astype(np.float32))


def load_model(path: str | Path | None = None) -> Model:
    """The trained record-world model (the shipped ``WEIGHTS`` unless ``path`` is given).

    A missing, corrupt or mismatched file raises ``InputError`` that says how to retrain; it names
    a file the caller gave, but not where the shipped one sits on the server.
    """
    what = "the shipped model weights file" if path is None else f"the model weights file {path}"
    path = Path(path) if path is not None else WEIGHTS
    fix = f"retrain it with `{RETRAIN}` (about 10 minutes), or reinstall kvviz"
    if not path.is_file():
        raise InputError(f"{what} is missing; {fix}", field="weights")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["__meta__"]))
            config = Config(**meta["config"])
            names = ["embed", "final_norm", "head"] + [
                f"l{i}.{p}" for i in range(config.n_layers) for p in LAYER_PARAMS
            ]
            params = {name: data[name].astype(np.float32) for name in names}
            loss = data["__loss__"] if "__loss__" in data.files else np.zeros(0)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"{what} is corrupt or not a kvviz model ({exc}); {fix}", field="weights") from None
    model = Model(config, params, meta.get("info", {}), np.asarray(loss, dtype=np.float32))
    _check_shapes(model, what, fix)
    return model


def _check_shapes(model: Model, what: str, fix: str) -> None:
    expected = init_params(model.config, seed=0)
    for name, value in expected.items():
        got = model.params[name]
        if got.shape != value.shape or not np.all(np.isfinite(got)):
            raise InputError(
                f"{what} has a bad '{name}' (shape {got.shape}, expected {value.shape}, or not finite); {fix}",
                field="weights",
            )
