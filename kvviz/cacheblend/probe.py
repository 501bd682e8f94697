"""Where full reuse's KV deviation sits: ``python -m kvviz.cacheblend.probe``.

Prints, for the record-world model and chunked reuse, the per-token deviation ||ΔK||²+||ΔV||²
(concatenated cache against full prefill) of one document by layer, then over many documents:
the mean deviation by position inside a chunk (tokens after the first chunk), each layer's
share carried by its top 15% of tokens and by the tokens that start a chunk, and how much of
the keys' and the values' full-prefill attention crosses a chunk boundary (what chunked
precompute loses).
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


def attention_reach(model, tokens: np.ndarray, chunk_len: int) -> np.ndarray:
    """Full prefill's attention from the tokens after the first chunk, per layer, for keys and for
    values: [L, 4] = (keys' mass on earlier chunks, keys' largest weight, the same for values),
    means over documents, heads and tokens. What chunked precompute takes away from them."""
    n = tokens.shape[1]
    place = np.arange(n)
    chunk = place // chunk_len
    earlier = chunk[None, :] < chunk[:, None]
    keys, values = (chunk > 0) & (place % 2 == 0), (chunk > 0) & (place % 2 == 1)
    rows = []
    for rec in forward(model, tokens, record=True).layers:
        cross, peak = (rec.attn * earlier).sum(-1), rec.attn.max(-1)
        rows.append(
            [cross[:, :, keys].mean(), peak[:, :, keys].mean(), cross[:, :, values].mean(), peak[:, :, values].mean()]
        )
    return np.array(rows)


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
    place = np.arange(docs.tokens.shape[1])
    inside = (place >= chunk_len) & (place % chunk_len != 0)
    keys, values = inside & (place % 2 == 0), inside & (place % 2 == 1)
    out("\nmean deviation of the tokens after the first chunk that do not start one")
    out("layer   keys  values")
    for layer in stats.layer_share:
        out(f"{layer:5d}  {dev[layer][:, keys].mean():5.1f}  {dev[layer][:, values].mean():6.1f}")
    out("\nfull-prefill attention from tokens after the first chunk (mean over heads)")
    out("layer  keys: on earlier chunks, largest weight  values: on earlier chunks, largest weight")
    for layer, (kc, kp, vc, vp) in enumerate(attention_reach(model, docs.tokens, chunk_len)):
        out(f"{layer:5d}  {kc:22.2f} {kp:15.2f}  {vc:24.2f} {vp:15.2f}")


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
