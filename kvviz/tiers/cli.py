"""The deployment options ``kvviz tiers`` and ``kvviz plan`` share, and how they print their answer.

Sizes take units (``500GiB``, ``2TiB``; ``kvviz.common.args.size_gib``), prices are dollars per
device-hour; an option that does not apply to the deployment given is refused, naming it. On a
terminal the answer is a short summary in words (``--json`` for the JSON); piped, it is JSON.
Warnings go to stderr as well as into the JSON's ``warnings``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from kvviz.common import args as A
from kvviz.common import hardware as hw
from kvviz.common.errors import InputError, quote
from kvviz.tiers.config import DEFAULT_KV_FRACTION, POLICIES, WRITE_ALIASES, TierConfig

fraction = A.bounded_float(0.0, 1.0, lo_open=True)


def measured_ttft(text: str) -> tuple[int, float]:
    """``TOKENS:SECONDS``: one prompt's length and the TTFT measured for it on an idle server."""
    tokens, _, seconds = text.partition(":")
    try:
        return A.bounded_int(1, 10_000_000)(tokens), A.bounded_float(0.0, 3600.0, lo_open=True)(seconds)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected TOKENS:SECONDS (a prompt's length and its measured TTFT, e.g. 8000:0.25), got '{quote(text)}'"
        ) from None


measured_ttft.__name__ = "TOKENS:SECONDS"


PRICE_FLAGS = {
    "--gpu-price": "rent: $ per GPU-hour",
    "--dram-price": "rent: $ per GB-hour of DRAM",
    "--ssd-price": "rent: $ per TB-hour of SSD",
    "--remote-price": "rent: $ per GB-hour of the remote pool",
    "--gpu-cost": "buy: $ per GPU, its share of the server (default: the H100's, sourced; other GPUs: required)",
    "--gpu-watts": "buy: watts per GPU, its share of the server's draw (default: the H100's; others: required)",
    "--dram-cost": f"buy: $ per GB of DRAM (default {hw.DRAM_PURCHASE.value:g}; the remote pool is DRAM too)",
    "--ssd-cost": f"buy: $ per TB of SSD (default {hw.SSD_PURCHASE.value:g})",
    "--electricity": f"buy: $ per kWh (default {hw.ELECTRICITY.value:g})",
}
"""The price options, each a number ≥ 0: hourly when renting, purchase prices (and power) when buying."""


