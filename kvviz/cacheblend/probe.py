"""Where full reuse's KV deviation sits: ``python -m kvviz.cacheblend.probe``.

Prints, for the record-world model and chunked reuse, the per-token deviation ||ΔK||²+||ΔV||²
(concatenated cache against full prefill) of one document by layer, then over many documents:
the mean deviation by position inside a chunk (tokens after the first chunk), each layer's
share carried by its top 15% of tokens and by the tokens that start a chunk, and how much of
each layer's full-prefill attention crosses a chunk boundary (what chunked precompute loses).
This is the evidence behind the docs' account of why the deviation is, or is not, as
concentrated as the lecture notes report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from kvviz.cacheblend import blend
from kvviz.cacheblend.model import forward, load_model
from kvviz.cacheblend.record_world import sample_documents, token_text


def by_chunk_position(dev: np.ndarray, chunk_len: int) -> np.ndarray:
    """Mean deviation by position inside a chunk, tokens after the first chunk: [L, D, N] -> [L, chunk_len]."""
    n = dev.shape[-1]
    place = np.where(np.arange(n) >= chunk_len, np.arange(n) % chunk_len, -1)
    return np.stack([dev[..., place == p].mean(axis=(1, 2)) for p in range(chunk_len)], axis=1)


def cross_chunk_attention(model, tokens: np.ndarray, chunk_len: int) -> np.ndarray:
    """Per layer and head, the mean full-prefill attention mass a token after the first chunk
    puts on earlier chunks: [L, H]."""
    n = tokens.shape[1]
    chunk = np.arange(n) // chunk_len
    earlier = chunk[None, :] < chunk[:, None]
    run = forward(model, tokens, record=True)
    return np.stack([(rec.attn * earlier).sum(-1)[:, :, chunk > 0].mean(axis=(0, 2)) for rec in run.layers])


def report(weights: Path | None, chunk_len: int, n_docs: int, seed: int, out=print) -> None:
    model = load_model(weights)
    docs = sample_documents(n_docs, seed)
    s = blend.setup(model, docs, chunk_len)
    dev = blend.kv_deviation(s.reused, s.full).astype(np.float64)
    stats = blend.deviation_stats(model, s, blend.LECTURE["ratio"])
    out(f"one document (seed {seed}), per-token deviation by layer; | marks a chunk start")
    out(
        "        "
        + " ".join(
            f"{('|' if i % chunk_len == 0 else '') + token_text(int(t)):>6}" for i, t in enumerate(docs.tokens[0])
        )
    )
    for layer, row in enumerate(dev[:, 0]):
        out(f"layer {layer} " + " ".join(f"{x:6.1f}" for x in row))
    out(f"\n{n_docs} documents: mean deviation by position in chunk (tokens after the first chunk)")
    for layer, row in enumerate(by_chunk_position(dev, chunk_len)):
        out(f"layer {layer} " + " ".join(f"{x:8.2f}" for x in row))
    out("\nlayer  top 15% carry  chunk starts carry")
    for layer, share in stats.layer_share.items():
        out(f"{layer:5d}  {share:13.1%}  {stats.start_share[layer]:18.1%}")
    out("rank correlation, adjacent layers: " + ", ".join(f"{a}-{b} {r:.2f}" for (a, b), r in stats.spearman.items()))
    out("\nfull-prefill attention crossing a chunk boundary, per layer and head")
    for layer, row in enumerate(cross_chunk_attention(model, docs.tokens, chunk_len)):
        out(f"layer {layer} " + " ".join(f"{x:5.2f}" for x in row))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvviz.cacheblend.probe", description=__doc__.split("\n")[0])
    parser.add_argument("--weights", type=Path, default=None, help="weights (.npz); default: the shipped weights")
    parser.add_argument("--chunk-len", type=int, default=5)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    if args.chunk_len < 1 or not 1 <= args.docs <= 5000:
        print("--chunk-len must be at least 1 and --docs in 1..5000", file=sys.stderr)
        return 2
    report(args.weights, args.chunk_len, args.docs, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
