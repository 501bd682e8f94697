"""Long work on a page: asked for before it starts, shown while it runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import streamlit as st

from kvviz.common import budget
from ui.kit import links
from ui.kit.text import plain

T = TypeVar("T")
R = TypeVar("R")


def confirm_cost(cost: budget.Cost, key: str) -> None:
    """Run long work only after a click: show the estimate and stop until the viewer asks for it.

    Work over the hard limit is refused with the knob to turn. A confirmed cost is remembered in
    this session, so reruns of the same view (its result is cached by then) do not ask again.
    """
    budget.check(cost)
    if budget.needs_confirmation(cost):
        _ask(f"{plain(cost.describe())}. Reduce {plain(cost.knob)} for an instant view", f"{key}:{cost}", key)


def confirm_memory(memory: budget.Memory, key: str) -> None:
    """Run a replay that needs much of the server's free memory only after a click, and refuse one that
    does not fit, naming what it needs, what is free and what to do: before anything is prepared."""
    memory.check()
    free = budget.free_memory()
    if free is not None and memory.need > budget.CONFIRM_MEMORY_SHARE * free:
        _ask(
            f"{plain(memory.describe())} of the {budget.amount(free)} free on this server. To use less, "
            f"{plain(memory.advice)}",
            f"{key}:{memory}",
            f"{key}_memory",
        )


def _ask(estimate: str, token: str, key: str) -> None:
    """Show the estimate and a button, and stop this run unless ``token`` was confirmed in this session."""
    confirmed = st.session_state.setdefault("kvviz_confirmed_costs", set())
    if token in confirmed:
        return
    st.info(f"This view is expensive — {estimate}, or run it as it is.", icon=":material/hourglass_top:")
    # The click is recorded by a callback, before the rerun it causes: a rerun that restarts the
    # script (ensure_navigation) would otherwise lose the button's one-run True.
    st.button("Run it", key=f"{key}_confirm", type="primary", on_click=confirmed.add, args=(token,))
    links.stop()


def stepped(label: Callable[[T], str], steps: Sequence[T], run: Callable[[T], R]) -> list[R]:
    """``run(step)`` for every step, with a progress bar drawn here, by the page.

    ``run`` is typically a cached function of one step. The bar must never go into a cached
    function: Streamlit replays a cached function's elements on a cache hit, and a bar from an
    earlier run no longer exists, so the view would crash on rerun and for the next visitor.
    """
    bar = st.progress(0.0, text=label(steps[0]) if steps else "")
    results = []
    for i, step in enumerate(steps):
        bar.progress(i / len(steps), text=label(step))
        results.append(run(step))
    bar.empty()
    return results
