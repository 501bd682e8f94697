"""``python -m kvviz hitcurve TRACE``: hit ratio against cache capacity, as CSV on stdout."""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction

from kvviz.common import args as A
from kvviz.common import budget
from kvviz.common.progress import Progress, reading
from kvviz.traces.cli import add_trace_arguments

NAME = "hitcurve"
HELP = (
    "Replay a trace's block accesses through eviction policies and print the hit curve as CSV "
    "(policy,capacity,hits,accesses,hit_ratio)."
)
DEFAULT_CAPACITIES = "1000,10000,30000,50000,100000,inf"  # Mooncake v3 Table 1's columns
BLOCK_POLICIES = "lru,fifo,lfu,length_aware,sieve,arc,s3fifo,belady"
PREFIX_POLICIES = "lru,lfu,fifo,mru,filo,slru"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument(
        "--policies",
        default=None,
        help="comma-separated: lru, fifo, lfu, length_aware, sieve, arc, s3fifo, belady "
        "(default: all; with --cache prefix: lru, lfu, fifo, mru, filo, slru; --cache vllm has none)",
    )
    parser.add_argument(
        "--capacities",
        default=DEFAULT_CAPACITIES,
        help="comma-separated capacities in blocks, e.g. 1000,10k,inf "
        f"(default: {DEFAULT_CAPACITIES}, Mooncake v3 Table 1)",
    )
    parser.add_argument(
        "--prefix",
        action="store_true",
        help="count a hit only while every earlier block of its request hit too (--cache block)",
    )
    parser.add_argument(
        "--cache-block",
        type=A.count,
        default=1,
        metavar="FACTOR",
        help="cache blocks of FACTOR trace blocks each (chained ids; default: 1)",
    )
    parser.add_argument(
        "--cache",
        choices=("block", "prefix", "vllm"),
        default="block",
        help="block: every block is an entry (libCacheSim-style); prefix: SGLang 0.5.23's RadixCache as its "
        "scheduler drives it, evicting leaves of the prefix tree (policies lru, lfu, fifo, mru, filo, "
        "slru; default all six); vllm: vLLM's block pool, evicting single blocks from its free queue "
        "(one curve, named vllm)",
    )
    parser.add_argument(
        "--sample",
        default=None,
        help="auto (a SHARDS sample above 2,000,000 block accesses), exact, or a rate such as "
        "0.01; LRU stays exact; --cache block without --prefix, or --cache prefix, which samples "
        "whole requests and only when this is given (default: auto; see docs/eviction.md)",
    )
    parser.add_argument("--model", help="a model preset (kvsize --list): add capacity_gib, the KV of that many blocks")


def _refuse_what_does_not_apply(args: argparse.Namespace) -> None:
    """Prefix counting is a block-cache option; sampling applies to the block and the prefix cache;
    vLLM's pool has no eviction policy to choose."""
    if args.cache in ("prefix", "vllm"):
        engine = "the prefix cache" if args.cache == "prefix" else "vLLM's block pool"
        if args.cache == "vllm":
            A.refuse(args, ["--sample"], f"applies to --cache block or prefix; {engine} replays exactly")
        A.refuse(args, ["--prefix"], f"applies to --cache block; every hit of {engine} is a prefix hit")
    if args.cache == "vllm":
        A.refuse(args, ["--policies"], "does not apply to --cache vllm: its free queue is its only eviction order")
    elif args.prefix:
        A.refuse(
            args,
            ["--sample"],
            "applies to counting every block; --prefix counts exactly (a prefix needs every block of its request)",
        )


