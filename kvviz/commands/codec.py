"""``python -m kvviz codec``: CacheGen's encoder ablation on a synthetic KV."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from kvviz.common import args as A
from kvviz.common.errors import InputError

if TYPE_CHECKING:  # the command imports the codec only when it runs
    from kvviz.cachegen.kv import SyntheticKV

NAME = "codec"
HELP = "Encode a synthetic KV with CacheGen's encoder, its ablations and the baselines; print the table."


SYNTHETIC_FLAGS = ("--rho", "--layers", "--tokens", "--channels", "--offset", "--outliers")
"""The synthetic KV's shape and statistics: the model's KV has its own."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.cachegen.kv import SyntheticKV

    d = SyntheticKV()
    parser.add_argument("--rho", type=A.fraction, default=None, help=f"token-to-token correlation (default {d.rho:g})")
    parser.add_argument("--layers", type=A.count, default=None, help=f"default {d.layers}")
    parser.add_argument("--tokens", type=A.count, default=None, help=f"default {d.tokens}")
    parser.add_argument(
        "--channels", type=A.count, default=None, help=f"channels per layer for K and for V (default {d.channels})"
    )
    parser.add_argument(
        "--offset", type=A.non_negative, default=None, help=f"spread of per-channel offsets (default {d.offset:g})"
    )
    parser.add_argument(
        "--outliers",
        type=A.bounded_int(0, A.MAX_COUNT),
        default=None,
        help=f"outlier channels per layer, at most --channels (default {d.outliers}, or fewer "
        "when --channels is smaller)",
    )
    parser.add_argument("--group", type=A.count, default=10, help="anchor group size G (default 10)")
    parser.add_argument("--level", type=A.bounded_int(0, 4), default=2, help="0-4; 1-3 are the artifact's (default 2)")
    parser.add_argument("--sensitivity", type=A.positive, default=4.0, help="first ÷ last layer error weight")
    parser.add_argument("--seed", type=A.seed, default=0)
    parser.add_argument(
        "--source",
        choices=("synthetic", "model"),
        default="synthetic",
        help="the synthetic KV (the options above), or the record-world model's KV with its answer accuracy",
    )
    parser.add_argument(
        "--documents", type=A.count, default=None, help="record-world documents (with --source model; default 100)"
    )


def synthetic_spec(args: argparse.Namespace) -> SyntheticKV:
    """The synthetic KV the options describe: every option left out at its default; more outliers
    than channels is refused, and the default's two are capped at the channels."""
    from kvviz.cachegen.kv import SyntheticKV

    chosen = dict(
        rho=args.rho,
        layers=args.layers,
        tokens=args.tokens,
        channels=args.channels,
        offset=args.offset,
        outliers=args.outliers,
        seed=args.seed,
    )
    spec = SyntheticKV(**{k: v for k, v in chosen.items() if v is not None})
    if args.outliers is not None and args.outliers > spec.channels:
        raise InputError(f"--outliers {args.outliers} is more than the {spec.channels} channels per layer")
    return replace(spec, outliers=min(spec.outliers, spec.channels))


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz.cachegen import compare, model_kv
    from kvviz.cachegen.kv import locality, profile_context, synthetic_kv
    from kvviz.common import budget

    judge = None
    if args.source == "model":
        A.refuse(args, SYNTHETIC_FLAGS, "applies to --source synthetic; the model's KV has its own shape")
        documents = args.documents or 100
        budget.check(compare.study_cost(model_kv.kv_values(documents)))
        kv, profile, judge = model_kv.judged_kv(documents, args.seed)
        what = f"Record-world model KV {kv.shape}, {documents * 12:,} questions"
    else:
        A.refuse(args, ["--documents"], "applies to --source model")
        spec = synthetic_spec(args)
        budget.check(compare.study_cost(spec.values))
        kv, profile = synthetic_kv(spec), synthetic_kv(profile_context(spec))
        what = f"Synthetic KV {kv.shape} (layers, K/V, tokens, channels), rho {spec.rho:g}"
    table = compare.ablation(kv, profile, args.level, args.group, args.sensitivity, check=True, judge=judge)
    loc = locality(kv, args.group)
    print(
        f"{what}: variance raw/delta {loc['raw/delta']:.2f}x, centred/delta {loc['centred/delta']:.2f}x "
        f"(group {args.group})"
    )
    with pd.option_context("display.width", 220, "display.max_columns", 20, "display.max_colwidth", 48):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    bad = table[table.roundtrip == "MISMATCH"]
    return 1 if len(bad) else 0
