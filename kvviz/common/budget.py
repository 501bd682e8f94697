"""Work budgets: a bound on a simulation's work, estimated from its inputs and checked before it runs.

A link or a CLI call can ask any simulation for any amount of work (a cluster of 60 minutes at 4×
load over five seeds, a 32-layer codec study of 4K tokens). Every simulation that can be asked for
more than an interactive amount estimates its ``Cost`` from its inputs alone, before it allocates
or loops: pages ask for a click above ``CONFIRM_S`` and everyone is refused above ``LIMIT_S``, with
a message naming the knob to turn.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from kvviz.common.errors import InputError, setting

CONFIRM_S = 5.0
"""Estimated CPU seconds above which a page shows the estimate and waits for a click."""
LIMIT_S = 300.0
"""Estimated CPU seconds above which a simulation refuses to start (pages and CLI alike)."""


@dataclass(frozen=True)
class Cost:
    """The estimated work of one simulation run.

    ``units`` counts the work in the mechanism's own terms (``unit`` names them: events, encoded
    values, block accesses); ``seconds`` is that count at a measured rate on this 2-core machine;
    ``knob`` names the input that reduces it, for the message.
    """

    what: str
    units: float
    unit: str
    seconds: float
    knob: str

    def describe(self) -> str:
        return f"{self.what}: about {self.units:,.0f} {self.unit}, ~{self.seconds:,.0f} CPU s"


def cost(what: str, units: float, unit: str, per_second: float, knob: str) -> Cost:
    """A Cost from a unit count and a measured rate (units per CPU second)."""
    return Cost(what, float(units), unit, float(units) / per_second, knob)


def needs_confirmation(c: Cost) -> bool:
    """Whether a page should ask before running this (long, but within the limit)."""
    return CONFIRM_S < c.seconds <= LIMIT_S


def check(c: Cost, limit_s: float = LIMIT_S) -> None:
    """Refuse work over the limit, before it starts, naming the knob that reduces it."""
    if c.seconds > limit_s:
        raise InputError(f"{c.describe()}, over the limit of {limit_s:,.0f} s; reduce {c.knob}")


GIB = 2**30


MEMORY_ENV = "KVVIZ_MEMORY_GIB"
"""The memory this process may hold, in GiB: a server's operator (or a test) sets less than the machine has."""
MAX_MEMORY_GIB = 1 << 20


def memory_limit() -> int | None:
    """``$KVVIZ_MEMORY_GIB`` in bytes (None when unset); a value that is not a number of GiB above 0 is
    refused naming the variable (a ``SettingError``), never replaced by the machine's memory."""
    gib = setting(MEMORY_ENV, 0.0, 1e-9, MAX_MEMORY_GIB, f"a number of GiB above 0 and at most {MAX_MEMORY_GIB:,}")
    return int(gib * GIB) if gib else None


