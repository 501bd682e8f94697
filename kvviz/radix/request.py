"""A request, as a script, a trace or a scheduling queue hands it to SGLang's scheduler.

The same request may be replayed many times (a script is parsed once and replayed under every
setting), so it is frozen: what a scheduler did with it is kept beside it
(``kvviz.radix.scheduler.RequestState``), never in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.radix.radix_cache import Key


@dataclass(frozen=True)
class Request:
    """A request: its name, prompt tokens, the output it will generate, SGLang's ``extra_key``
    (requests under different keys never share a prefix) and its priority (SGLang's ``priority``
    eviction policy keeps the nodes of higher-priority requests longer). ``generates`` is how many
    tokens it generates when their ids are not known (a trace's output length; None: unknown)."""

    rid: str
    tokens: Key
    output: Key = ()
    extra_key: str | None = None
    priority: int = 0
    generates: int | None = None

    @property
    def inserted_twice(self) -> bool:
        """SGLang's scheduler inserts a prompt after prefill and again at finish, unless the request
        finishes at its first token (then only at finish)."""
        return (len(self.output) if self.output else self.generates) != 1
