"""What a replayed step says: the tree's events in sentences, each request's scheduling decisions
right after its last event."""

from __future__ import annotations

from kvviz.radix.events import Event
from kvviz.radix.scheduler import Scheduler


def round_lines(log: dict, sched: Scheduler) -> dict[str, list[str]]:
    """What the scheduler decided for each request this round, by request (its tree events come first)."""
    said: dict[str, list[str]] = {}
    for r in log["finished"]:
        said.setdefault(r.rid, []).append(
            f"**{r.rid}** finished: its prompt, then prompt + output, went into the tree (the inserts above)"
        )
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


def interleave(narrated: list[str], events: tuple[Event, ...], said: dict[str, list[str]]) -> list[str]:
    """The events' sentences in order, each request's own decisions right after its last event."""
    said = {who: list(lines) for who, lines in said.items()}
    out: list[str] = []
    for i, (line, e) in enumerate(zip(narrated, events)):
        out.append(line)
        if i + 1 == len(events) or events[i + 1].who != e.who:
            out.extend(said.pop(e.who, []) if e.who else [])
    return out + [line for lines in said.values() for line in lines]
