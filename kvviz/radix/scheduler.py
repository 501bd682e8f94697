"""Scheduling requests over the radix tree: SGLang's admission flow and Strata's delay-hit deferral.

A request's life follows SGLang's scheduler (``python/sglang/srt/managers/scheduler.py``): look up the prompt capped at
``len − 1`` (the last token always runs, to produce logits), load the host hit back (HiCache),
lock the matched node, allocate the rest (evicting only the shortfall), prefill, insert the prompt
(``cache_unfinished_req``), insert prompt + output at finish (``cache_finished_req``), unlock. A
request whose output is one token finishes at prefill and is inserted once; one without an output
given is inserted twice, as one that decodes.

On top, Strata (Xie et al., arXiv 2508.18572, §4.3.1; spec §4.2, partly from the lecture notes
and kept as parameters): an admitted request's uncached span is hung in the tree as a temporary
**in-flight** node; a waiting request whose match runs over more than ``threshold`` in-flight
tokens is a **delay hit** and is deferred a round (to the head of the queue) instead of computing
the same context twice; requests deferred on the same context are released together (a
**bundle**). ``redundant`` counts prefill tokens recomputed while another request was already
computing them — the waste deferral avoids.

Rounds: each ``round()`` first completes the previous batch (its prefill and decode finish),
acknowledges host transfers, enqueues arrivals and admits a new batch, which stays in flight
until the next round. SGLang's own precedent, in-batch prefix caching in LPM order (spec §2.7), is
``kvviz.radix.schedule_policy``'s LPM order.

A request (``kvviz.radix.request.Request``) is frozen; what happened to it here is its
``RequestState``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kvviz.common.errors import require
from kvviz.radix.inflight import InFlightTree
from kvviz.radix.radix_cache import TreeNode
from kvviz.radix.request import Request

DEFAULT_THRESHOLD = 100


@dataclass(frozen=True)
class SchedulerConfig:
    """``deferral`` is Strata's delay-hit rule; ``deferred_to_head`` puts deferred requests first
    (the paper) rather than leaving them where they were; ``max_batch_tokens`` caps the prefill
    tokens admitted per round (the head is always admitted)."""

    deferral: bool = True
    threshold: int = DEFAULT_THRESHOLD
    deferred_to_head: bool = True
    auto_ack: bool = True
    max_batch_tokens: int | None = None

    def validate(self) -> None:
        require(
            self.threshold >= 0, f"the deferral threshold must be ≥ 0 tokens, got {self.threshold}", field="threshold"
        )
        require(
            self.max_batch_tokens is None or self.max_batch_tokens >= 1,
            "the batch token budget must be at least 1",
            field="max_batch_tokens",
        )


@dataclass
class RequestState:
    """What happened to one request in the scheduler: its hits, what it computed, its deferrals."""

    request: Request
    device_hit: int = 0
    host_hit: int = 0
    loaded: int = 0
    in_flight: int = 0
    computed: int = 0
    deferrals: int = 0
    already_cached: int = 0  # what the prompt insert found in the tree (its duplicates are freed)
    status: str = "waiting"
    lock_node: TreeNode | None = field(default=None, repr=False)
    reserved: int = 0

    @property
    def rid(self) -> str:
        return self.request.rid

    @property
    def cached(self) -> int:
        """SGLang's ``cached_tokens``: the device hit plus what was loaded back."""
        return self.device_hit + self.loaded


COUNTERS = (
    "requests",
    "prompt_tokens",
    "device_hit",
    "host_hit",
    "loaded_back",
    "host_recomputed",
    "computed",
    "redundant",
    "deferrals",
    "bundle_hits",
    "rejected",
)


