"""A script replayed step by step on SGLang's tree and scheduler, keeping what a viewer moves over.

``replay`` runs a script (``kvviz.radix.script``) once and keeps, for every step, a tidy frame of
the tree's nodes, the text dump, what happened, and running totals: moving a slider over the
steps is then a lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kvviz.common.errors import InputError, require
from kvviz.radix.events import EVICTING, Event, EventKind, narrate
from kvviz.radix.hiradix_cache import WRITE_POLICIES, HiRadixCache
from kvviz.radix.inflight import StrataHiRadixCache, StrataRadixCache
from kvviz.radix.narration import interleave, round_lines
from kvviz.radix.radix_cache import POLICIES, RadixCache
from kvviz.radix.request import Request
from kvviz.radix.scheduler import COUNTERS, RequestState, Scheduler, SchedulerConfig
from kvviz.radix.script import Op, Script

POLICY_LABELS: dict[str, str] = dict(
    zip(POLICIES, ("LRU", "LFU", "FIFO", "MRU", "FILO", "priority", "SLRU"), strict=True)
)
"""Each eviction policy (SGLang's ``--radix-eviction-policy`` value) as a page names it."""
WRITE_LABELS: dict[str, str] = dict(
    zip(WRITE_POLICIES, ("write through", "selective write through", "write back"), strict=True)
)
"""Each HiCache write policy (SGLang's ``--hicache-write-policy`` value) as a page names it."""


@dataclass(frozen=True)
class ReplayConfig:
    """The cache and scheduler a script is replayed on (capacities in tokens)."""

    cache: str = "hiradix"  # "radix" or "hiradix"
    device_capacity: int = 64
    host_capacity: int = 256
    page_size: int = 1
    eviction_policy: str = "lru"
    write_policy: str = "write_through"
    deferral: bool = True
    threshold: int = 100
    auto_ack: bool = True
    hit_count_rule: str = "upstream"

    def build(self) -> tuple[RadixCache, Scheduler]:
        """A fresh tree with Strata's in-flight spans, and the scheduler over it."""
        require(
            self.cache in ("radix", "hiradix"), f"unknown cache {self.cache!r}; use radix or hiradix", field="cache"
        )
        if self.cache == "radix":
            cache = StrataRadixCache(self.page_size, self.eviction_policy, self.device_capacity, self.hit_count_rule)
        else:
            cache = StrataHiRadixCache(
                self.device_capacity,
                self.host_capacity,
                self.write_policy,
                self.page_size,
                self.eviction_policy,
                hit_count_rule=self.hit_count_rule,
            )
        return cache, Scheduler(cache, SchedulerConfig(self.deferral, self.threshold, auto_ack=self.auto_ack))


def hit_counts_decide(cache: str, eviction_policy: str, write_policy: str) -> bool:
    """Whether the hit-count rule (upstream, or legacy: SGLang before PR #18843) can change what
    is evicted or backed up, not only the counts shown: LFU and SLRU order leaves by their counts,
    and HiCache's ``write_through`` and ``write_through_selective`` back a node up when its count
    reaches a threshold (``write_back`` only at eviction)."""
    return eviction_policy in ("lfu", "slru") or (cache == "hiradix" and write_policy != "write_back")


GAUGES = ("device_tokens", "host_tokens", "reserved", "evictable", "protected", "nodes", "in_flight_nodes")
EVENT_TOTALS = {
    EventKind.EVICT: "evicted_device",
    EventKind.TO_HOST: "evicted_device",
    EventKind.WRITE_BACK: "evicted_device",
    EventKind.EVICT_HOST: "evicted_host",
    EventKind.LOAD_BACK: "loaded_tokens",
    EventKind.BACKUP: "backed_up",
}
TOTAL_COLUMNS = GAUGES + tuple(COUNTERS) + tuple(dict.fromkeys(EVENT_TOTALS.values()))


def gauges(cache: RadixCache) -> dict[str, int]:
    """The tree's state now: the ``GAUGES`` columns."""
    return dict(
        device_tokens=cache.total_size(),
        host_tokens=getattr(cache, "host_tokens", 0),
        reserved=cache.reserved,
        evictable=cache.evictable_size(),
        protected=cache.protected_size(),
        nodes=cache.n_nodes,
        in_flight_nodes=cache.n_in_flight,
    )


def count_events(cache: RadixCache, seen: dict[str, int]) -> list[Event]:
    """Take the cache's new events, add their tokens to the running ``EVENT_TOTALS``, return them."""
    events = cache.take_events()
    for e in events:
        if e.kind in EVENT_TOTALS:
            seen[EVENT_TOTALS[e.kind]] += e.tokens
    return events


@dataclass(frozen=True)
class Replay:
    """A replayed script: per step, the tree (``nodes`` rows with ``step``), text and totals."""

    script: str
    config: ReplayConfig
    steps: pd.DataFrame  # step, op, caption, lines (list of str), events (tuple of Event),
    # clock_from, clock_to, error ("" if none), totals…
    nodes: pd.DataFrame  # the tidy node frame of every step, with a ``step`` column
    node_offsets: np.ndarray  # step k's rows are nodes[offsets[k]:offsets[k+1]]
    dumps: tuple[str, ...]
    requests: pd.DataFrame  # one row per request: its hits, computation and deferrals
    vocab: tuple[tuple[int, str], ...] = field(default=())
    first_snapshot: int = 0  # the step of the first kept tree (snapshots of a range of steps)
    stalled: str = ""  # why the waiting requests can never start, when the replay ends that way

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def tree(self, step: int) -> pd.DataFrame:
        k = step - self.first_snapshot
        return self.nodes.iloc[self.node_offsets[k] : self.node_offsets[k + 1]]

    def dump(self, step: int) -> str:
        return self.dumps[step - self.first_snapshot]

    @property
    def error(self) -> str | None:
        """The message of the operation that stopped the replay, if one did."""
        errs = [e for e in self.steps["error"] if e]
        return errs[0] if errs else None


SNAPSHOT_WINDOW = 25  # a long script keeps the trees of this many steps at a time


def snapshot_window(n_steps: int, step: int, window: int = SNAPSHOT_WINDOW) -> tuple[int, int]:
    """The steps (start, stop) whose trees a viewer at ``step`` keeps, for ``replay(snapshots=range(...))``:
    every step of a script of up to four windows, else the window that holds ``step``."""
    if n_steps <= 4 * window:
        return 0, n_steps
    start = step // window * window
    return start, start + window


def replay(
    script: Script, config: ReplayConfig = ReplayConfig(), *, snapshots: bool | range = True, max_drain: int = 200
) -> Replay:
    """Run ``script`` on a fresh cache; keep the tree after every step (when ``snapshots``).

    ``snapshots`` may be a range of steps instead: only their trees are kept and the replay stops
    after the last of them (a long script is then viewed a window of steps at a time, without a
    snapshot of every step).

    Step 0 is the empty tree. After the script, rounds run until every request has finished, or
    until a round admits nothing with nothing running (``stuck``): no later round can differ, and the
    replay ends with ``stalled`` saying what holds the memory (an outcome of the settings, not an
    error). A bad operation (unlocking what holds no lock) ends the replay at that step with its message.
    """
    run = _StepThrough(script, config, snapshots)
    run.record("start: an empty tree", {"": ["The tree holds only its root."]}, 0)
    pending = list(script.ops)
    while (pending or not run.sched.idle) and not run.window_done():
        if len(run.rows) > len(script.ops) + max_drain:
            run.stall(f"{len(run.sched.waiting)} requests still wait after {max_drain} rounds past the script.")
            break
        if not run.step(pending.pop(0) if pending else None):
            break
        if not pending and run.stuck():
            run.stall(stall_reason(run.cache, run.sched, config))
            break
    return run.finish()


def stall_reason(cache: RadixCache, sched: Scheduler, config: ReplayConfig) -> str:
    """Why the waiting requests can never start: what locks the GPU memory, and what would free it."""
    head = sched.waiting[0].rid
    locked, free = cache.protected_size(), cache.device_free
    pending = getattr(cache, "pending_transfers", 0)
    what = (
        f"{locked:,} of the GPU's {config.device_capacity:,} tokens are locked and {free:,} are free, "
        f"and the next waiting request ({head}) does not fit. "
    )
    if pending and not config.auto_ack:
        return what + (
            f"The lock is held by {pending} cop{'ies' if pending > 1 else 'y'} to CPU memory that nobody "
            "acknowledged: HiCache locks a node while it is copied, and SGLang releases it when its scheduler "
            "checks finished copies, once per round. With acknowledgements off, no round does, so no "
            "request can ever start. Turn on “Acknowledge transfers every round” (or add an `ack` step) "
            "to free it."
        )
    if locked:
        return what + "A `lock` step is never undone: add its `unlock` step to free the memory."
    return what + "Nothing can be evicted to make room: give the GPU more tokens."


class _StepThrough:
    """One replay under way: the cache and scheduler, and what is kept of every step so far."""

    def __init__(self, script: Script, config: ReplayConfig, snapshots: bool | range):
        self.script, self.config, self.snapshots = script, config, snapshots
        self.cache, self.sched = config.build()
        self.vocab = script.words
        self.rows: list[dict] = []
        self.frames: list[pd.DataFrame] = []
        self.dumps: list[str] = []
        self.requests: list[RequestState] = []
        self.seen = dict.fromkeys(EVENT_TOTALS.values(), 0)
        self.stalled = ""

    def window_done(self) -> bool:
        """Whether the last tree of a window of snapshots has been kept."""
        return isinstance(self.snapshots, range) and len(self.rows) >= self.snapshots.stop

    def step(self, op: Op | None) -> bool:
        """Run one step (``None``: a drain round) and record it; False when it failed and ends the replay."""
        clock_from, said = self.cache.clock + 1, {}
        text = op.describe(self.vocab) if op else "drain: the running batch finishes"
        caption = op.caption if op else ""
        try:
            if op is None or op.kind == "requests":
                log = self.sched.round(op.requests if op else ())
                self.requests.extend(log["arrived"])
                said = round_lines(log, self.sched)
            else:
                said = {"": _raw(self.cache, op)}
        except InputError as exc:
            self.record(text, said, clock_from, error=f"step {len(self.rows)} ({text}): {exc}", caption=caption)
            return False
        self.record(text, said, clock_from, caption=caption)
        return True

    def stuck(self) -> bool:
        """Whether the next round would admit nothing, as this one did: requests wait, none runs, and
        no transfer is left for the next round to acknowledge."""
        acks = self.config.auto_ack and getattr(self.cache, "pending_transfers", 0)
        return bool(self.sched.waiting) and not self.sched.running and not acks

    def stall(self, reason: str) -> None:
        """End the replay on requests that can never start: a last step that says why."""
        self.stalled = reason
        self.record("stalled: no waiting request can start", {"": [reason]}, self.cache.clock)

    def record(
        self, op_text: str, said: dict[str, list[str]], clock_from: int, error: str = "", caption: str = ""
    ) -> None:
        """Keep a step: its row (what happened, the totals) and, when it is in ``snapshots``, its tree."""
        cache = self.cache
        events = tuple(count_events(cache, self.seen))
        lines = interleave(narrate(events, self.vocab, self.config.eviction_policy), events, said)
        self.rows.append(
            dict(
                step=len(self.rows),
                op=op_text,
                caption=caption,
                lines=lines,
                events=events,
                clock_from=clock_from,
                clock_to=cache.clock,
                error=error,
                **gauges(cache),
                **self.sched.totals,
                **self.seen,
            )
        )
        if self.snapshots is True or (isinstance(self.snapshots, range) and len(self.rows) - 1 in self.snapshots):
            self.frames.append(cache.node_frame(self.vocab))
            self.dumps.append(cache.pretty_print(self.vocab))

    def finish(self) -> Replay:
        """The replay: every step's row, the kept trees in one frame, a row per request."""
        frames = self.frames
        if frames:
            sizes = [len(f) for f in frames]
            nodes = pd.concat(frames, ignore_index=True)
            nodes.insert(0, "step", np.repeat(np.arange(len(frames)), sizes))
            offsets = np.concatenate([[0], np.cumsum(sizes)])
        else:
            nodes, offsets = pd.DataFrame(), np.zeros(1, dtype=np.int64)
        req = pd.DataFrame(
            [
                dict(
                    request=r.rid,
                    prompt=len(r.request.tokens),
                    device_hit=r.device_hit,
                    host_hit=r.host_hit,
                    loaded=r.loaded,
                    in_flight=r.in_flight,
                    computed=r.computed,
                    deferrals=r.deferrals,
                    status=r.status,
                )
                for r in self.requests
            ]
        )
        first = self.snapshots.start if isinstance(self.snapshots, range) else 0
        return Replay(
            self.script.name,
            self.config,
            pd.DataFrame(self.rows),
            nodes,
            offsets,
            tuple(self.dumps),
            req,
            self.script.vocab,
            first,
            self.stalled,
        )


def _raw(cache: RadixCache, op: Op) -> list[str]:
    """Run one raw operation; the lines say what its events do not (a lock count, a transfer count)."""
    if op.kind in ("evict_host", "ack") and not isinstance(cache, HiRadixCache):
        raise InputError(f"{op.kind} needs the HiRadixCache (two tiers)", field="cache")
    if op.kind == "evict":
        freed = cache.evict(op.n)  # a shortfall is an event of its own, with its reason
        return [f"evict({op.n}) freed {freed} GPU tokens (whole leaves only)"] if freed >= op.n else []
    if op.kind == "evict_host":
        return [f"evict_host({op.n}) freed {cache.evict_host(op.n)} CPU tokens (whole leaves only)"]
    if op.kind == "ack":
        return [f"acknowledged {cache.ack()} CPU transfers; their locks are released"]
    if op.kind == "match":
        cache.match_prefix(op.tokens, op.extra_key)
        return ["a lookup changes no hit count"]
    if op.kind == "insert":
        _insert(cache, op)
        return []
    return _lock_or_unlock(cache, op)


def _insert(cache: RadixCache, op: Op) -> None:
    """Insert the key's whole pages; when the pool is short, first evict for the new tokens as the
    allocator would (the cached part locked meanwhile)."""
    tokens = op.tokens[: cache.page_align(len(op.tokens))]
    free = cache.device_free
    if free is not None and free < len(tokens):
        peek = cache.match_prefix(tokens, op.extra_key)
        cache.inc_lock_ref(peek.last_node)
        short = len(tokens) - peek.device_len
        ok = cache.alloc_device(short)
        cache.dec_lock_ref(peek.last_node)
        if not ok:
            raise InputError(f"insert: {short} new tokens do not fit in the device pool", field="insert")
        cache.release_device(short)
    cache.insert(tokens, extra_key=op.extra_key)


def _lock_or_unlock(cache: RadixCache, op: Op) -> list[str]:
    """Lock (or unlock) the deepest device node the key matches, and its ancestors."""
    node = cache.match_prefix(op.tokens, op.extra_key).last_node
    if op.kind == "lock":
        if node is cache.root:
            raise InputError("nothing of that key is cached on the device", field="lock")
        cache.inc_lock_ref(node)
        return [f"locked node {node.id} and its ancestors (lock count now {node.lock_ref})"]
    if node is cache.root:
        raise InputError("nothing of that key is cached on the device, so it holds no lock", field="unlock")
    cache.dec_lock_ref(node)
    return [f"unlocked node {node.id} (lock count now {node.lock_ref})"]


def repeat_prompt_hit(length: int, page_size: int) -> int:
    """Tokens a request reports cached when the identical prompt ran just before (SGLang #27206)."""
    prompt = tuple(range(1, length + 1))
    cache, sched = ReplayConfig(cache="radix", device_capacity=max(4 * length, page_size), page_size=page_size).build()
    sched.round([Request("first", prompt)])
    (second,) = sched.round([Request("again", prompt)])["arrived"]
    sched.round([])
    return second.cached


def eviction_steps(rep: Replay) -> list[int]:
    """The steps whose events free GPU memory (a leaf evicted, moved to CPU or written back)."""
    return [int(row.step) for row in rep.steps.itertuples() if any(e.kind in EVICTING for e in row.events)]


def totals_frame(rep: Replay) -> pd.DataFrame:
    """The running totals, one row per step."""
    return rep.steps[["step", *TOTAL_COLUMNS]]
