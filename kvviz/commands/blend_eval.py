"""``python -m kvviz blend-eval``: CacheBlend answer accuracy on the record-world model, as CSV.

Prints ``method,ratio,acc_cut,acc_uncut,acc_all``. CacheBlend and random selection get one
row per requested ratio; full prefill, full reuse and the prefix cache one row each, with the
share of tokens they actually recompute in ``ratio`` (1, 0 and (N - chunk)/N).
"""

from __future__ import annotations

import argparse
import sys

from kvviz.common import args as A
from kvviz.common.errors import InputError, quote

NAME = "blend-eval"
RATIOS = "0,0.05,0.1,0.15,0.2,0.3,0.5"
HELP = "Answer accuracy of full prefill, full reuse, prefix cache, CacheBlend and random recompute (CSV)."
MAX_DOCS = 20_000


def _ratios(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise InputError(
            f"ratios must be comma-separated numbers in [0, 1], got '{quote(text)}'", field="--ratios"
        ) from None
    if not values:
        raise InputError("give at least one ratio, e.g. --ratios 0,0.1,0.2", field="--ratios")
    for value in values:
        if not 0.0 <= value <= 1.0:
            raise InputError(f"recompute ratio must be in [0, 1], got {value}", field="--ratios")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.cacheblend.blend import METHODS, VARIANTS

    parser.add_argument(
        "--ratios",
        default=None,
        help=f"recompute ratios for cacheblend and random, comma-separated, each in [0, 1] (default {RATIOS})",
    )
    parser.add_argument("--chunk-len", type=A.count, default=5, help="tokens per reused chunk (default 5)")
    parser.add_argument(
        "--docs", type=A.bounded_int(1, MAX_DOCS), default=200, help="fresh documents to evaluate (12 questions each)"
    )
    parser.add_argument(
        "--method", action="append", choices=METHODS, help="only these methods (repeatable); default: all five"
    )
    parser.add_argument(
        "--variant",
        default=None,
        choices=tuple(VARIANTS),
        help="CacheBlend's token selection: paper (gradual filtering; the default), v_layer1 "
        "(original prototype, LMCache v0), k_layer1 (LMCache v1)",
    )
    parser.add_argument("--seed", type=A.seed, default=0, help="seed of the documents and of random selection")
    parser.add_argument(
        "--weights", type=_weights, default=None, help="model weights (.npz); default: the weights shipped with kvviz"
    )


def _weights(text: str) -> str:
    """A readable weights file; the message says how to make one."""
    from kvviz.cacheblend.model import RETRAIN

    try:
        return A.input_file(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; train weights with {RETRAIN}") from None


def run(args: argparse.Namespace) -> int:
    from kvviz.cacheblend.blend import METHODS, evaluate, setup
    from kvviz.cacheblend.model import load_model
    from kvviz.cacheblend.record_world import sample_documents

    methods = tuple(m for m in METHODS if not args.method or m in args.method)
    if not {"cacheblend", "random"} & set(methods):
        A.refuse(args, ["--ratios"], "applies to --method cacheblend and random, which this run leaves out")
    if "cacheblend" not in methods:
        A.refuse(args, ["--variant"], "applies to --method cacheblend, which this run leaves out")
    ratios = _ratios(RATIOS if args.ratios is None else args.ratios)
    model = load_model(args.weights)
    table = evaluate(
        model,
        setup(model, sample_documents(args.docs, args.seed), args.chunk_len),
        ratios,
        methods,
        "paper" if args.variant is None else args.variant,
        args.seed,
    )
    table.to_csv(sys.stdout, index=False, float_format="%.4f", lineterminator="\n")
    return 0
