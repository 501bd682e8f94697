"""``python -m kvviz breakeven --model NAME --gpu NAME [--context N]``: load or recompute, as JSON."""

from __future__ import annotations

import argparse
import json

from kvviz.common import args as A

NAME = "breakeven"
HELP = (
    "Print the break-even load bandwidth (KV bytes per token ÷ recompute time per token) and load vs "
    "recompute time per link for one model, GPU and context (JSON)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model preset, e.g. llama-3-8b, qwen2.5-14b")
    parser.add_argument("--gpu", required=True, help="GPU preset: h100, h200, a100, a40, gh200, mi300x")
    parser.add_argument("--context", type=A.count, default=8000, help="context length in tokens (default 8000)")
    parser.add_argument(
        "--mfu",
        type=A.bounded_float(0.0, 1.0, lo_open=True),
        default=None,
        help="model FLOPs utilisation in (0, 1] (default 0.735)",
    )
    parser.add_argument("--gpus", type=A.count, default=1, help="GPUs that recompute together (default 1)")


def run(args: argparse.Namespace) -> int:
    from kvviz.common import hardware as hw
    from kvviz.ledger import ledger

    m, g = hw.model(args.model), hw.gpu(args.gpu)
    compute = hw.Compute(g, hw.DEFAULT_MFU if args.mfu is None else args.mfu, args.gpus)
    bw = ledger.breakeven_bytes_s(m, compute, args.context)
    lr = ledger.load_or_recompute(m, compute, args.context, hw.LINKS)
    out = {
        "model": m.name,
        "gpu": g.name,
        "gpus": compute.n_gpus,
        "mfu": compute.mfu,
        "context": args.context,
        "kv_bytes_per_token": m.kv_bytes_per_token,
        "kv_gb": ledger.kv_bytes(m, args.context) / hw.GB,
        "recompute_s": hw.prefill_seconds(m, compute, args.context),
        "recompute_us_per_token": ledger.recompute_seconds_per_token(m, compute, args.context) * 1e6,
        "breakeven_gb_s": bw / hw.GB,
        "breakeven_gb_s_per_gpu": bw / compute.n_gpus / hw.GB,
        "links": lr.round(4).to_dict(orient="records"),
    }
    print(json.dumps(out, indent=2))
    return 0