class Scheduler:
    """Rounds of admission over one cache with Strata's in-flight spans (``kvviz.radix.inflight``:
    SGLang's RadixCache or HiRadixCache with them)."""

    def __init__(self, cache: InFlightTree, config: SchedulerConfig = SchedulerConfig()):
        config.validate()
        require(
            isinstance(cache, InFlightTree),
            "the scheduler needs a tree with Strata's in-flight spans (kvviz.radix.inflight)",
            field="cache",
        )
        self.cache = cache
        self.config = config
        self.waiting: list[RequestState] = []
        self.running: list[RequestState] = []
        self.totals = dict.fromkeys(COUNTERS, 0)
        self._deferred_on: dict[str, int] = {}  # rid -> id of the in-flight node it waits for

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    def round(self, arrivals: Sequence[Request] = ()) -> dict:
        """Complete the running batch, acknowledge transfers, enqueue ``arrivals``, admit a batch.

        The log lists, by what happened to them this round, the requests' states (``arrived``: the
        states of ``arrivals``, in their order)."""
        log = dict(
            arrived=[RequestState(r) for r in arrivals], finished=[], admitted=[], deferred=[], blocked=[], rejected=[]
        )
        self.complete(log)
        if self.config.auto_ack and hasattr(self.cache, "ack"):
            self.cache.ack()
        self.waiting.extend(log["arrived"])
        self._admit(log)
        return log

    def complete(self, log: dict | None = None) -> None:
        """Every running request finishes: its prompt, then prompt + output, enter the tree; the second
        insert counts only the output's nodes (SGLang 0.5.23's ``cache_inserted_len``). A request whose
        output is one token finishes at prefill and is inserted once (SGLang releases it at once)."""
        c = self.cache
        for req in self.running:
            r = req.request
            c.actor = r.rid  # the tree's events say which request they ran for
            prompt = r.tokens[: c.page_align(len(r.tokens))]
            full = r.tokens + r.output
            req.already_cached = c.insert(prompt, extra_key=r.extra_key, priority=r.priority)
            if r.inserted_twice:  # counts only past the prompt, which this request counted already
                c.insert(
                    full[: c.page_align(len(full))],
                    extra_key=r.extra_key,
                    priority=r.priority,
                    inserted_len=len(prompt),
                )
            c.release_in_flight(r.rid)
            c.dec_lock_ref(req.lock_node)
            c.release_device(req.reserved)
            req.status = "finished"
            self.totals["requests"] += 1
            if log is not None:
                log["finished"].append(req)
        self.running, c.actor = [], ""

    def _admit(self, log: dict) -> None:
        """Walk the queue in order: defer delay hits, admit while memory and the batch budget allow;
        from the first request that cannot start, the rest wait."""
        c, cfg = self.cache, self.config
        c.clear_waiting()
        queue, self.waiting = self.waiting, []
        deferred, kept, batch_tokens, blocked = [], [], 0, False
        released: dict[int, int] = {}
        for req in queue:
            if blocked:
                kept.append(req)
                continue
            c.actor = req.rid
            m = c.match_prefix(req.request.tokens[: len(req.request.tokens) - 1], req.request.extra_key)
            if cfg.deferral and m.in_flight_len > cfg.threshold:
                self._defer(req, m, log)
                deferred.append(req)
                continue
            compute = len(req.request.tokens) - m.device_len
            if cfg.max_batch_tokens and batch_tokens and batch_tokens + compute > cfg.max_batch_tokens:
                blocked = True
                kept.append(req)
                continue
            outcome = self._start(req, m)
            if outcome == "rejected":
                log["rejected"].append(req)
                self.totals["rejected"] += 1
            elif outcome == "blocked":
                blocked = True
                kept.append(req)
                log["blocked"].append(req)
            else:
                batch_tokens += req.computed
                log["admitted"].append(req)
                if req.rid in self._deferred_on:
                    ctx = self._deferred_on.pop(req.rid)
                    released[ctx] = released.get(ctx, 0) + 1
        c.actor = ""
        self.totals["bundle_hits"] += sum(n for n in released.values() if n > 1)
        if cfg.deferred_to_head:
            self.waiting = deferred + kept
        else:
            stay = {id(r) for r in deferred + kept}
            self.waiting = [r for r in queue if id(r) in stay]

    def _defer(self, req: RequestState, m, log: dict) -> None:
        """A delay hit: ``req`` waits a round for the in-flight span its match runs over."""
        req.deferrals += 1
        self.totals["deferrals"] += 1
        m.deepest.waiting += 1
        self._deferred_on[req.rid] = m.deepest.id
        log["deferred"].append((req, m.in_flight_len))

    def _start(self, req: RequestState, m) -> str:
        """Admit ``req``: load back, lock, allocate, mark its uncached span in flight."""
        c, r = self.cache, req.request
        need_all = len(r.tokens) + len(r.output)
        if c.capacity is not None and need_all > c.capacity:
            req.status = "rejected: longer than the device pool"
            return "rejected"
        loaded, lock_node = 0, m.last_node
        if m.host_len and hasattr(c, "init_load_back"):
            loaded, node = c.init_load_back(m.last_host_node)
            if loaded:
                lock_node = node
        c.inc_lock_ref(lock_node)
        hit = m.device_len + loaded
        if not c.alloc_device(need_all - hit):
            c.dec_lock_ref(lock_node)
            req.status = "waiting for memory"
            return "blocked"
        req.lock_node, req.reserved = lock_node, need_all - hit
        req.device_hit, req.host_hit, req.loaded, req.in_flight = m.device_len, m.host_len, loaded, m.in_flight_len
        req.computed = len(r.tokens) - hit
        c.insert_in_flight(r.tokens[: c.page_align(len(r.tokens))], r.rid, r.extra_key)
        req.status = "running"
        self.running.append(req)
        t = self.totals
        t["prompt_tokens"] += len(r.tokens)
        t["device_hit"] += m.device_len
        t["host_hit"] += m.host_len
        t["loaded_back"] += loaded
        t["host_recomputed"] += m.host_len - loaded
        t["computed"] += req.computed
        t["redundant"] += m.in_flight_len
        return "admitted"
