"""Train the record-world model in numpy: a hand-written backward pass and Adam.

``python -m kvviz.cacheblend.train`` reproduces the shipped ``model.WEIGHTS`` (same seed, same
recipe, same numbers up to floating-point summation order). The loss is cross-entropy on what
can be predicted: the answers, and values whose key already appeared in the document (training
documents may repeat records; the evaluation documents never do). Everything else is random.
The loss stays near the level of guessing among the values in sight, then drops suddenly when
the induction head forms (lecture 27 §0.4: near step 5,000 of 12,000 in the lecture's run).

The backward pass mirrors ``kvviz.cacheblend.model.forward`` step by step, from the intermediates it
records; ``tests/cacheblend/test_model.py`` checks it against finite differences.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

# Tiny matrices: one BLAS thread is several times faster than two fighting over a busy machine.
# (Effective only when this module is the entry point, before anything imports numpy.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from kvviz.cacheblend.model import (
    INITS,
    WEIGHTS,
    Config,
    LayerRecord,
    Model,
    forward,
    init_params,
    merge_heads,
    rope,
    save_model,
    split_heads,
)
from kvviz.cacheblend.record_world import N_RECORDS, sample_documents, training_batch, with_questions


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the shipped weights: the lecture's record world (12 records a
    document, 12,000 steps; lecture 27 §0.4) with this trainer's batch, schedule and initialisation.

    Each step draws its documents' record count uniformly from ``min_records``..12 (12: every
    document has 12 records, as the lecture's and the evaluation's do), and a share ``repeat_share``
    of its documents repeat records: every repeated value is one more induction target, so the
    induction head forms far sooner than from the answers alone. ``questions`` is ``distinct``
    (a document's questions ask different records) or ``independent`` (each asks any record).
    ``init`` names how ``init_params`` draws the starting weights; ``beta2`` is Adam's second
    moment decay (PyTorch's default is 0.999).
    """

    steps: int = 12_000
    batch: int = 32
    n_questions: int = 4
    min_records: int = 12
    repeat_share: float = 0.5
    questions: str = "distinct"
    lr: float = 3e-3
    warmup: int = 300
    min_lr_frac: float = 0.05
    clip: float = 1.0
    weight_decay: float = 0.0
    beta2: float = 0.98
    init: str = "fan_in"
    seed: int = 0


QUESTIONS = ("distinct", "independent")
"""How a document's questions pick their records (``Recipe.questions``)."""


# ---- backward -------------------------------------------------------------------------------


def rmsnorm_backward(dy: np.ndarray, x: np.ndarray, r: np.ndarray, gain: np.ndarray):
    """Gradients of y = x · r · gain (r = 1/rms(x)) with respect to x and gain."""
    dxhat = dy * gain
    dx = r * dxhat - r**3 * x * np.mean(dxhat * x, axis=-1, keepdims=True)
    return dx, np.sum(dy * x * r, axis=tuple(range(dy.ndim - 1)))