def add_deployment_arguments(parser: argparse.ArgumentParser) -> None:
    """The hardware, the tier sizes, the cache's policies and the prices."""
    hw_group = parser.add_argument_group("the hardware")
    hw_group.add_argument("--model", required=True, help="a model preset (kvsize --list)")
    hw_group.add_argument("--gpu", required=True, help=f"a GPU preset: {', '.join(hw.GPUS)}")
    hw_group.add_argument("--gpus", type=A.bounded_int(1, 4096), default=1, help="GPUs per instance (default 1)")
    hw_group.add_argument(
        "--tp", type=A.bounded_int(1, 4096), default=None, help="tensor-parallel size (default: --gpus)"
    )
    hw_group.add_argument(
        "--kv-fraction",
        type=fraction,
        default=None,
        help=f"share of HBM a server reserves for weights and KV (default {DEFAULT_KV_FRACTION})",
    )
    hw_group.add_argument(
        "--hbm", type=A.size_gib, default=None, metavar="SIZE", help="KV HBM per instance (overrides the derived)"
    )
    hw_group.add_argument("--dram", type=A.size_gib, default=0.0, metavar="SIZE", help="host DRAM for KV per instance")
    hw_group.add_argument("--ssd", type=A.size_gib, default=None, metavar="SIZE", help="SSD for KV per instance")
    hw_group.add_argument(
        "--ssd-drives", type=A.bounded_int(1, 64), default=None, help="NVMe drives per instance (default 1)"
    )
    hw_group.add_argument(
        "--remote", type=A.size_gib, default=None, metavar="SIZE", help="a remote KV pool for the cluster"
    )
    hw_group.add_argument(
        "--remote-gbps",
        type=A.bounded_float(0.001, 1e5, lo_open=True),
        default=None,
        help="each instance's network to the pool, GB/s (default 50)",
    )
    hw_group.add_argument(
        "--instances",
        type=A.bounded_int(1, 100_000),
        default=None,
        help="prefill instances (default 1; plan searches them unless given)",
    )
    mfu = hw_group.add_mutually_exclusive_group()
    mfu.add_argument(
        "--mfu",
        type=fraction,
        default=None,
        help=f"model FLOPs utilisation of prefill (default {hw.PUBLISHED_PREFILL_MFU.value}, a published "
        "measurement: CacheBlend's per-layer prefill times)",
    )
    mfu.add_argument(
        "--mfu-from-ttft",
        type=measured_ttft,
        default=None,
        metavar="TOKENS:SECONDS",
        help="fit the MFU to one TTFT you measured on an idle server: a prompt of TOKENS took SECONDS",
    )
    cache = parser.add_argument_group("the cache")
    cache.add_argument("--policy", choices=POLICIES, default="lru", help="eviction policy of every tier (default lru)")
    cache.add_argument(
        "--write-policy",
        choices=tuple(WRITE_ALIASES),
        default="through",
        help="when KV is copied to host memory (default through)",
    )
    cache.add_argument(
        "--no-overlap",
        dest="overlap",
        action="store_false",
        help="load every layer before computing (default: layer by layer under the compute, as SGLang loads)",
    )
    cache.add_argument(
        "--load",
        choices=("all", "fastest"),
        default="all",
        help="all: load every hit below GPU memory, as SGLang does (default); fastest: recompute a request's "
        "lower-tier hits when that is faster",
    )
    parser.add_argument("--json", action="store_true", help="print JSON on a terminal too (piped output is JSON)")
    prices = parser.add_argument_group("prices (default: rented, each device's hourly list price; docs/tiers.md)")
    prices.add_argument(
        "--prices",
        choices=("rent", "buy"),
        default="rent",
        help="rent: hourly list prices (default); buy: purchase prices written off over --years, plus the GPUs' power",
    )
    for flag, words in PRICE_FLAGS.items():
        prices.add_argument(flag, type=A.non_negative, default=None, help=words)
    prices.add_argument(
        "--years",
        type=A.bounded_float(0.0, 50.0, lo_open=True),
        default=None,
        help=f"buy: years the hardware is written off over (default {hw.SERVER_LIFE.value:g})",
    )


RENT_FLAGS = ("--gpu-price", "--dram-price", "--ssd-price", "--remote-price")
BUY_FLAGS = ("--gpu-cost", "--gpu-watts", "--dram-cost", "--ssd-cost", "--electricity", "--years")


def prices_from_args(args: argparse.Namespace, gpu: hw.GPUSpec) -> hw.DevicePrices:
    """Hourly prices as rented (each default its list price) or as bought (purchase prices over the years,
    plus power); the other mode's options are refused, and a GPU with no sourced purchase price needs it."""
    if args.prices == "rent":
        A.refuse(args, BUY_FLAGS, "applies to bought hardware: give --prices buy")
        base = hw.DevicePrices.for_gpu(gpu)
        return hw.DevicePrices(
            base.gpu_per_hour if args.gpu_price is None else args.gpu_price,
            base.dram_per_gb_hour if args.dram_price is None else args.dram_price,
            base.ssd_per_tb_hour if args.ssd_price is None else args.ssd_price,
            base.remote_per_gb_hour if args.remote_price is None else args.remote_price,
        )
    A.refuse(
        args, RENT_FLAGS, "is an hourly rent: with --prices buy give purchase prices (--gpu-cost, --dram-cost, ...)"
    )
    price, power = hw.purchase_defaults(gpu)
    for flag, value, default in (("--gpu-cost", args.gpu_cost, price), ("--gpu-watts", args.gpu_watts, power)):
        if value is None and default is None:
            what = "purchase price" if flag == "--gpu-cost" else "power draw"
            raise InputError(
                f"--prices buy: no published {what} is stored for {gpu.name} servers; give {flag} "
                "(per GPU, its share of the server)"
            )
    chosen = {
        "gpu_cost": args.gpu_cost if args.gpu_cost is not None else price.value,
        "gpu_watts": args.gpu_watts if args.gpu_watts is not None else power.value,
        "dram_per_gb": args.dram_cost,
        "ssd_per_tb": args.ssd_cost,
        "kwh": args.electricity,
        "years": args.years,
    }
    return hw.Purchase(**{k: v for k, v in chosen.items() if v is not None}).hourly()


