"""``python -m kvviz stream``: CacheGen's chunk streaming under one policy, chunk by chunk."""

from __future__ import annotations

import argparse
from pathlib import Path

from kvviz.common import args as A

NAME = "stream"
TRACES = 1000  # random bandwidth traces by default
PERSISTENCE = 0.9  # lag-1 correlation of the persistent traces by default
NAMED = ("persistent", "iid", "step")  # the bandwidths given by name (else a CSV file)
RANDOM = NAMED[:2]  # ... drawn at random: --traces of them
HELP = "Stream a context's KV chunk by chunk under a CacheGen policy over a bandwidth trace."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bandwidth",
        type=A.name_or_file(NAMED),
        default="persistent",
        help="persistent | iid | step | a CSV file of 'time_s, gbps' (default persistent)",
    )
    parser.add_argument("--slo", type=A.positive, default=1.0, help="TTFT SLO in seconds (default 1)")
    parser.add_argument(
        "--policy", default="paper", help="paper | artifact | level1 | level2 | level3 | quant8 | text | oracle | all"
    )
    parser.add_argument("--seed", type=A.seed, default=0, help="seed of the random bandwidth traces")
    parser.add_argument(
        "--persistence",
        type=A.fraction,
        default=None,
        help=f"lag-1 correlation of 'persistent' (default {PERSISTENCE:g})",
    )
    parser.add_argument(
        "--traces",
        type=A.count,
        default=None,
        help=f"random traces (persistent, iid) for the summary (the table shows the first); default {TRACES}",
    )
    parser.add_argument("--context", type=A.count, default=9_500, help="context tokens (default 9500)")
    parser.add_argument("--chunk", type=A.count, default=1_500, help="tokens per chunk (default 1500)")
    parser.add_argument(
        "--recompute",
        choices=("prefill", "fixed"),
        default=None,
        help="text cost: a Mistral-7B prefill model (the default), or the artifact's fixed 0.2 s; "
        "for the policies that may send text (paper, artifact, text, oracle, all)",
    )
    parser.add_argument(
        "--initial-gbps",
        type=A.positive,
        default=None,
        help="the paper rule's estimate for chunk 0 (policy paper; default: the trace's mean)",
    )
    parser.add_argument(
        "--sizes",
        choices=("synthetic", "model"),
        default="synthetic",
        help="KV the levels are encoded from: a synthetic chunk of the model's shape, or the "
        "record-world model's KV (default synthetic)",
    )
    parser.add_argument(
        "--documents",
        type=A.count,
        default=100,
        help="record-world documents the levels' quality is measured on (default 100)",
    )


def bandwidth_from(args: argparse.Namespace, chunks: int):
    from kvviz.cachegen import streaming as S

    named = args.bandwidth in NAMED
    return S.make_bandwidth(
        args.bandwidth if named else "upload",
        _traces(args),
        chunks,
        PERSISTENCE if args.persistence is None else args.persistence,
        args.seed,
        csv=None if named else _bandwidth_file(args.bandwidth),
        name=args.bandwidth if named else Path(args.bandwidth).name,
    )


def _bandwidth_file(path: str) -> bytes:
    """A bandwidth CSV's bytes, read only if it is a regular file (a pipe or a device is refused
    rather than waited on, even one put in its place after the argument was checked)."""
    from kvviz.cachegen.streaming import MAX_CSV_BYTES
    from kvviz.traces.source import read_regular

    return read_regular(path, "bandwidth file", MAX_CSV_BYTES)


def _traces(args: argparse.Namespace) -> int:
    """How many bandwidth traces the run streams over: a step or a file is one."""
    return (args.traces or TRACES) if args.bandwidth in RANDOM else 1


def _refuse_what_does_not_apply(args: argparse.Namespace) -> None:
    """The random traces' options with a fixed bandwidth; the paper rule's with another policy, and
    the text's cost with a policy that sends a fixed level."""
    from kvviz.common.errors import quote

    kind = args.bandwidth if args.bandwidth in NAMED else f"the file '{quote(args.bandwidth)}'"
    if kind != "persistent":
        A.refuse(args, ["--persistence"], f"applies to --bandwidth persistent, not {kind}")
    if kind not in RANDOM:
        A.refuse(args, ["--traces"], f"applies to random bandwidth traces (persistent, iid); {kind} is one trace")
    if args.policy not in ("paper", "all"):
        A.refuse(args, ["--initial-gbps"], f"applies to --policy paper (its first estimate), not {quote(args.policy)}")
    if args.policy.startswith("level") or args.policy == "quant8":  # a fixed encoding level, never text
        A.refuse(args, ["--recompute"], f"is the cost of sending text, which --policy {quote(args.policy)} never does")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from kvviz.cachegen import levels
    from kvviz.cachegen import streaming as S
    from kvviz.common import budget

    _refuse_what_does_not_apply(args)
    measured = levels.measure(
        levels.LevelStudy.for_stream(args.sizes, args.context, args.chunk, args.seed, args.documents)
    )
    setup = S.StreamSetup(
        measured.levels,
        measured.quant8,
        context_tokens=args.context,
        chunk_tokens=args.chunk,
        slo_s=args.slo,
        recompute=args.recompute or "prefill",
        initial_gbps=args.initial_gbps,
        per_chunk=measured.per_chunk,
    )
    setup.validate()
    policies = S.policy_names(setup) if args.policy == "all" else (args.policy,)
    budget.check(S.stream_cost(setup, _traces(args), len(policies) + 1))
    bw = bandwidth_from(args, setup.n_chunks)
    runs = [S.simulate(setup, bw, p) for p in policies]
    first = bw.first()
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        for p in policies:
            one = S.simulate(setup, first, p)
            print(S.timeline(setup, one).to_string(index=False))
            print(
                f"{p}: TTFT {one.ttft[0]:.3f} s, SLO {setup.slo_s:g} s "
                f"{'met' if one.met[0] else 'MISSED'}, quality {one.quality[0]:.4f}  [trace 0: {bw.name}]\n"
            )
        print(
            f"Levels measured (sizes encoded from {levels.SIZE_SOURCES[args.sizes]}, {args.documents} record-world "
            "documents judged):"
        )
        print(measured.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print(f"Over {bw.traces:,} trace(s) ({bw.name}), SLO {setup.slo_s:g} s:")
        print(S.summary(runs).to_string(index=False))
    return 0
