"""``python -m kvviz plan TRACE --model M --gpu G ... --target-p90-ttft S``: what to buy, in words on a
terminal and as JSON with ``--json`` or when piped.

Without sizes it searches the cheapest deployment (instances, GPUs per instance, DRAM in DIMMs, SSD in
drives) meeting the targets, exactly on those steps; with ``--dram-sizes``/``--ssd-sizes`` it replays
that grid for one deployment, with each tier's reaches, on a process pool or a Ray cluster.
"""

from __future__ import annotations

import argparse

from kvviz.common import args as A
from kvviz.common import budget
from kvviz.common.errors import InputError, quote
from kvviz.traces.cli import add_trace_arguments

NAME = "plan"
HELP = (
    "Find the cheapest deployment whose TTFT p90 (and p99 with --target-p99-ttft) meets a target: instances "
    "(and GPUs per instance with --search-gpus), host DRAM in 32 GiB DIMMs and SSD in 3.84 TB drives, exact on "
    "those steps. With --dram-sizes/--ssd-sizes: replay that grid for the deployment given, with the capacity "
    "of each tier reaching 80/90/95%% of the infinite cache's hits, on a local process pool or a Ray cluster. With "
    "--router R (or several, or all): each router's cheapest instance count, each instance with its own GPU cache "
    "and the --dram/--ssd given (HiCache's tiers, or LMCache's CPU and disk backends with --engine vllm-lmcache)."
)


def sizes(text: str) -> list[float]:
    """A comma-separated list of sizes with units (``0,64GiB,1TiB``)."""
    items = [t for t in text.split(",") if t.strip()]
    if not items or len(items) > 50:
        raise argparse.ArgumentTypeError(f"expected 1 to 50 comma-separated sizes, got '{quote(text)}'")
    return [A.size_gib(t) for t in items]


sizes.__name__ = "sizes"


def counts(text: str) -> list[int]:
    """A comma-separated list of GPU counts (``1,2,4,8``)."""
    items = [t for t in text.split(",") if t.strip()]
    if not items or len(items) > 16:
        raise argparse.ArgumentTypeError(f"expected 1 to 16 comma-separated GPU counts, got '{quote(text)}'")
    return sorted({A.bounded_int(1, 64)(t) for t in items})


counts.__name__ = "GPU counts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvviz.tiers.cli import add_deployment_arguments

    add_trace_arguments(parser)
    add_deployment_arguments(parser)
    search = parser.add_argument_group("the search")
    search.add_argument(
        "--target-p90-ttft", type=A.positive, required=True, metavar="S", help="TTFT p90 to meet, seconds"
    )
    search.add_argument(
        "--target-p99-ttft", type=A.positive, default=None, metavar="S", help="also meet this TTFT p99, seconds"
    )
    search.add_argument(
        "--search-gpus",
        type=counts,
        default=None,
        metavar="N,N,...",
        help="GPUs per instance to try (default: --gpus); instances are searched unless --instances is given",
    )
    search.add_argument(
        "--router",
        default=None,
        help="search the instances behind this router, each with its own GPU cache and --dram/--ssd "
        "(round-robin, least-load, prefix-hash, cache-aware, kv-aware, conductor), several (comma-separated) "
        "or all: each router's cheapest deployment and the cheapest of them; default: the instances act as one cache",
    )
    search.add_argument(
        "--engine",
        default=None,
        help="with --router, each instance's stack: sglang (SGLang's radix cache, the default), vllm-lmcache (vLLM's "
        "block pool with LMCache behind it: --dram each instance's CPU backend, --ssd its local disk, --remote one "
        "remote backend for all) or all: each stack's cheapest deployment and the cheapest of them",
    )
    search.add_argument("--dram-sizes", type=sizes, default=None, help="a grid instead: DRAM sizes per instance to try")
    search.add_argument(
        "--ssd-sizes",
        type=sizes,
        default=None,
        help="a grid instead: storage sizes to try (SSD per instance, or the remote pool with --remote)",
    )
    search.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the grid, or the routers' runs, on the Ray cluster at ADDRESS ('local': start one here; "
        "connecting waits at most 30 s)",
    )
    search.add_argument(
        "--workers",
        type=A.bounded_int(1, 1024),
        default=None,
        help="local worker processes for the grid (default: one per core; at most what memory holds) or the "
        "routers' runs (default: this process)",
    )


def run(args: argparse.Namespace) -> int:
    from kvviz.tiers.cli import config_from_args

    grid = args.dram_sizes is not None or args.ssd_sizes is not None
    if args.router is not None:
        return _routed(args)
    if args.engine is not None:
        raise InputError("--engine applies with --router; without one the instances act as one cache, SGLang's HiCache")
    if args.ray is not None:
        A.refuse(args, ["--workers"], "applies to the local process pool; Ray uses the cluster's CPUs")
    if grid:
        A.refuse(args, ["--target-p99-ttft", "--search-gpus"], "applies to the search; a grid is for one deployment")
    else:
        A.refuse(args, ["--ray", "--workers"], "applies to a grid of sizes (--dram-sizes, --ssd-sizes)")
    if any(s == float("inf") for s in (args.dram_sizes or []) + (args.ssd_sizes or [])):
        raise InputError("--dram-sizes and --ssd-sizes must be finite: an unbounded tier has no price")
    config = config_from_args(args)
    return _grid(args, config) if grid else _search(args, config)