def _refuse_what_does_not_apply(args: argparse.Namespace) -> None:
    if A.given(args, "hbm"):
        A.refuse(args, ["--kv-fraction"], "does not apply with --hbm, which gives the KV HBM itself")
    if not A.given(args, "ssd"):
        A.refuse(args, ["--ssd-drives"], "applies to an SSD tier: give --ssd")
    if not A.given(args, "remote"):
        A.refuse(args, ["--remote-gbps", "--remote-price"], "applies to a remote pool: give --remote")
    elif A.given(args, "ssd"):
        A.refuse(args, ["--remote"], "and --ssd are both a storage tier; give one")


def config_from_args(args: argparse.Namespace) -> TierConfig:
    """The deployment the options describe (an option that does not apply is refused first)."""
    _refuse_what_does_not_apply(args)
    gpu = hw.gpu(args.gpu)
    prices = prices_from_args(args, gpu)
    optional = {
        "tp": args.tp if args.tp is not None else args.gpus,
        "kv_fraction": args.kv_fraction if args.kv_fraction is not None else DEFAULT_KV_FRACTION,
        "ssd_gib": args.ssd or 0.0,
        "ssd_drives": args.ssd_drives or 1,
        "remote_gib": args.remote or 0.0,
        "remote_gb_s": args.remote_gbps or 50.0,
    }
    model = hw.model(args.model)
    mfu = hw.PUBLISHED_PREFILL_MFU.value if args.mfu is None else args.mfu
    if args.mfu_from_ttft is not None:
        tp = optional["tp"]
        mfu = hw.fit_mfu(model, gpu, tp, *args.mfu_from_ttft)
    return TierConfig(
        model,
        gpu,
        gpus=args.gpus,
        hbm_gib=args.hbm,
        dram_gib=args.dram,
        instances=args.instances or 1,
        policy=args.policy,
        write_policy=args.write_policy,
        overlap=args.overlap,
        mfu=mfu,
        load="load" if args.load == "all" else "fastest",
        prices=prices,
        **optional,
    )


def _finite(value: object) -> object:
    """JSON has no infinity: an unbounded size or a ratio of nothing prints as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json(summary: dict[str, object]) -> str:
    return json.dumps(_finite(summary), indent=2) + "\n"


def emit(args: argparse.Namespace, summary: dict[str, object], words: list[str]) -> None:
    """Warnings on stderr, then the answer: JSON when asked or piped, else ``words``, a line each."""
    for warning in summary.get("warnings", []):
        sys.stderr.write(f"warning: {warning}\n")
    if args.json or not sys.stdout.isatty():
        sys.stdout.write(to_json(summary))
    else:
        sys.stdout.write("\n".join(words) + "\n")


def figure(value: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant figures, thousands separated (``None``: "n/a")."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


STORAGE_WORDS = {"ssd": "SSD per instance", "remote": "remote pool for the cluster"}


def tier_words(s: dict) -> list[str]:
    """``kvviz tiers``'s summary on a terminal."""
    d, t, none = s["deployment"], s["ttft_s"], s["ttft_no_cache_s"]
    storage, name = d["storage"], STORAGE_WORDS[d["storage"]]
    hits = s["hit_blocks"]
    per_100 = [100 * hits[k] / max(s["accesses"], 1) for k in ("gpu", "dram", storage)]
    return [
        f"{d['instances']:,} instance(s) of {d['gpus']} × {d['gpu']} serving {d['model']}: "
        f"{figure(d['hbm_gib'])} GiB of GPU memory for KV, {figure(d['dram_gib'])} GiB of DRAM and "
        f"{figure(d['ssd_gib'] if storage == 'ssd' else d['remote_gib'])} GiB of {name}.",
        f"Hits: {figure(100 * s['hit_ratio'])}% of block accesses ({per_100[0]:.1f} GPU, {per_100[1]:.1f} DRAM, "
        f"{per_100[2]:.1f} {name.split(' ')[0]}); an infinite cache: {figure(100 * s['ceiling_hit_ratio'])}%.",
        f"TTFT p50 {figure(t['p50'])} s, p90 {figure(t['p90'])} s, p99 {figure(t['p99'])} s "
        f"(no cache: p90 {figure(none['p90'])} s); offered load {figure(s['offered_load'])} of the replicas.",
        f"Cost ({d['prices']['basis']}): ${s['cost_per_hour']:,.2f} per hour for the cluster; "
        f"${figure(s['cost_per_million_input_tokens'])} per million input tokens at the trace's own rate "
        f"(${figure(s['cost_per_million_input_tokens_fully_busy'])} if every GPU were busy).",
        "Decode is not simulated. --json prints every number.",
    ]


