"""``python -m kvviz tiers TRACE --model M --gpu G ...``: a trace through GPU, DRAM and SSD tiers, in
words on a terminal and as JSON with ``--json`` or when piped."""

from __future__ import annotations

import argparse

from kvviz.common import args as A
from kvviz.common import budget
from kvviz.common.errors import InputError
from kvviz.traces.cli import add_trace_arguments

NAME = "tiers"
HELP = (
    "Replay a trace through a tiered KV cache (GPU HBM, host DRAM, SSD or a remote pool; SGLang's HiCache) "
    "on the hardware given, as SGLang 0.5.23 serves it, and print hits by tier, TTFT beside no cache, throughput, "
    "cost and any warning (overload, host memory not larger than GPU memory): a summary on a terminal, JSON "
    "with --json or when piped."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.tiers.cli import add_deployment_arguments

    add_trace_arguments(parser)
    add_deployment_arguments(parser)
    parser.add_argument(
        "--ttft-slo",
        type=A.positive,
        default=None,
        metavar="S",
        help="also report the share of requests with TTFT ≤ S seconds",
    )
    parser.add_argument(
        "--router",
        default=None,
        help="serve the --instances (2 or more) each with its own GPU cache (and its own --dram and --ssd; a "
        "--remote pool is one storage every instance shares) behind this router: round-robin, least-load, "
        "prefix-hash, cache-aware, kv-aware or conductor (default: the instances act as one cache)",
    )
    parser.add_argument(
        "--engine",
        choices=("sglang", "vllm-lmcache"),
        default=None,
        help="with --router, each instance's stack: SGLang's radix cache and HiCache (default), or vLLM's block "
        "pool with LMCache (--dram: each instance's CPU backend, --ssd: its local disk backend, --remote: one "
        "remote backend every instance shares)",
    )


def run(args: argparse.Namespace) -> int:
    from kvviz.cluster import cost as cluster_cost
    from kvviz.cluster.deployment import routed
    from kvviz.common.progress import Progress, reading
    from kvviz.prefix_cache import prepare
    from kvviz.tiers import replay
    from kvviz.tiers.cli import (
        config_from_args,
        emit,
        figure,
        refuse_for_lmcache,
        refuse_for_router,
        routed_words,
        tier_words,
    )
    from kvviz.tiers.replay import cost
    from kvviz.traces.cli import trace_from_args, with_warnings

    if args.router is not None:
        refuse_for_router(args)
        if args.engine == "vllm-lmcache":
            refuse_for_lmcache(args)
    elif args.engine is not None:
        raise InputError("--engine applies with --router; the tiered replay is SGLang's HiCache")
    config = config_from_args(args)
    with reading(NAME):
        trace = trace_from_args(args)
    instances = config.instances if args.router else 1
    budget.replay_memory(budget.CLUSTER if args.router else budget.TIERED, trace, instances, instances).check()
    prepared = prepare(trace)
    if args.router is not None:
        with Progress("kvviz tiers: serving the trace", None, "", cluster_cost(prepared, 2).seconds):
            answer = routed(trace, config, args.router, prepared, engine=args.engine or "sglang")
        summary, ttft, describe = answer.summary(), answer.ttft_s, routed_words
    else:
        with Progress("kvviz tiers: replaying the trace", None, "", cost(prepared, 1, config.servers).seconds):
            result = replay(prepared, config)
        summary, ttft, describe = result.summary(), result.requests["ttft_s"].to_numpy(), tier_words
    if args.ttft_slo is not None:
        summary["ttft_slo_s"] = args.ttft_slo
        summary["ttft_slo_met"] = float((ttft <= args.ttft_slo).mean())
    words = describe(summary)
    if args.ttft_slo is not None:
        share = figure(100 * summary["ttft_slo_met"])
        words.append(f"{share}% of requests had their first token within {args.ttft_slo:g} s.")
    emit(args, with_warnings(summary, trace), words)
    return 0