def _search(args: argparse.Namespace, config) -> int:
    from kvviz.common.progress import Progress, reading
    from kvviz.tiers.cli import emit, search_words
    from kvviz.tiers.search import Targets, search
    from kvviz.traces.cli import trace_from_args, with_warnings

    if config.storage == "remote":
        raise InputError("--remote: the search buys SSD drives; give --ssd-sizes to try remote pool sizes")
    targets = Targets(args.target_p90_ttft, args.target_p99_ttft)
    instances = [args.instances] if A.given(args, "instances") else None
    with reading(NAME):
        trace = trace_from_args(args)
    budget.replay_memory(budget.TIERED, trace).check()
    with Progress("kvviz plan: searching the deployments", None, "replays") as progress:
        found = search(trace, config, targets, gpus=args.search_gpus, instances=instances, progress=progress.count)
    summary = with_warnings(found.summary(), trace)
    emit(args, summary, search_words(summary))
    return 0


def routers_from(text: str) -> list[str]:
    """``--router``'s routers: one, several comma-separated, or ``all``."""
    from kvviz.cluster import ROUTERS

    return list(ROUTERS) if text.strip().lower() == "all" else [r for r in text.split(",") if r.strip()]


def engines_from(text: str | None) -> list[str]:
    """``--engine``'s engines: one, or ``all`` (default: SGLang)."""
    from kvviz.cluster import ENGINES, parse_engine

    if text is None:
        return ["sglang"]
    return list(ENGINES) if text.strip().lower() == "all" else [parse_engine(text)]


def refuse_for_engines(args: argparse.Namespace, engines: list[str]) -> None:
    """What applies to SGLang's stack only is refused when vLLM + LMCache is searched, in one line (the
    deployment's DRAM, SSD and remote pool are LMCache's backends there)."""
    if "vllm-lmcache" not in engines:
        return
    if args.policy != "lru":
        raise InputError("--policy applies to --engine sglang: vLLM's block pool has no eviction policy to choose")
    from kvviz.tiers.cli import refuse_for_lmcache

    refuse_for_lmcache(args)


def _routed(args: argparse.Namespace) -> int:
    from kvviz.cluster.search import search_stacks
    from kvviz.common.progress import Progress, reading
    from kvviz.tiers.cli import config_from_args, emit, refuse_for_router, routed_search_words, routers_search_words
    from kvviz.tiers.search import Targets
    from kvviz.traces.cli import trace_from_args, with_warnings

    A.refuse(
        args,
        ["--dram-sizes", "--ssd-sizes", "--tp"],
        "does not apply with --router: the search runs each instance count behind the router, each instance "
        "one replica of all its GPUs",
    )
    if args.ray is not None:
        A.refuse(args, ["--workers"], "applies to the local process pool; Ray uses the cluster's CPUs")
    if any(size == float("inf") for size in (args.dram, args.ssd, args.remote)):
        raise InputError("--dram, --ssd and --remote must be finite with --router: the search prices them")
    engines = engines_from(args.engine)
    refuse_for_engines(args, engines)
    refuse_for_router(args, searched=True)
    config = config_from_args(args)
    targets = Targets(args.target_p90_ttft, args.target_p99_ttft)
    instances = [args.instances] if A.given(args, "instances") else None
    routers = routers_from(args.router)
    with reading(NAME):
        trace = trace_from_args(args)
    budget.replay_memory(budget.TIERED, trace).check()
    what = f"kvviz plan: searching behind {len(routers)} router(s) on {len(engines)} engine(s)"
    with Progress(what, None, "runs") as progress:
        found = search_stacks(
            trace,
            config,
            routers,
            engines,
            targets,
            gpus=args.search_gpus,
            instances=instances,
            ray_address=args.ray,
            workers=args.workers,
            progress=progress.count,
        )
    words = routed_search_words if len(found.searches) == 1 else routers_search_words
    summary = with_warnings(found.summary(), trace)
    emit(args, summary, words(summary))
    return 0


def _grid(args: argparse.Namespace, config) -> int:
    from kvviz.common.progress import Progress, reading
    from kvviz.prefix_cache import prepare
    from kvviz.tiers import plan
    from kvviz.tiers.cli import emit, grid_words
    from kvviz.tiers.plan import default_sizes, search_replays
    from kvviz.tiers.replay import cost
    from kvviz.traces.cli import trace_from_args, with_warnings

    with reading(NAME):
        trace = trace_from_args(args)
    budget.replay_memory(budget.TIERED, trace).check()
    prepared = prepare(trace)
    dram, storage = default_sizes(prepared, config)
    points = len(args.dram_sizes or dram) * len(args.ssd_sizes or storage)
    estimate = cost(prepared, search_replays(prepared, points), config.servers).seconds
    with Progress(f"kvviz plan: replaying {points:,} sizes", None, "replays", estimate) as progress:
        found = plan(
            prepared,
            config,
            args.target_p90_ttft,
            dram_sizes=args.dram_sizes,
            storage_sizes=args.ssd_sizes,
            ray_address=args.ray,
            workers=args.workers,
            progress=progress.count,
        )
    summary = with_warnings(found.summary(), trace)
    emit(args, summary, grid_words(summary))
    return 0