ROUTER_LOADS_ALL = (
    "does not apply with --router: each instance behind a router loads every block its tiers hold, "
    "from one drive per SSD"
)


def refuse_for_router(args: argparse.Namespace, searched: bool = False) -> None:
    """With ``--router``: at least two instances (unless ``searched`` and not given), and no option of the
    tiered replay's loads the routed cluster does not model (refused, naming it, rather than ignored)."""
    if not (searched and args.instances is None) and (args.instances or 1) < 2:
        raise InputError("--router needs --instances 2 or more: with one instance there is nothing to choose")
    offtier = {
        "--ssd-drives": args.ssd_drives is not None,
        "--no-overlap": not args.overlap,
        "--load": args.load != "all",
    }
    for flag, given in offtier.items():
        if given:
            raise InputError(f"{flag} {ROUTER_LOADS_ALL}")


def refuse_for_lmcache(args: argparse.Namespace) -> None:
    """With vLLM + LMCache: HiCache's write policy does not apply (LMCache stores every chunk of a prompt after
    its prefill), refused in one line."""
    if args.write_policy != "through":
        raise InputError(
            "--write-policy applies to SGLang's HiCache (--engine sglang): LMCache stores every chunk of a prompt "
            "in each of its backends after prefill"
        )


def _fetched(s: dict) -> str:
    """The blocks the router had copied from another instance's cache (the Conductor's fetch), if any."""
    n = s["fetched_blocks"]
    return f", and {100 * n / max(s['accesses'], 1):.1f}% fetched from another instance" if n else ""


def _lower(s: dict) -> str:
    """The share of block accesses found in host DRAM and in storage, when the instances have them."""
    found, n = s["found_blocks"], max(s["accesses"], 1)
    if "lmcache" in s:
        return _loaded(s)
    if not s["dram_blocks_per_instance"]:
        return ""
    store = [v for k, v in found.items() if k not in ("gpu", "dram")][0]
    return (
        f" ({figure(100 * found['gpu'] / n)}% on the GPU, {figure(100 * found['dram'] / n)}% in host DRAM, "
        f"{figure(100 * store / n)}% in storage: {s['storage_is']})"
    )


LMCACHE_WORDS = {"cpu": "its CPU memory", "disk": "its local disk", "remote": "the shared remote backend"}


def _loaded(s: dict) -> str:
    """The share of prompt tokens found on the GPU and loaded from each LMCache backend the instances have."""
    lm, found, n = s["lmcache"], s["found_tokens"], max(s["input_tokens"], 1)
    sizes = {
        "cpu": lm["cpu_chunks_per_instance"],
        "disk": lm["disk_chunks_per_instance"],
        "remote": lm["remote_chunks"],
    }
    on = [b for b, size in sizes.items() if size is None or size > 0]
    if not on:
        return ""
    each = ", ".join(f"{figure(100 * found[b] / n)}% from {LMCACHE_WORDS[b]}" for b in on)
    return f"; of the prompt tokens, {figure(100 * found['gpu'] / n)}% were on the GPU and LMCache loaded {each}"


