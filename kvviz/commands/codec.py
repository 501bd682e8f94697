"""``python -m kvviz codec``: CacheGen's encoder ablation on a synthetic KV."""

from __future__ import annotations

import argparse

from kvviz import args as A

NAME = "codec"
HELP = "Encode a synthetic KV with CacheGen's encoder, its ablations and the baselines; print the table."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rho", type=A.fraction, default=0.9, help="token-to-token correlation (default 0.9)")
    parser.add_argument("--layers", type=A.count, default=8)
    parser.add_argument("--tokens", type=A.count, default=1024)
    parser.add_argument("--channels", type=A.count, default=64, help="channels per layer for K and for V")
    parser.add_argument("--offset", type=A.non_negative, default=1.0, help="spread of per-channel offsets")
    parser.add_argument("--outliers", type=A.bounded_int(0, A.MAX_COUNT), default=2, help="outlier channels per layer")
    parser.add_argument("--group", type=A.count, default=10, help="anchor group size G (default 10)")
    parser.add_argument("--level", type=int, default=2, choices=range(5), help="0-4; 1-3 are the artifact's")
    parser.add_argument("--sensitivity", type=A.positive, default=4.0, help="first ÷ last layer error weight")
    parser.add_argument("--seed", type=A.seed, default=0)
    parser.add_argument("--source", choices=("synthetic", "model"), default="synthetic",
                        help="the synthetic KV, or the record-world model's KV with its answer accuracy")
    parser.add_argument("--documents", type=A.count, default=100, help="record-world documents (with --source model)")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz import budget
    from kvviz.cachegen import compare, model_kv
    from kvviz.cachegen.kv import SyntheticKV, locality, profile_context, synthetic_kv

    judge = None
    values = model_kv.kv_values(args.documents) if args.source == "model" else \
        args.layers * 2 * args.tokens * args.channels
    budget.check(compare.study_cost(values))
    if args.source == "model":
        kv, profile, judge = model_kv.judged_kv(args.documents, args.seed)
        what = f"Record-world model KV {kv.shape}, {args.documents * 12:,} questions"
    else:
        spec = SyntheticKV(layers=args.layers, tokens=args.tokens, channels=args.channels, rho=args.rho,
                           offset=args.offset, outliers=min(args.outliers, args.channels), seed=args.seed)
        kv, profile = synthetic_kv(spec), synthetic_kv(profile_context(spec))
        what = f"Synthetic KV {kv.shape} (layers, K/V, tokens, channels), rho {args.rho:g}"
    table = compare.ablation(kv, profile, args.level, args.group, args.sensitivity, check=True, judge=judge)
    loc = locality(kv, args.group)
    print(f"{what}: variance raw/delta {loc['raw/delta']:.2f}x, centred/delta {loc['centred/delta']:.2f}x "
          f"(group {args.group})")
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.max_colwidth", 48):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    bad = table[table.roundtrip == "MISMATCH"]
    return 1 if len(bad) else 0
