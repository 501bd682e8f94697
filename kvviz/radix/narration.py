"""What a replayed step says: the tree's events in sentences, each request's scheduling decisions
right after its last event."""

from __future__ import annotations

from kvviz.radix.events import Event
from kvviz.radix.scheduler import RequestState, Scheduler


def round_lines(log: dict, sched: Scheduler) -> dict[str, list[str]]:
    """What the scheduler decided for each request this round, by request (its tree events come first)."""
    said: dict[str, list[str]] = {}
    for r in log["finished"]:
        said.setdefault(r.rid, []).append(finished_line(r, sched))
    for r in log["admitted"]:
        flight = f" ({r.in_flight} of them were in flight: **recomputed**)" if r.in_flight else ""
        said.setdefault(r.rid, []).append(
            f"**{r.rid}** admitted: computes {r.computed} of its {len(r.request.tokens)} prompt tokens{flight}"
        )
    for r, f in log["deferred"]:
        said.setdefault(r.rid, []).append(
            f"**{r.rid}** deferred (delay hit): its match runs over {f} in-flight tokens > {sched.config.threshold}"
        )
    for r in log["blocked"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** waits: not enough free GPU memory even after eviction")
    for r in log["rejected"]:
        said.setdefault(r.rid, []).append(f"**{r.rid}** rejected: it needs more KV than the whole GPU pool")
    return said or {"": ["Nothing to schedule this round."]}


def finished_line(r: RequestState, sched: Scheduler) -> str:
    """What a finished request put into the tree, and how the hit counts on its path moved and why."""
    counted = sched.cache.hit_count_rule == "upstream"
    if r.request.inserted_twice:
        line = (
            f"**{r.rid}** finished: its prompt went into the tree after prefill, so that others could share it, "
            "and again with its output at finish (the inserts above)"
        )
        moved = (
            "the first insert added 1 to the hit count of every node on its path; the second counted only "
            "what lay past the prompt, since a request counts each node once"
        )
    else:
        line = (
            f"**{r.rid}** finished at its first token, so its prompt went into the tree once, at finish "
            "(the insert above)"
        )
        moved = "the insert added 1 to the hit count of every node on its path"
    if not counted:
        return line + "; the hit counts did not move (inserts before SGLang's PR #18843 did not count)"
    node = r.lock_node
    cached = (
        f"; the deepest node of the prefix it found cached now has hit count {node.hit_count}"
        if node is not None and node is not sched.cache.root and node.parent is not None
        else ""
    )
    reads = " (LFU and SLRU rank leaves by it)" if sched.cache.eviction_policy in ("lfu", "slru") else ""
    return f"{line}; {moved}{reads}{cached}"


def interleave(narrated: list[str], events: tuple[Event, ...], said: dict[str, list[str]]) -> list[str]:
    """The events' sentences in order, each request's own decisions right after its last event."""
    said = {who: list(lines) for who, lines in said.items()}
    out: list[str] = []
    for i, (line, e) in enumerate(zip(narrated, events)):
        out.append(line)
        if i + 1 == len(events) or events[i + 1].who != e.who:
            out.extend(said.pop(e.who, []) if e.who else [])
    return out + [line for lines in said.values() for line in lines]