def routed_words(s: dict) -> list[str]:
    """``kvviz tiers --router``'s summary on a terminal: the router's numbers, then the reference."""
    d, t, ref = s["deployment"], s["ttft_s"], s["reference"]
    return [
        f"{s['instances']:,} instances of {d['gpus']} × {d['gpu']} serving {d['model']} behind {s['router']}, each "
        f"with its own {figure(d['hbm_gib'])} GiB of GPU memory for KV ({s['gpu_blocks_per_instance']:,} blocks).",
        f"Hits: {figure(100 * s['hit_ratio'])}% of block accesses{_fetched(s)}{_lower(s)}. Reference (not a "
        f"deployment): one shared cache of all {ref['gpu_blocks']:,} blocks"
        f"{' and all their DRAM' if s['dram_blocks_per_instance'] else ''} would hit "
        f"{figure(100 * ref['hit_ratio'])}%.",
        f"TTFT p50 {figure(t['p50'])} s, p90 {figure(t['p90'])} s, p99 {figure(t['p99'])} s; load imbalance "
        f"{s['load_imbalance']:.2f} (the busiest instance's prefill time over the mean); offered load "
        f"{figure(s['offered_load'])} of the instances.",
        f"Cost: ${s['cost_per_hour']:,.2f} per hour for the cluster; ${figure(s['cost_per_million_input_tokens'])} "
        "per million input tokens at the trace's own rate.",
        f"Decode is not simulated (a request holds its place {s['decode_s_per_token']:g} s per output token). "
        "--json prints every number.",
    ]


def target_words(s: dict) -> str:
    """The search's targets in words: "TTFT p90 within 2 s" (and p99 when given)."""
    p99 = "" if s["target_p99_ttft_s"] is None else f" and p99 within {s['target_p99_ttft_s']:g} s"
    return f"TTFT p90 within {s['target_p90_ttft_s']:g} s{p99}"


ENGINE_WORDS = {"sglang": "SGLang", "vllm-lmcache": "vLLM + LMCache"}
"""Each serving stack as the answers name it."""


KEEPS_WORDS = {
    "dram_blocks": "{} blocks of host DRAM",
    "ssd_blocks": "{} blocks of SSD",
    "remote_pool_blocks_shared": "the remote pool of {} blocks they share",
    "cpu_chunks": "LMCache's CPU backend of {} chunks",
    "disk_chunks": "its local disk backend of {} chunks",
    "remote_chunks_shared": "the remote backend of {} chunks they share",
}


def keeps_words(keeps: dict) -> str:
    """What each instance keeps below its GPU, in words (empty: nothing)."""
    sizes = [(k, v) for k, v in keeps.items() if k in KEEPS_WORDS and (v is None or v > 0)]
    each = [KEEPS_WORDS[k].format("unbounded" if v is None or math.isinf(v) else f"{v:,.0f}") for k, v in sizes]
    return f" and {', '.join(each)}" if each else ""


def routed_search_words(s: dict) -> list[str]:
    """``kvviz plan --router``'s answer on a terminal."""
    target, engine = target_words(s), ENGINE_WORDS[s["engine"]]
    how = f"{s['runs']:,} deployment(s) run behind {s['router']} on {engine}, cheapest first."
    best = s["best"]
    if best is None:
        stop = " (stopped at the search's limit of runs)" if s["stopped_at_run_limit"] else ""
        return [
            f"No instance count behind {s['router']} on {engine} meets {target}{stop}: faster GPUs or a looser target.",
            how,
        ]
    shared = figure(100 * best["shared_hit_ratio"])
    return [
        f"Cheapest behind {s['router']} on {engine} meeting {target}: {best['instances']:,} instances of "
        f"{best['gpus']} GPU(s), each with its own GPU memory{keeps_words(best['each_instance_keeps'])}, at "
        f"${best['cost_per_hour']:,.2f} per hour for the "
        f"whole cluster (${best['cost_per_instance_hour']:,.2f} per instance); hit ratio "
        f"{figure(100 * best['hit_ratio'])}% (one shared cache of the same GPU memory, a reference and not a "
        f"deployment: {shared}%).",
        f"TTFT p50 {figure(best['ttft_p50_s'])} s, p90 {figure(best['ttft_p90_s'])} s, p99 "
        f"{figure(best['ttft_p99_s'])} s; load imbalance {best['load_imbalance']:.2f}.",
        how,
        "Decode is not simulated. --json prints every deployment run.",
    ]