def _outer(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Σ over batch and tokens of x^T dy, for a weight used as ``x @ W``."""
    return x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])


def _block_backward(
    layer: dict, rec: LayerRecord, dh: np.ndarray, positions: np.ndarray, config: Config, grads: dict, prefix: str
) -> np.ndarray:
    """Backprop one block: dh is the gradient at the block's output; returns it at its input."""
    # MLP: h_out = h_mid + (silu(gate) · up) @ w_down
    sig = 1.0 / (1.0 + np.exp(-rec.gate))
    z = rec.gate * sig * rec.up
    grads[prefix + "w_down"] = _outer(z, dh)
    dz = dh @ layer["w_down"].T
    dgate = dz * rec.up * sig * (1.0 + rec.gate * (1.0 - sig))
    dup = dz * rec.gate * sig
    grads[prefix + "w_gate"], grads[prefix + "w_up"] = _outer(rec.m, dgate), _outer(rec.m, dup)
    dm = dgate @ layer["w_gate"].T + dup @ layer["w_up"].T
    dx, grads[prefix + "mlp_norm"] = rmsnorm_backward(dm, rec.h_mid, rec.r_mlp, layer["mlp_norm"])
    dh_mid = dh + dx
    # attention: h_mid = h_in + merge(attn · v) @ wo
    grads[prefix + "wo"] = _outer(rec.o, dh_mid)
    do = split_heads(dh_mid @ layer["wo"].T, config.n_heads)  # [B, H, T, hd]
    dv = rec.attn.swapaxes(-1, -2) @ do
    dweights = do @ np.ascontiguousarray(rec.v.swapaxes(-1, -2))
    dscores = rec.attn * (dweights - np.sum(dweights * rec.attn, axis=-1, keepdims=True))
    dscores /= np.sqrt(rec.q.shape[-1]).astype(dscores.dtype)
    dq = rope(dscores @ rec.k, -positions, config.rope_base)
    dk = rope(dscores.swapaxes(-1, -2) @ rec.q, -positions, config.rope_base)
    dq, dk, dv = merge_heads(dq), merge_heads(dk), merge_heads(dv)
    grads[prefix + "wq"], grads[prefix + "wk"], grads[prefix + "wv"] = (
        _outer(rec.a, dq),
        _outer(rec.a, dk),
        _outer(rec.a, dv),
    )
    da = dq @ layer["wq"].T + dk @ layer["wk"].T + dv @ layer["wv"].T
    dx, grads[prefix + "attn_norm"] = rmsnorm_backward(da, rec.h_in, rec.r_attn, layer["attn_norm"])
    return dh_mid + dx


def loss_and_grads(model: Model, tokens: np.ndarray, targets: np.ndarray) -> tuple[float, dict[str, np.ndarray], float]:
    """Mean cross-entropy over the positions with a target (``targets >= 0``), its gradient for
    every parameter, and the accuracy there."""
    run = forward(model, tokens, record=True)
    mask = targets >= 0
    logits = run.logits[mask]  # [M, V]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=-1, keepdims=True)
    rows, wanted = np.arange(len(logits)), targets[mask]
    loss = float(-np.mean(np.log(probs[rows, wanted] + 1e-30)))
    accuracy = float(np.mean(np.argmax(logits, axis=-1) == wanted))

    params, grads = model.params, {}
    dlogits = np.zeros_like(run.logits)
    probs[rows, wanted] -= 1.0
    dlogits[mask] = probs / len(logits)
    grads["head"] = _outer(run.h_out * run.r_final * params["final_norm"], dlogits)
    dh, grads["final_norm"] = rmsnorm_backward(dlogits @ params["head"].T, run.h_out, run.r_final, params["final_norm"])
    positions = np.arange(tokens.shape[1])
    for i in reversed(range(model.config.n_layers)):
        dh = _block_backward(model.layer(i), run.layers[i], dh, positions, model.config, grads, f"l{i}.")
    grads["embed"] = np.zeros_like(params["embed"])
    np.add.at(grads["embed"], tokens.reshape(-1), dh.reshape(-1, dh.shape[-1]))
    return loss, grads, accuracy


# ---- optimiser and loop ---------------------------------------------------------------------


def learning_rate(step: int, recipe: Recipe) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_frac`` of the peak."""
    if step < recipe.warmup:
        return recipe.lr * (step + 1) / recipe.warmup
    progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return recipe.lr * (recipe.min_lr_frac + (1 - recipe.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


class Adam:
    """Adam (Kingma & Ba 2015) with bias correction, global-norm clipping and decoupled decay."""

    def __init__(self, params: dict[str, np.ndarray], beta1=0.9, beta2=0.98, eps=1e-8):
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.beta1, self.beta2, self.eps, self.t = beta1, beta2, eps, 0

    def step(self, params: dict, grads: dict, lr: float, clip: float, weight_decay: float) -> float:
        norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
        scale = min(1.0, clip / (norm + 1e-12))
        self.t += 1
        c1, c2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        for name, g in grads.items():
            g = g * scale
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * g
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * g * g
            update = (self.m[name] / c1) / (np.sqrt(self.v[name] / c2) + self.eps)
            decay = weight_decay * params[name] if params[name].ndim == 2 else 0.0
            params[name] -= (lr * (update + decay)).astype(params[name].dtype)
        return norm


def answer_accuracy(model: Model, n_docs: int = 500, seed: int = 12345) -> float:
    """Full-prefill accuracy on fresh documents, every record asked once."""
    docs = sample_documents(n_docs, seed)
    correct = 0
    for j in range(docs.n_records):
        tokens, answer_at, answers = with_questions(docs, np.full((docs.n, 1), j))
        logits = forward(model, tokens).logits[:, answer_at[0]]
        correct += int(np.sum(np.argmax(logits, axis=-1) == answers[:, 0]))
    return correct / (docs.n * docs.n_records)


def train(
    recipe: Recipe, config: Config = Config(), log=print, checkpoint: Path | None = None, checkpoint_every: int = 1000
) -> Model:
    """Train from scratch; ``log`` gets a progress line every 100 steps."""
    model = Model(config, init_params(config, recipe.seed, recipe.init))
    rng = np.random.default_rng(recipe.seed + 1)
    adam = Adam(model.params, beta2=recipe.beta2)
    losses = np.zeros(recipe.steps, dtype=np.float32)
    start, smooth = time.perf_counter(), None
    for step in range(recipe.steps):
        n_records = int(rng.integers(recipe.min_records, N_RECORDS + 1))
        distinct = recipe.questions == "distinct"
        n_questions = min(recipe.n_questions, n_records) if distinct else recipe.n_questions
        tokens, targets = training_batch(rng, recipe.batch, n_questions, n_records, recipe.repeat_share, distinct)
        loss, grads, acc = loss_and_grads(model, tokens, targets)
        adam.step(model.params, grads, learning_rate(step, recipe), recipe.clip, recipe.weight_decay)
        losses[step] = loss
        smooth = loss if smooth is None else 0.98 * smooth + 0.02 * loss
        if step % 100 == 0 or step == recipe.steps - 1:
            log(
                f"step {step:6d}  loss {smooth:.4f}  batch-acc {acc:.2f}  lr {learning_rate(step, recipe):.2e}  "
                f"{time.perf_counter() - start:7.1f} s"
            )
        if checkpoint is not None and step and step % checkpoint_every == 0:
            model.loss = losses[: step + 1]
            save_model(model, checkpoint)
    model.loss = losses
    model.info = {"recipe": asdict(recipe), "train_seconds": round(time.perf_counter() - start, 1)}
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvviz.cacheblend.train", description=__doc__.split("\n")[0])
    defaults = Recipe()
    for name, value in asdict(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--out", type=Path, default=WEIGHTS, help=f"where to write the weights (default {WEIGHTS})")
    parser.add_argument("--checkpoint", type=Path, default=None, help="also save a checkpoint here every 1000 steps")
    args = parser.parse_args(argv)
    recipe = Recipe(**{k: getattr(args, k) for k in asdict(defaults)})
    if recipe.steps < 1 or recipe.batch < 1 or recipe.lr <= 0:
        print("steps, batch and lr must be positive", file=sys.stderr)
        return 2
    for name, allowed in (("questions", QUESTIONS), ("init", INITS)):
        if getattr(recipe, name) not in allowed:
            print(f"--{name} must be one of {', '.join(allowed)}", file=sys.stderr)
            return 2
    model = train(recipe, log=lambda line: print(line, flush=True), checkpoint=args.checkpoint)
    model.info["full_prefill_accuracy"] = answer_accuracy(model)
    print(
        f"full-prefill accuracy on 500 fresh documents x 12 questions: {model.info['full_prefill_accuracy']:.4f}",
        flush=True,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, args.out)
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
