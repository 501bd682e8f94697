"""The Radix page's stepped view: the step controls, the tree (or its text dump, or the request
table), the step's words and the metric cards that say what the step did.

In presenter mode the controls, the step's words and the cards go beside the tree, so that the
tree, the arrows and what the step did all fit the first screen of a projector.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import streamlit as st

from kvviz.radix import report
from kvviz.radix.replay import Replay, ReplayConfig, snapshot_window, totals_frame
from ui import figures, frame, keys, links
from ui.errors import user_errors
from ui.radix_controls import cached_replay
from ui.tables import data_table
from ui.text import plain

STEP_KEY = "radix_step"
VIEWS = ("Tree", "Text dump", "Requests")


@dataclass(frozen=True)
class Stepped:
    """A replayed script as the stepped view shows it."""

    text: str
    name: str
    source: str  # "Preset", "Type" or "Trace"
    config: ReplayConfig
    rep: Replay
    other: Replay  # the same script with Strata's deferral switched, for the redundancy it saves

    @property
    def values(self) -> tuple:
        """The configuration as the replay cache takes it."""
        return tuple(asdict(self.config).values())

    @property
    def key(self) -> str:
        """Stands for the replay in the figure cache."""
        return str(hash((self.text, self.name, self.values)))


def start_step(n_steps: int) -> None:
    """The step shown when the page opens: a shared link's, back to 0 after a new preset, never past the last."""
    raw = st.query_params.get(STEP_KEY, "0")
    if STEP_KEY not in st.session_state:  # the URL is kept by hand: the slider's range changes with the script
        st.session_state[STEP_KEY] = int(raw) if raw.isdigit() else 0
    if st.session_state.pop("radix_restart", False):
        st.session_state[STEP_KEY] = 0
    st.session_state[STEP_KEY] = min(st.session_state[STEP_KEY], n_steps - 1)


def step_heading(s: Stepped, step: int, row) -> None:
    st.markdown(f"#### Step {step} of {s.rep.n_steps - 1}: {plain(row.op)}")


def step_words(row) -> None:
    """The step's caption and the cache's own events in words."""
    if row.caption:
        st.markdown(f"*{plain(row.caption, 2000)}*")
    # The lines narrate the cache's own events; they quote the script's words, kept as text (bold ids stay).
    st.markdown("\n".join(f"- {plain(line, 2000, bold=True)}" for line in row.lines))


def step_figure(s: Stepped, step: int, row, view: str) -> None:
    """The tree at this step (or its text dump, or the per-request table)."""
    if view == "Requests":
        settings = {"script": s.name, "source": s.source, **asdict(s.config)}
        data_table(s.rep.requests, "radix", "per-request table", settings)
        return
    with user_errors():
        shots = cached_replay(s.text, s.name, s.values, snapshot_window(s.rep.n_steps, step))
    if view == "Text dump":
        st.code(shots.dump(step), language=None)
        return
    marks = report.step_marks(s.rep, step)
    figures.figure(
        "radix.fig_radix_tree",
        shots.tree(step),
        (int(row.clock_from), int(row.clock_to)),
        s.rep.steps["clock_to"].to_numpy(),
        marks.ghosts,
        marks.marks,
        frame.presenter(),
        cache_key=f"{s.key}:{step}",
        key="radix_tree",
    )
    st.caption(
        "Gold halo: used in this step. Dark ring: locked (lock_ref > 0: a running request or a "
        "pending transfer). Grey outline: evicted this step, where it was. Dotted edges: spans being "
        "computed."
    )
    frame.terms("lock_ref", "D/H")


def view_switch() -> str:
    return st.segmented_control("View", VIEWS, default=VIEWS[0], required=True, key="radix_view", bind="query-params")


def step_cards(s: Stepped, step: int, compact: bool) -> None:
    """The metric cards: what the cache holds now and what this step hit, evicted and recomputed.

    ``compact`` (beside the tree on a projector): one line each, two to a row, in one box, so that
    they fit the first screen under the step's heading with the step's caption after them."""
    with st.container(horizontal=True, border=compact, gap="xsmall" if compact else "small", key="radix_cards"):
        for label, value, tip in report.step_metrics(s.rep, s.other, step):
            if compact:
                st.markdown(f"{label}: **{value:,}**", help=tip, width="content")
            else:
                st.metric(label, f"{value:,}", border=True, help=tip)


@links.view_fragment("radix")
def stepped_view(s: Stepped) -> None:
    """The step controls, the tree, the cards and the totals: a step reruns only this part of the page.

    The step controls sit right above the tree, so every ▶ shows its effect without a scroll; in
    presenter mode they go beside it, with the cards and the step's words."""
    presenting = frame.presenter()
    if presenting:
        tree_col, say_col = st.columns([3, 2])
        with say_col:
            step = keys.step_controls(STEP_KEY, s.rep.n_steps, stacked=True)
    else:
        step = keys.step_controls(STEP_KEY, s.rep.n_steps)
        tree_col, say_col = st.columns([5, 2])
    st.query_params[STEP_KEY] = str(step)
    row = s.rep.steps.iloc[step]
    with say_col:
        step_heading(s, step, row)
        if presenting:
            step_cards(s, step, compact=True)
        step_words(row)
        view = view_switch() if presenting else None
    with tree_col:
        step_figure(s, step, row, view or view_switch())
    if not presenting:
        step_cards(s, step, compact=False)
    figures.figure("radix.fig_radix_totals", totals_frame(s.rep), step, cache_key=f"{s.key}:{step}", key="radix_totals")