def free_memory() -> int | None:
    """Bytes this process may still allocate: the system's available memory, less where a control
    group's limit, an address-space limit (``ulimit -v``) or ``$KVVIZ_MEMORY_GIB`` (less what this
    process holds) is nearer; None when none can be read."""
    found = []
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        found.append(int(info["MemAvailable"].split()[0]) * 1024)
    except (OSError, KeyError, ValueError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append(soft - _statm(0))
    if (chosen := memory_limit()) is not None:
        found.append(chosen - resident())
    return max(0, min(found)) if found else None


def resident() -> int:
    """The bytes of memory this process holds (its resident set; 0 where it cannot be read)."""
    return _statm(1)


def _statm(field: int) -> int:
    """This process's address space (``field`` 0) or resident memory (1), in bytes, from ``/proc/self/statm``."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[field]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def check_memory(need: int, what: str, advice: str) -> None:
    """Refuse work that needs more memory than is free, before it allocates, in one line naming
    what needs it and what to do (``advice``)."""
    free = free_memory()
    if free is not None and need > free:
        said = (amount(need), amount(free))
        if said[0] == said[1]:  # rounded alike: in MiB, so that the need reads larger than what is free
            said = tuple(f"{size / 2**20:,.0f} MiB" for size in (need, free))
        raise InputError(f"{what} needs about {said[0]} of memory and {said[1]} is free here; {advice}")


def amount(size: float) -> str:
    """Bytes in words: GiB to a tenth, or whole MiB below a tenth of a GiB (never "0.0 GiB")."""
    if size < 2**20:
        return "less than 1 MiB"
    return f"{size / GIB:,.1f} GiB" if size >= GIB / 10 else f"{size / 2**20:,.0f} MiB"


@dataclass(frozen=True)
class Footprint:
    """The bytes a kind of replay holds, per block access, per distinct block (a prefix node, for a prefix
    cache) and per request: ``preparing`` while the trace's arrays are made for replay (their sorts'
    temporaries included), ``held`` after, ``per_run`` for each run in flight at once (a thread's own cache
    state, an instance's), ``per_result`` per request for every run (a row of a hits table). The peak is
    the larger of preparing and the runs. Read off the code each names, with the margin the tests ask:
    every estimate is at least the peak measured and at most ``ESTIMATE_FACTOR`` times it."""

    what: str
    preparing: tuple[float, float, float]
    held: tuple[float, float, float]
    per_run: tuple[float, float, float]
    per_result: float
    knob: str
    runs_are: str = "runs"


@dataclass(frozen=True)
class Memory:
    """A replay's estimated peak memory, before it runs: ``need`` bytes, ``what`` names the replay in words,
    ``advice`` what to do when it does not fit."""

    what: str
    need: int
    advice: str

    def describe(self) -> str:
        return f"{self.what} needs about {amount(self.need)} of memory"

    def check(self) -> None:
        """Refuse the replay, before it allocates, when it needs more memory than is free."""
        check_memory(self.need, self.what, self.advice)


ESTIMATE_FACTOR = 4.0
"""An estimate is at least the measured peak and at most this many times it. Most of the gap is the distinct
blocks, not counted before a replay (a library entry's dense ids give them; a file's are bounded by its
accesses, two to three times as many in the synthetic traces), and a cache's state sized for every block
but touched only as far as its capacity fills."""
SHORTER = "cut the trace (fewer requests)"
PREPARING_PREFIXES = (56.0, 16.0, 40.0)
"""``kvviz.prefix_cache.replay.prepare``: dense ids and their sort (24 B an access), each access's depth and
the order by depth (16), the nodes (8) and one level's temporaries; parent and depth per node; five
per-request columns."""
PREFIXES = (8.0, 16.0, 40.0)
"""What a prepared prefix replay holds: its nodes (8 B an access), parent and depth per node, five columns."""
EVICTION_PREPARED = (56.0, 0.0, 16.0)
EVICTION = Footprint(
    "an eviction replay of this trace",
    EVICTION_PREPARED,
    EVICTION_PREPARED,
    (2.0, 48.0, 0.0),
    0.0,
    f"{SHORTER}, or ask for fewer policies",
)
"""``kvviz.eviction.replay.replay_of`` and ``counts``: ids (4 B), depths (8), next uses (8, sorted with 16 more),
the infinite cache's mask (1) and LRU's stack distances (4) per access, with their sorts' temporaries; each
simulation thread a hit mask per access and its policy's lists or heap over the distinct blocks
(``kvviz.hiradix.lists``: 12 B a block, ``heap``: 16, with its index and slots)."""
PREFIX = Footprint(
    "a prefix-cache replay of this trace",
    PREPARING_PREFIXES,
    PREFIXES,
    (12.0, 140.0, 8.0),
    8.0,
    f"{SHORTER}, or ask for fewer policies or capacities",
)
"""``kvviz.prefix_cache.replay.prefix_replay`` per thread: the nodes renumbered by first use (8 B an access),
``kvviz.hiradix.tree.new_tree``'s six int64 rows, the heap's keys and slots and the renumbering's three
arrays (92 B a node); a hits-table row per request for each (policy, capacity)."""
VLLM = Footprint(
    "a replay of vLLM's block pool over this trace",
    PREPARING_PREFIXES,
    PREFIXES,
    (8.0, 96.0, 8.0),
    8.0,
    f"{SHORTER}, or ask for fewer capacities",
)
"""``kvviz.vllm.block_pool.pool_replay`` per thread: the free queue, the held prefixes and the holders' links
over at most a block per node (32 B), each node's queue ends (24), the hits per request and the curve's
table."""
TIERED = Footprint("a tiered replay of this trace", PREPARING_PREFIXES, PREFIXES, (12.0, 220.0, 320.0), 0.0, SHORTER)
"""``kvviz.tiers.cache.tiered_replay``: the prefix replay's tree, heap and renumbering (8 B an access, 92 a
node), each node's last use, count and write state (24) and two lower tiers' records and heaps (up to 64
each, touched only as far as those tiers fill); per request the tiers' hits, ``kvviz.tiers.latency.serve``'s
six rows and the result's columns."""
CLUSTER = Footprint(
    "the cluster's replay of this trace",
    PREPARING_PREFIXES,
    (24.0, 64.0, 400.0),
    (0.0, 72.0, 0.0),
    0.0,
    f"{SHORTER}, or use fewer instances",
    "instances",
)
"""``kvviz.cluster.simulate.run``: the prefix replay's arrays, renumbered once for every instance
(``kvviz.prefix_cache.instance.numbered``: 8 B an access, 24 a node) and the per-request columns; each instance
its radix cache's tree, keys and slots and a router's record (76 B a node, ``BYTES_PER_PREFIX``; a run
touches about 60 of them)."""
NOTHING = (0.0, 0.0, 0.0)
STATS = Footprint("the statistics of this trace", (16.0, 8.0, 16.0), NOTHING, NOTHING, 0.0, SHORTER)
"""``kvviz.traces.stats.block_counts``: a block's count by histogram or by a sort of the ids (12 B an access),
sorted (8 B a block); the request table's columns."""
REUSE = Footprint("the reuse distances of this trace", (40.0, 24.0, 16.0), NOTHING, NOTHING, 0.0, SHORTER)
"""``kvviz.traces.reuse.stack_distances`` on the raw ids: dense ids through a sort (24 B an access), the
distances (4, then an int32 copy: 4) and the window pass's latest slot per block and slots (24 B a block)."""


