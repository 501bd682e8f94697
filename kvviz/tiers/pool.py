"""Running a grid of independent replays: a local process pool, or a Ray cluster.

Each point of a size search is one replay of the same prepared trace with other tier sizes, so the
points share nothing but the trace. Locally the trace goes to each worker process once (the pool's
initializer) and the points are spread over the cores; on Ray it is put in the object store once
(``ray.put``) and every task reads it from there, so a cluster runs as many points at a time as it
has CPUs. The routers' search runs its cluster runs the same way (``run_tasks``: any task over one
shared trace). Ray is an optional extra (``pip install .[ray]``); it is imported only when asked for.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from kvviz.common import budget
from kvviz.common.errors import InputError, quote
from kvviz.prefix_cache.replay import PrefixReplay
from kvviz.tiers.config import TierConfig
from kvviz.tiers.replay import cost, replay

_SHARED: object = None
_TASK: Callable | None = None
POOL_WORTH_S = 5.0
"""Estimated CPU seconds of a grid below which worker processes cost more to start than they save."""
_ADDRESS = re.compile(r"local|auto|(ray://)?([A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?):([0-9]{1,5})")
CONNECT_TIMEOUT_S = 30.0
"""The longest a connection to a Ray cluster may take, its address reached first (then Ray's own start)."""
WORKER_BASE_BYTES = 250 * 2**20
"""A worker process's own memory before the trace: the interpreter, numpy, numba and the compiled replay."""


def check_address(address: str | None) -> None:
    """A Ray address: ``local`` (start one here), ``auto`` (the cluster this machine is in) or ``host:port``
    (``ray://host:port`` through Ray Client) with a port from 1 to 65535; refused before any work otherwise."""
    if address is None:
        return
    match = _ADDRESS.fullmatch(address)
    if not match:
        raise InputError(
            f"--ray takes local, auto or HOST:PORT (ray://HOST:PORT for Ray Client), got '{quote(address)}'",
            field="ray",
        )
    if match.group(3) is not None and not 1 <= int(match.group(3)) <= 65535:
        raise InputError(f"the port must be from 1 to 65535, got {match.group(3)}", field="ray")


def free_memory_bytes() -> int:
    """Memory this process may still use (``kvviz.common.budget.free_memory``: the machine's, a control
    group's, ``ulimit -v``'s or ``$KVVIZ_MEMORY_GIB``'s; where none can be read, the physical memory)."""
    free = budget.free_memory()
    return free if free is not None else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def worker_bytes(prepared: PrefixReplay) -> int:
    """One worker's memory: its own, the trace's arrays, and a replay's working copies of them."""
    arrays = sum(a.nbytes for a in (prepared.nodes, prepared.parent, prepared.depth, prepared.offsets))
    return WORKER_BASE_BYTES + 3 * (arrays + prepared.input_lengths.nbytes + prepared.timestamps_ms.nbytes)


def most_workers(prepared: PrefixReplay) -> int:
    """The most worker processes the free memory holds (at least one: the calling process)."""
    return max(1, free_memory_bytes() // worker_bytes(prepared))


def check_workers(prepared: PrefixReplay, workers: int | None) -> None:
    """Refuse more workers than the free memory holds, naming what each needs."""
    fit = most_workers(prepared)
    if workers is not None and workers > fit:
        raise InputError(
            f"--workers {workers}: each worker needs about {worker_bytes(prepared) / 2**20:,.0f} MiB (the process "
            f"and this trace's arrays) and {free_memory_bytes() / 2**20:,.0f} MiB are free; give at most {fit}",
            field="workers",
        )


def point(prepared: PrefixReplay, config: TierConfig) -> tuple[float, ...]:
    """One size's answer: (DRAM GiB, storage GiB, $/h, hit ratio, TTFT p50, p90, p99)."""
    result = replay(prepared, config, baselines=False)
    ttft = result.ttft()
    storage = config.remote_gib if config.storage == "remote" else config.ssd_gib
    return (config.dram_gib, storage, result.cost_per_hour, result.hit_ratio, ttft["p50"], ttft["p90"], ttft["p99"])


T = TypeVar("T")
R = TypeVar("R")


def _keep(shared: object, task: Callable) -> None:
    global _SHARED, _TASK
    _SHARED, _TASK = shared, task


def _local(item: object) -> object:
    assert _TASK is not None
    return _TASK(_SHARED, item)


def run_points(
    prepared: PrefixReplay, configs: Sequence[TierConfig], *, ray_address: str | None = None, workers: int | None = None
) -> list[tuple[float, ...]]:
    """Every config's point, in order: on Ray at ``ray_address`` ("local" starts one here), else
    on ``workers`` processes (default: one per core, or this process alone for a grid shorter
    than starting the workers)."""
    short = cost(prepared, len(configs)).seconds < POOL_WORTH_S
    return run_tasks(prepared, prepared, point, configs, ray_address=ray_address, workers=workers, short=short)


def run_tasks(
    prepared: PrefixReplay,
    shared: object,
    task: Callable[[object, T], R],
    items: Sequence[T],
    *,
    ray_address: str | None = None,
    workers: int | None = None,
    short: bool = False,
) -> list[R]:
    """``task(shared, item)`` for every item, in order, where ``run_points`` runs its points (``shared``
    goes to each worker once; ``prepared`` is the trace it holds, which sets a worker's memory). ``short``:
    the work is less than starting worker processes costs, so this process does it unless told otherwise."""
    if ray_address is not None:
        return _on_ray(shared, task, items, ray_address)
    check_workers(prepared, workers)
    n = min(workers or (1 if short else min(os.cpu_count() or 1, most_workers(prepared))), len(items))
    if n <= 1:
        return [task(shared, item) for item in items]
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(n, mp_context=context, initializer=_keep, initargs=(shared, task)) as pool:
        return list(pool.map(_local, items))


def _reach(address: str) -> None:
    """Refuse an address nothing answers at, within the time-out, before Ray tries (and logs) for minutes."""
    match = _ADDRESS.fullmatch(address)
    if match is None or match.group(2) is None:
        return  # local, auto: this machine
    try:
        socket.create_connection((match.group(2), int(match.group(3))), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or type(exc).__name__
        within = f"within {CONNECT_TIMEOUT_S:g} s"
        raise InputError(
            f"cannot reach the Ray cluster at '{quote(address)}' {within}: {quote(str(reason), 80)}", field="ray"
        ) from None


def _connect(ray, address: str) -> None:
    """``ray.init`` in a thread given at most ``CONNECT_TIMEOUT_S``, Ray's own log kept quiet."""
    failure: list[BaseException] = []

    def start() -> None:
        try:
            ray.init(
                address=None if address == "local" else address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
        except BaseException as exc:  # reported below, in this thread's caller
            failure.append(exc)

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT_S)
    if thread.is_alive() or failure:
        why = f"no answer within {CONNECT_TIMEOUT_S:g} s" if thread.is_alive() else str(failure[0]).splitlines()[0]
        raise InputError(f"cannot reach the Ray cluster at '{quote(address)}': {quote(why, 120)}", field="ray")


def _on_ray(shared: object, task: Callable[[object, T], R], items: Sequence[T], address: str) -> list[R]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'kvviz[ray]'", field="ray") from None
    if not ray.is_initialized():
        _reach(address)
        _connect(ray, address)
    stored = ray.put(shared)
    remote = ray.remote(task)
    return ray.get([remote.remote(stored, item) for item in items])