def run(args: argparse.Namespace) -> int:
    # Imported here, and the radix-cache replay, the model presets, the sampler and pandas only
    # when asked for: an exact block-cache curve is a short run whose time is mostly start-up
    # (docs/eviction.md, Speed), so it goes through ``counts``, which never builds a DataFrame.
    from kvviz.eviction.curves import counts_csv, curve_csv
    from kvviz.eviction.grid import chosen_rate, parse_capacities, parse_policies, parse_sample
    from kvviz.eviction.replay import coarsen, counts
    from kvviz.traces.cli import trace_from_args

    _refuse_what_does_not_apply(args)
    prefix = args.cache in ("prefix", "vllm")
    sample = parse_sample("auto" if args.sample is None else args.sample)
    if prefix or args.model:
        from kvviz import prefix_cache
    default = PREFIX_POLICIES if prefix else BLOCK_POLICIES
    names = default if args.policies is None else args.policies
    policies = prefix_cache.parse_policies(names) if prefix else parse_policies(names)
    spec = None
    if args.model:
        from kvviz.common.hardware import model

        spec = model(args.model)
    capacities = parse_capacities(args.capacities)
    with reading(NAME):
        trace = coarsen(trace_from_args(args), args.cache_block)
    footprint = {"vllm": budget.VLLM, "prefix": budget.PREFIX}.get(args.cache, budget.EVICTION)
    budget.replay_memory(footprint, trace, len(capacities) * (1 if args.cache == "vllm" else len(policies))).check()
    rate = None if args.cache == "vllm" or args.prefix else chosen_rate(sample, len(trace.blocks))
    if args.cache == "prefix" and args.sample is None:
        rate = None  # the prefix cache samples only when asked: its sample errs far more (docs/eviction.md)
    runs = 1 if args.cache == "vllm" else len(policies) * len(capacities)
    with Progress("kvviz hitcurve: replaying", runs, "runs") as progress:
        if not prefix and spec is None and rate is None:
            rows = counts(trace, policies, capacities, progress=progress)
            progress.close()
            sys.stdout.write(counts_csv(rows, args.prefix))
            return 0
        curve = _curve(args, trace, policies, capacities, rate, progress)
    gib = None if spec is None else prefix_cache.block_bytes(spec, trace.block_size) / prefix_cache.GIB
    sys.stdout.write(curve_csv(curve, gib))
    return 0


def _curve(args: argparse.Namespace, trace, policies, capacities, rate: float | None, progress: Progress):
    """The hit curve of every engine but the plain exact block cache, reporting each run to ``progress``
    where the replay reports it (a block cache's sampled curve has no count: the line shows the time only)."""
    from kvviz.eviction.replay import curve_of, sweep

    if args.cache == "vllm":
        from kvviz import vllm

        return vllm.sweep(trace, capacities, progress=progress)
    if args.cache == "prefix" and rate is not None:
        from kvviz.prefix_cache.sampling import sampled_sweep

        sampled = sampled_sweep(trace, policies, capacities, rate, progress=progress.count)
        progress.close()
        _say_prefix_sampled(sampled, rate, capacities)
        return sampled.prefix.assign(represented=True, rate=rate)
    if args.cache == "prefix":
        from kvviz import prefix_cache

        replay = prefix_cache.prepare(trace)
        progress.estimate_s = prefix_cache.cost(replay, len(policies) * len(capacities)).seconds
        return prefix_cache.sweep(replay, policies, capacities, progress=progress)
    if rate is None:
        return curve_of(sweep(trace, policies, capacities, progress=progress), args.prefix)
    from kvviz.eviction.shards import sampled_curve

    progress.total = None
    curve = sampled_curve(trace, policies, capacities, rate).table
    progress.close()
    _say_sampled(curve)
    return curve


