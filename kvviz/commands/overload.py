"""``python -m kvviz overload``: one admission policy under overload, as a JSON summary (and a timeline CSV)."""

from __future__ import annotations

import argparse
import json

from kvviz import args as A
from kvviz.trace import TRACE_HELP, add_trace_arguments

NAME = "overload"
HELP = "Simulate Mooncake's overload admission (baseline, early rejection, prediction, oracle) and print JSON."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.overload import POLICIES, ClusterConfig
    d = ClusterConfig()
    parser.add_argument("--policy", choices=POLICIES + ("all",), default="all", help="admission policy (default: all)")
    parser.add_argument("--load", type=A.positive, default=2.0, help="Poisson arrivals at this multiple of capacity")
    parser.add_argument("--duration", type=A.positive, default=3600.0, help="seconds of Poisson arrivals")
    parser.add_argument("--seed", type=A.seed, default=0, help="seed of the Poisson arrivals")
    parser.add_argument("--mean-input", type=A.count, default=20_000, help="mean prompt tokens (Poisson)")
    parser.add_argument("--mean-output", type=A.count, default=200, help="mean output tokens (Poisson)")
    add_trace_arguments(parser, flag="--trace",
                        help="replay this trace's timestamps and lengths instead of Poisson arrivals: " + TRACE_HELP)
    parser.add_argument("--speedup", type=A.positive, default=2.0, help="trace replay speed-up (the paper uses 2)")
    parser.add_argument("--prefill", type=A.count, default=d.prefill_instances, help="prefill instances")
    parser.add_argument("--decode", type=A.count, default=d.decode_instances, help="decode instances")
    parser.add_argument("--batch-limit", type=A.count, default=d.batch_limit, help="requests per decode batch")
    parser.add_argument("--ttft-slo", type=A.positive, default=d.ttft_slo_s, help="TTFT SLO in seconds")
    parser.add_argument("--tbt-slo", type=A.positive, default=d.tbt_slo_s, help="TBT SLO in seconds")
    parser.add_argument("--threshold", type=A.non_negative, default=d.threshold, help="admit while load <= this")
    parser.add_argument("--t-d", type=A.positive, default=None,
                        help="predictor's uniform decode time, s (default: auto)")
    parser.add_argument("--timeline", type=A.output_path, metavar="CSV",
                        help="write the windowed timeline (all chosen policies) here")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz import budget, overload
    from kvviz.trace import trace_from_args

    config = overload.with_defaults(
        overload.ClusterConfig(), prefill_instances=args.prefill, decode_instances=args.decode,
        batch_limit=args.batch_limit, ttft_slo_s=args.ttft_slo, tbt_slo_s=args.tbt_slo, threshold=args.threshold,
        t_d_s=args.t_d)
    if args.trace:
        arrivals = overload.trace_arrivals(trace_from_args(args), args.speedup)
    else:
        arrivals = overload.poisson_arrivals(config, args.load, args.duration, args.seed, args.mean_input,
                                             args.mean_output)
    policies = overload.POLICIES if args.policy == "all" else (args.policy,)
    budget.check(overload.cost(len(arrivals.time_s), arrivals.span_s, config, len(policies)))
    results = [overload.simulate(arrivals, config, p) for p in policies]
    cap = overload.capacity(config, arrivals.input_length, arrivals.output_length)
    print(json.dumps({"arrivals": arrivals.source, "capacity_rps": {"prefill": round(cap.prefill_rps, 4),
                      "decode": round(cap.decode_rps, 4)}, "results": [r.totals for r in results]}, indent=2))
    if args.timeline:
        frames = [r.timeline.assign(policy=r.policy) for r in results]
        pd.concat(frames).to_csv(args.timeline, index=False)
    return 0