def routers_search_words(s: dict) -> list[str]:
    """``kvviz plan --router all``'s answer on a terminal: the cheapest overall (its router and engine), then
    each router's on each engine."""
    target, best = target_words(s), s["best"]
    engines = s["engines"] if "engines" in s else {s["engine"]: s["routers"]}
    one = len(engines) == 1
    each = []
    for engine, searches in engines.items():
        for name, r in searches.items():
            b, label = r["best"], name if one else f"{name} on {ENGINE_WORDS[engine]}"
            each.append(
                f"{label}: none within the search" if b is None else
                f"{label}: {b['instances']:,} at ${b['cost_per_hour']:,.2f}/h (p90 {figure(b['ttft_p90_s'])} s)"
            )  # fmt: skip
    routers = len(next(iter(engines.values())))
    stacks = f"{routers} routers" + ("" if one else f" on {len(engines)} engines")
    how = f"{s['runs']:,} deployment(s) run, each router's cheapest first. Each router's cheapest: {'; '.join(each)}."
    if best is None:
        return [f"No router, engine and instance count searched meets {target}: faster GPUs or a looser target.", how]
    return [
        f"Cheapest of {stacks} meeting {target}: {best['instances']:,} instances of {best['gpus']} "
        f"GPU(s) behind {best['router']} on {ENGINE_WORDS[best['engine']]}, each with its own GPU memory"
        f"{keeps_words(best['each_instance_keeps'])}, at "
        f"${best['cost_per_hour']:,.2f} per hour for the whole cluster (${best['cost_per_instance_hour']:,.2f} per "
        f"instance); TTFT p50 {figure(best['ttft_p50_s'])} s, p90 {figure(best['ttft_p90_s'])} s, p99 "
        f"{figure(best['ttft_p99_s'])} s.",
        how,
        "Decode is not simulated. --json prints every deployment run.",
    ]


def _deployment_words(row: dict, storage_gib: float) -> str:
    dram = f"{figure(row['dram_gib'])} GiB of host DRAM" if row["dram_gib"] else "no host DRAM"
    ssd = f"{figure(row['ssd_tb'])} TB of SSD ({row['ssd_drives']} drive(s))" if storage_gib else "no SSD"
    return f"{row['instances']:,} instance(s) of {row['gpus']} GPU(s), each with {dram} and {ssd}"


def search_words(s: dict) -> list[str]:
    """``kvviz plan``'s search on a terminal: the answer as a sentence, then how it was found."""
    target = target_words(s)
    gpu = s["deployment"]["gpu"]
    how = (
        f"Searched on these steps: {s['steps']}. {s['replayed']:,} deployment(s) replayed, cheapest first; "
        f"{s['ruled_out_by_bound']:,} instance count(s) ruled out without a replay (even an infinite cache "
        "could not meet the target on them)."
    )
    best = s["best"]
    if best is None:
        stop = " (stopped at the search's limit of replays or work)" if s["stopped_at_replay_limit"] else ""
        return [f"no deployment searched meets {target}{stop}: faster GPUs or a looser target", how]
    return [
        f"Cheapest deployment meeting {target}: {_deployment_words(best, best['storage_gib'])} ({gpu}), "
        f"at ${best['cost_per_hour']:,.2f} per hour for the whole cluster (${best['cost_per_instance_hour']:,.2f} "
        f"per instance; {s['deployment']['prices']['basis']}).",
        f"Its TTFT: p50 {figure(best['ttft_p50_s'])} s, p90 {figure(best['ttft_p90_s'])} s, "
        f"p99 {figure(best['ttft_p99_s'])} s; hit ratio {figure(100 * best['hit_ratio'])}%.",
        how,
        "Decode is not simulated. --json prints every deployment tried.",
    ]


def grid_words(s: dict) -> list[str]:
    """``kvviz plan``'s grid on a terminal."""
    best = s["best"]
    head = f"{s['sizes_tried']} DRAM and storage sizes tried for one deployment; target TTFT p90 within "
    head += f"{s['target_p90_ttft_s']:g} s."
    if best is None:
        return [head, "None of them meets it.", "--json prints every size tried and each tier's reaches."]
    return [
        head,
        f"Cheapest that meets it: {figure(best['dram_gib'])} GiB of DRAM and {figure(best['storage_gib'])} GiB of "
        f"storage per instance, at ${best['cost_per_hour']:,.2f} per hour for the whole cluster; TTFT p90 "
        f"{figure(best['ttft_p90_s'])} s, p99 {figure(best['ttft_p99_s'])} s.",
        "--json prints every size tried and each tier's reaches.",
    ]
