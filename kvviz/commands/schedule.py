"""``python -m kvviz schedule``: Mooncake's prefill schedulers over a trace, as a JSON summary."""

from __future__ import annotations

import argparse
import json

from kvviz.common import args as A
from kvviz.traces.cli import TRACE_HELP, add_trace_arguments
from kvviz.traces.workload import LIMITS

NAME = "schedule"
SYNTHETIC_REQUESTS = 12_000
HELP = "Compare prefill schedulers (random, load balancing, cache-aware, KVCache-centric) over a trace; print JSON."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.mooncake.conductor import SCHEDULERS, ConductorConfig

    d = ConductorConfig()
    parser.add_argument("--scheduler", choices=SCHEDULERS + ("all",), default="all", help="default: all four")
    add_trace_arguments(
        parser, flag="--trace", help="a trace with hash_ids (default: the synthetic workload): " + TRACE_HELP
    )
    parser.add_argument(
        "--requests",
        type=A.bounded_int(*LIMITS["requests"]),
        default=None,
        help=f"synthetic workload size (without --trace; default {SYNTHETIC_REQUESTS:,})",
    )
    parser.add_argument(
        "--seed", type=A.seed, default=None, help="synthetic workload seed (and the random scheduler's; default 0)"
    )
    parser.add_argument("--speedup", type=A.positive, default=3.0, help="replay the trace this many times faster")
    parser.add_argument("--instances", type=A.count, default=d.instances, help="prefill instances")
    parser.add_argument("--cache-blocks", type=A.count, default=d.cache_blocks, help="local LRU cache per instance")
    slo = "in seconds: the rejection limit, and what goodput counts"
    for flag, what in (
        ("--threshold", f"kvcentric's balancing threshold (default {d.balancing_threshold:g})"),
        ("--bandwidth", f"kvcentric's fetch bandwidth, Gb/s (default {d.bandwidth_gbps:g})"),
        ("--ttft-slo", f"TTFT SLO {slo} (default {d.ttft_slo_s:g})"),
        ("--tbt-slo", f"TBT SLO {slo} (default {d.tbt_slo_s:g})"),
    ):
        parser.add_argument(flag, type=A.positive, default=None, help=what)
    parser.add_argument("--decode", type=A.count, default=None, help=f"decode instances (default {d.decode_instances})")
    parser.add_argument(
        "--reject",
        action="store_true",
        help="reject a request whose predicted TTFT or TBT misses its SLO, as Algorithm 1 does (default: admit all)",
    )
    parser.add_argument(
        "--per-request",
        type=A.output_path,
        metavar="CSV",
        help="write per-request outcome, TTFT, TBT, instance and hits here",
    )


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz.mooncake import conductor
    from kvviz.traces.cli import trace_from_args, with_warnings
    from kvviz.traces.workload import WorkloadConfig, generate

    schedulers = conductor.SCHEDULERS if args.scheduler == "all" else (args.scheduler,)
    _refuse_what_does_not_apply(args, schedulers)
    trace = trace_from_args(args)
    if trace is None:
        trace = generate(WorkloadConfig(requests=args.requests or SYNTHETIC_REQUESTS, seed=args.seed or 0))
    chosen = dict(
        instances=args.instances,
        cache_blocks=args.cache_blocks,
        balancing_threshold=args.threshold,
        bandwidth_gbps=args.bandwidth,
        speedup=args.speedup,
        seed=args.seed,
        decode_instances=args.decode,
        reject=args.reject,
        ttft_slo_s=args.ttft_slo,
        tbt_slo_s=args.tbt_slo,
    )
    config = conductor.ConductorConfig(**{k: v for k, v in chosen.items() if v is not None})
    results = conductor.compare(trace, config, schedulers)
    print(
        json.dumps(
            with_warnings(
                {
                    "trace": trace.name,
                    "requests": trace.n_requests,
                    "offered_load": round(conductor.offered_load(trace, config), 4),
                    "results": [r.summary() for r in results.values()],
                },
                trace,
            ),
            indent=2,
        )
    )
    if args.per_request:
        pd.concat(
            [
                pd.DataFrame(
                    {
                        "scheduler": r.scheduler,
                        "request": range(len(r.ttft_s)),
                        "outcome": [conductor.OUTCOME_NAMES[o] for o in r.outcome],
                        "ttft_s": r.ttft_s,
                        "predicted_tbt_s": r.predicted_tbt_s,
                        "tbt_s": r.tbt_s,
                        "instance": r.instance,
                        "reused_blocks": r.prefix_blocks,
                        "fetched_blocks": r.fetched_blocks,
                    }
                )
                for r in results.values()
            ]
        ).to_csv(args.per_request, index=False)
    return 0


def _refuse_what_does_not_apply(args: argparse.Namespace, schedulers: tuple[str, ...]) -> None:
    """kvcentric's options with the other schedulers; with --trace, the synthetic workload's, and
    the seed when no random scheduler runs."""
    if "kvcentric" not in schedulers:
        A.refuse(args, ["--threshold", "--bandwidth"], f"applies to --scheduler kvcentric, not {args.scheduler}")
    if args.trace is not None:
        A.refuse(args, ["--requests"], "applies to the synthetic workload; --trace replays the trace")
        if "random" not in schedulers:
            A.refuse(
                args, ["--seed"], "seeds the synthetic workload and the random scheduler, and this run has neither"
            )
