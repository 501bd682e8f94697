"""The deployment options ``kvviz tiers`` and ``kvviz plan`` share, and the JSON they print.

Sizes take units (``500GiB``, ``2TiB``; ``kvviz.common.args.size_gib``), prices are dollars per
device-hour; an option that does not apply to the deployment given is refused, naming it.
"""

from __future__ import annotations

import argparse
import json
import math

from kvviz.common import args as A
from kvviz.common import hardware as hw
from kvviz.tiers.config import DEFAULT_KV_FRACTION, POLICIES, WRITE_ALIASES, TierConfig

fraction = A.bounded_float(0.0, 1.0, lo_open=True)


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
        "--instances", type=A.bounded_int(1, 100_000), default=1, help="prefill instances (default 1)"
    )
    hw_group.add_argument(
        "--mfu", type=fraction, default=hw.DEFAULT_MFU, help=f"model FLOPs utilisation (default {hw.DEFAULT_MFU})"
    )
    cache = parser.add_argument_group("the cache")
    cache.add_argument("--policy", choices=POLICIES, default="lru", help="eviction policy of every tier (default lru)")
    cache.add_argument(
        "--write-policy",
        choices=tuple(WRITE_ALIASES),
        default="through",
        help="when KV is copied to host memory (default through)",
    )
    cache.add_argument("--overlap", action="store_true", help="overlap loads with compute layer by layer")
    prices = parser.add_argument_group("prices (default: each device's list price; docs/tiers.md)")
    prices.add_argument("--gpu-price", type=A.non_negative, default=None, help="$ per GPU-hour")
    prices.add_argument("--dram-price", type=A.non_negative, default=None, help="$ per GB-hour of DRAM")
    prices.add_argument("--ssd-price", type=A.non_negative, default=None, help="$ per TB-hour of SSD")
    prices.add_argument("--remote-price", type=A.non_negative, default=None, help="$ per GB-hour of the remote pool")


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
    base = hw.DevicePrices.for_gpu(gpu)
    prices = hw.DevicePrices(
        base.gpu_per_hour if args.gpu_price is None else args.gpu_price,
        base.dram_per_gb_hour if args.dram_price is None else args.dram_price,
        base.ssd_per_tb_hour if args.ssd_price is None else args.ssd_price,
        base.remote_per_gb_hour if args.remote_price is None else args.remote_price,
    )
    optional = {
        "tp": args.tp if args.tp is not None else args.gpus,
        "kv_fraction": args.kv_fraction if args.kv_fraction is not None else DEFAULT_KV_FRACTION,
        "ssd_gib": args.ssd or 0.0,
        "ssd_drives": args.ssd_drives or 1,
        "remote_gib": args.remote or 0.0,
        "remote_gb_s": args.remote_gbps or 50.0,
    }
    return TierConfig(
        args.model,
        gpu,
        gpus=args.gpus,
        hbm_gib=args.hbm,
        dram_gib=args.dram,
        instances=args.instances,
        policy=args.policy,
        write_policy=args.write_policy,
        overlap=args.overlap,
        mfu=args.mfu,
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
