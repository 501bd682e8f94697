"""The serving stacks a cluster's instances run."""

from __future__ import annotations

from kvviz.common.errors import InputError, quote

ENGINES: tuple[str, ...] = ("sglang", "vllm-lmcache")
"""The serving stacks an instance runs: SGLang's radix cache (here), or vLLM's block pool with LMCache
behind it (:class:`kvviz.lmcache.StackInstance`)."""


def parse_engine(name: str) -> str:
    key = str(name).strip().lower()
    if key not in ENGINES:
        raise InputError(
            f"unknown engine '{quote(str(name).strip())}'; choose from {', '.join(ENGINES)}", field="engine"
        )
    return key
