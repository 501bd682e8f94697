"""``python -m kvviz overload``: one admission policy under overload, as a JSON summary (and a timeline CSV)."""

from __future__ import annotations

import argparse
import json

from kvviz.common import args as A
from kvviz.common.errors import InputError
from kvviz.traces.cli import TRACE_HELP, add_trace_arguments

NAME = "overload"
HELP = (
    "Simulate Mooncake's overload admission (baseline, early rejection, prediction, oracle), with prefills "
    "placed by load balancing or KVCache-centric, and print JSON."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.mooncake.overload import PLACEMENTS, POLICIES, ClusterConfig

    d = ClusterConfig()
    parser.add_argument("--policy", choices=POLICIES + ("all",), default="all", help="admission policy (default: all)")
    parser.add_argument(
        "--load", type=A.positive, default=None, help="Poisson arrivals at this multiple of capacity (default 2)"
    )
    parser.add_argument("--duration", type=A.positive, default=None, help="seconds of Poisson arrivals (default 3600)")
    parser.add_argument("--seed", type=A.seed, default=None, help="seed of the Poisson arrivals (default 0)")
    parser.add_argument("--mean-input", type=A.count, default=None, help="mean prompt tokens (Poisson; default 20000)")
    parser.add_argument("--mean-output", type=A.count, default=None, help="mean output tokens (Poisson; default 200)")
    add_trace_arguments(
        parser,
        flag="--trace",
        help="replay this trace's timestamps and lengths instead of Poisson arrivals: " + TRACE_HELP,
    )
    parser.add_argument(
        "--speedup", type=A.positive, default=None, help="trace replay speed-up (default 2, as the paper)"
    )
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default=d.placement,
        help="where a prefill runs: the queue that clears first, or Algorithm 1 over the instances' caches "
        "(kvcentric: a --trace with hash_ids)",
    )
    parser.add_argument("--prefill", type=A.count, default=d.prefill_instances, help="prefill instances")
    parser.add_argument("--decode", type=A.count, default=d.decode_instances, help="decode instances")
    parser.add_argument("--batch-limit", type=A.count, default=d.batch_limit, help="requests per decode batch")
    parser.add_argument("--ttft-slo", type=A.positive, default=d.ttft_slo_s, help="TTFT SLO in seconds")
    parser.add_argument("--tbt-slo", type=A.positive, default=d.tbt_slo_s, help="TBT SLO in seconds")
    parser.add_argument("--threshold", type=A.non_negative, default=d.threshold, help="admit while load <= this")
    parser.add_argument(
        "--t-d",
        type=A.positive,
        default=None,
        help="predictor's uniform decode time, s (policy predict; default: auto)",
    )
    parser.add_argument(
        "--timeline", type=A.output_path, metavar="CSV", help="write the windowed timeline (all chosen policies) here"
    )


POISSON_FLAGS = ("--load", "--duration", "--seed", "--mean-input", "--mean-output")
"""The options of the Poisson arrivals, which --trace replaces."""


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz.common import budget
    from kvviz.mooncake import overload
    from kvviz.traces.cli import trace_from_args, with_warnings

    policies = overload.POLICIES if args.policy == "all" else (args.policy,)
    if "predict" not in policies:
        A.refuse(args, ["--t-d"], f"applies to --policy predict (the predictor's decode time), not {args.policy}")
    if args.trace is not None:
        A.refuse(args, POISSON_FLAGS, "applies to Poisson arrivals; --trace replays the trace's own")
    else:
        A.refuse(args, ["--speedup"], "applies to --trace (the replay's speed-up)")
        if args.placement == "kvcentric":
            raise InputError(
                "--placement kvcentric needs --trace with block ids (hash_ids): Poisson arrivals have none"
            )
    config = overload.with_defaults(
        overload.ClusterConfig(),
        prefill_instances=args.prefill,
        decode_instances=args.decode,
        batch_limit=args.batch_limit,
        ttft_slo_s=args.ttft_slo,
        tbt_slo_s=args.tbt_slo,
        threshold=args.threshold,
        t_d_s=args.t_d,
        placement=args.placement,
    )
    trace = trace_from_args(args)
    if trace is not None:
        arrivals = overload.trace_arrivals(trace, args.speedup or 2.0)
    else:  # every Poisson option is positive, or a seed for which 0 is the default
        arrivals = overload.poisson_arrivals(
            config,
            args.load or 2.0,
            args.duration or 3600.0,
            args.seed or 0,
            args.mean_input or 20_000,
            args.mean_output or 200,
        )
    budget.check(overload.cost(len(arrivals.time_s), arrivals.span_s, config, len(policies), arrivals.n_blocks))
    results = [overload.simulate(arrivals, config, p) for p in policies]
    cap = overload.capacity(config, arrivals.input_length, arrivals.output_length)
    print(
        json.dumps(
            with_warnings(
                {
                    "arrivals": arrivals.source,
                    "capacity_rps": {"prefill": round(cap.prefill_rps, 4), "decode": round(cap.decode_rps, 4)},
                    "results": [r.totals for r in results],
                },
                trace,
            ),
            indent=2,
        )
    )
    if args.timeline:
        frames = [r.timeline.assign(policy=r.policy) for r in results]
        pd.concat(frames).to_csv(args.timeline, index=False)
    return 0