CONFIRM_MEMORY_SHARE = 0.5
"""A replay that needs more than this share of the free memory is run on a page only after a click (and its
distinct blocks are counted before it is refused)."""


def distinct_bound(trace) -> int:
    """At most how many distinct blocks a trace has, without counting them: one past the largest id when its
    ids are dense (numbered in order of first use, as the library stores them) or all below their count,
    else its accesses."""
    blocks = trace.blocks
    if not len(blocks):
        return 0
    top = int(blocks.max()) + 1
    return top if getattr(trace, "ids_dense", False) or (top <= len(blocks) and int(blocks.min()) >= 0) else len(blocks)


def replay_memory(footprint: Footprint, trace, runs: int = 1, at_once: int | None = None) -> Memory:
    """The peak memory of ``runs`` replays of ``trace`` (a Trace: its ``blocks`` and ``n_requests``), at most
    ``at_once`` in flight (default one per core, as the replays' thread pools run them).

    The distinct blocks are bounded without counting them; when that bound makes the replay need more
    than ``CONFIRM_MEMORY_SHARE`` of the free memory, they are counted (a sort of the ids, what every replay
    starts with anyway), so a trace of few distinct blocks among many accesses is not refused for the
    blocks it does not have."""
    accesses, requests = len(trace.blocks), int(trace.n_requests)
    flight = min(runs, at_once if at_once is not None else os.cpu_count() or 1)
    need = _need(footprint, (accesses, distinct_bound(trace), requests), runs, flight)
    free = free_memory()
    counting = (2 * trace.blocks.itemsize + 1) * accesses  # the sorted copy, the mask of firsts, the distinct ids
    if free is not None and need > CONFIRM_MEMORY_SHARE * free and counting <= free:
        import numpy as np  # here: the command line's start imports this module before it needs numpy

        need = _need(footprint, (accesses, len(np.unique(trace.blocks)), requests), runs, flight)
    runs_said = f", {runs:,} {footprint.runs_are}" if runs > 1 else ""
    return Memory(
        f"{footprint.what} ({accesses:,} block accesses, {requests:,} requests{runs_said})", int(need), footprint.knob
    )


def _need(footprint: Footprint, shape: tuple[int, int, int], runs: int, flight: int) -> int:
    """The larger of preparing and running, in bytes, for a trace of (accesses, distinct blocks, requests)."""

    def bytes_of(per: tuple[float, float, float]) -> float:
        return sum(c * n for c, n in zip(per, shape))

    # A thread that goes on to a further run may start it in another of the allocator's arenas (threads share
    # few: MALLOC_ARENA_MAX), where the memory its last run freed is not at hand: count one run more.
    states = flight + (runs > flight)
    running = bytes_of(footprint.held) + states * bytes_of(footprint.per_run) + runs * footprint.per_result * shape[2]
    return int(max(bytes_of(footprint.preparing), running))
