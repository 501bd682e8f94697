"""``python -m kvviz kvsize --model NAME [--tokens N]``: a model's KV size per token and per context, as JSON."""

from __future__ import annotations

import argparse
import json

from kvviz.common import args as A

NAME = "kvsize"
HELP = "Print a model's KV bytes per token and per context (JSON); --list shows the model presets."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="model preset, e.g. llama-3-8b, llama-3.1-70b, qwen2.5-14b, mistral-7b")
    parser.add_argument(
        "--tokens", type=A.count, default=None, help="context length in tokens (default: per token only)"
    )
    parser.add_argument("--bytes-per-value", type=A.positive, default=None, help="override the KV dtype size (1 = FP8)")
    parser.add_argument("--list", action="store_true", help="list the model presets and exit")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kvviz.common import hardware as hw
    from kvviz.common.errors import InputError

    if args.list:
        A.refuse(args, ["--model", "--tokens", "--bytes-per-value"], "applies to one model; --list lists them all")
        print(
            json.dumps(
                {
                    name: {
                        **asdict(m),
                        "kv_bytes_per_token": m.kv_bytes_per_token,
                        "note": hw.MODEL_NOTES.get(name, ""),
                    }
                    for name, m in hw.MODELS.items()
                },
                indent=2,
            )
        )
        return 0
    if not args.model:
        raise InputError("give --model NAME (or --list to see the presets)", field="model")
    m = hw.model(args.model)
    if args.bytes_per_value is not None:
        m = hw.with_variant(m, bytes_per_value=args.bytes_per_value)
    out = {
        "model": m.name,
        "attention": m.attention,
        "layers": m.layers,
        "kv_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "bytes_per_value": m.bytes_per_value,
        "kv_bytes_per_token": m.kv_bytes_per_token,
        "kv_kib_per_token": m.kv_bytes_per_token / 1024,
    }
    if args.tokens is not None:
        from kvviz.ledger import ledger  # only here: it brings the figures' styles (plotly)

        out |= {
            "tokens": args.tokens,
            "kv_bytes": ledger.kv_bytes(m, args.tokens),
            "kv_gb": ledger.kv_bytes(m, args.tokens) / hw.GB,
        }
    print(json.dumps(out, indent=2))
    return 0
