"""Running a grid of independent replays: a local process pool, or a Ray cluster.

Each point of a size search is one replay of the same prepared trace with other tier sizes, so the
points share nothing but the trace. Locally the trace goes to each worker process once (the pool's
initializer) and the points are spread over the cores; on Ray it is put in the object store once
(``ray.put``) and every task reads it from there, so a cluster runs as many points at a time as it
has CPUs. Ray is an optional extra (``pip install .[ray]``); it is imported only when asked for.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from kvviz.common.errors import InputError, quote
from kvviz.prefix_cache.replay import PrefixReplay
from kvviz.tiers.config import TierConfig
from kvviz.tiers.replay import cost, replay

_TRACE: PrefixReplay | None = None
POOL_WORTH_S = 5.0
"""Estimated CPU seconds of a grid below which worker processes cost more to start than they save."""
_ADDRESS = re.compile(r"local|auto|(ray://)?[A-Za-z0-9.-]{1,253}:[0-9]{1,5}")


def check_address(address: str | None) -> None:
    """A Ray address: ``local`` (start one here), ``auto`` (the cluster this machine is in) or ``host:port``
    (``ray://host:port`` through Ray Client); refused before any work otherwise."""
    if address is not None and not _ADDRESS.fullmatch(address):
        raise InputError(
            f"--ray takes local, auto or HOST:PORT (ray://HOST:PORT for Ray Client), got '{quote(address)}'",
            field="ray",
        )


def point(prepared: PrefixReplay, config: TierConfig) -> tuple[float, ...]:
    """One size's answer: (DRAM GiB, storage GiB, $/h, hit ratio, TTFT p50, p90, p99)."""
    result = replay(prepared, config, baselines=False)
    ttft = result.ttft()
    storage = config.remote_gib if config.storage == "remote" else config.ssd_gib
    return (config.dram_gib, storage, result.cost_per_hour, result.hit_ratio, ttft["p50"], ttft["p90"], ttft["p99"])


def _keep(prepared: PrefixReplay) -> None:
    global _TRACE
    _TRACE = prepared


def _local_point(config: TierConfig) -> tuple[float, ...]:
    assert _TRACE is not None
    return point(_TRACE, config)


def run_points(
    prepared: PrefixReplay, configs: Sequence[TierConfig], *, ray_address: str | None = None, workers: int | None = None
) -> list[tuple[float, ...]]:
    """Every config's point, in order: on Ray at ``ray_address`` ("local" starts one here), else
    on ``workers`` processes (default: one per core, or this process alone for a grid shorter
    than starting the workers)."""
    if ray_address is not None:
        return _on_ray(prepared, configs, ray_address)
    short = cost(prepared, len(configs)).seconds < POOL_WORTH_S
    n = min(workers or (1 if short else os.cpu_count() or 1), len(configs))
    if n <= 1:
        return [point(prepared, c) for c in configs]
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(n, mp_context=context, initializer=_keep, initargs=(prepared,)) as pool:
        return list(pool.map(_local_point, configs))


def _on_ray(prepared: PrefixReplay, configs: Sequence[TierConfig], address: str) -> list[tuple[float, ...]]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'kvviz[ray]'", field="ray") from None
    try:
        if not ray.is_initialized():
            ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise InputError(
            f"cannot reach the Ray cluster at '{quote(address)}': {quote(str(exc), 120)}", field="ray"
        ) from None
    trace = ray.put(prepared)
    task = ray.remote(point)
    return ray.get([task.remote(trace, c) for c in configs])