def _say_sampled(curve) -> None:
    """On stderr: the rate, each policy's largest error bound (flagging the capacities where it is
    over the limit, with the rate that would hold them), and every capacity the sample cannot
    represent for some policy (its rows say so in the CSV)."""
    from kvviz.eviction.shards import flags

    rate = curve["rate"].iloc[0]
    print(
        f"kvviz hitcurve: sampled at rate {rate:.4g} (SHARDS-adj; LRU exact); error bound per policy over the "
        "capacities it represents (from disjoint samples at the same rate, docs/eviction.md):",
        file=sys.stderr,
    )
    finite = curve[curve["capacity"] != math.inf]
    flagged = {f.policy: f for f in flags(curve)}
    for policy in curve["policy"].unique():
        rows = finite[finite["policy"] == policy]
        if not rows["represented"].any():
            print(f"  {policy}: none (the sample represents none of its finite capacities)", file=sys.stderr)
            continue
        bound = rows.loc[rows["represented"], "error_estimate"].max()
        print(f"  {policy}: {bound:.3f}{_not_reliable(flagged.get(policy))}", file=sys.stderr)
    for capacity, rows in finite[~finite["represented"]].groupby("capacity", sort=True):
        print(f"kvviz hitcurve: {_unrepresented(int(capacity), rate, list(rows['policy']))}", file=sys.stderr)


def _say_prefix_sampled(sampled, rate: float, capacities: tuple[float, ...]) -> None:
    """On stderr: the request sample's rate, what it kept, each policy's error estimate, and the
    capacities it dropped."""
    from kvviz.eviction.grid import MIN_SAMPLED_CAPACITY

    sample = sampled.sample
    print(
        f"kvviz hitcurve: prefix cache sampled at rate {rate:.4g}: {sample.requests_kept:,} of "
        f"{sample.requests:,} requests kept whole by where they leave the {sample.trunk:,} trunk blocks "
        f"({sample.access_share:.2%} of the accesses); error estimate per policy (the spread of disjoint "
        "samples at this rate, docs/eviction.md):",
        file=sys.stderr,
    )
    finite = sampled.prefix[sampled.prefix["capacity"] != math.inf]
    for policy, rows in finite.groupby("policy", sort=False):
        print(f"  {policy}: {rows['error_estimate'].max():.3f}", file=sys.stderr)
    dropped = sorted(set(capacities) - set(sampled.capacities))
    if dropped:
        print(
            f"kvviz hitcurve: capacities {', '.join(str(int(c)) for c in dropped)} leave fewer than "
            f"{MIN_SAMPLED_CAPACITY} sampled blocks beyond the trunk and are left out; raise --sample or use "
            "--sample exact",
            file=sys.stderr,
        )


def _not_reliable(flag) -> str:
    """The capacities where a policy's bound is over the limit, and the rate that holds them."""
    if flag is None:
        return ""
    where = ", ".join(str(int(c)) for c in flag.capacities)
    way_out = "use --sample exact" if flag.suggested_rate >= 1 else f"raise --sample to {flag.suggested_rate:.2g}"
    return f"  not reliable at this rate at {where} blocks: {way_out}"


def _unrepresented(capacity: int, rate: float, policies: list[str]) -> str:
    """Why ``capacity`` is below what a ``rate`` sample represents for ``policies``, and the way out."""
    from kvviz.eviction.grid import min_sampled_capacity

    needs: dict[int, list[str]] = {}
    for policy in policies:
        needs.setdefault(min_sampled_capacity(policy), []).append(policy)
    wanted = ", ".join(
        f"{', '.join(names)} {'needs' if len(names) == 1 else 'need'} at least {need:,}"
        for need, names in sorted(needs.items())
    )
    way_out = (
        "use --sample exact"
        if max(needs) >= capacity
        else f"use --sample {rate_for(max(needs), capacity)} or more, or exact"
    )
    return (
        f"capacity {capacity} is below what a {rate * 100:.3g}% sample can represent: "
        f"{round(capacity * rate)} sampled blocks, and {wanted} (rows marked represented=false); {way_out}"
    )


def rate_for(sampled_blocks: int, capacity: int) -> str:
    """The rate that gives ``capacity`` at least ``sampled_blocks`` sampled blocks, rounded up to two
    significant digits (in exact fractions: a float could round it down, below what is needed)."""
    needed = Fraction(sampled_blocks, capacity)
    step = Fraction(10) ** (math.floor(math.log10(needed)) - 1)
    return f"{float(math.ceil(needed / step) * step):.3g}"
