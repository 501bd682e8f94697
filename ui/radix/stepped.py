"""The Radix page's stepped view: the step controls, the tree (or its text dump, or the request
table), the step's words and the metric cards that say what the step did.

The step's heading, the cards (one line each, in one box) and the step's words go beside the tree,
so that the tree, the arrows and what the step did fit the first screen of a laptop (the controls
above the tree) and of a projector (the controls beside it too).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import streamlit as st

from kvviz.radix import report
from kvviz.radix.replay import Replay, ReplayConfig, snapshot_window, totals_frame
from ui.kit import figures, frame, keys, links
from ui.kit.errors import user_errors
from ui.kit.tables import Header, data_table
from ui.kit.text import plain
from ui.radix.controls import cached_replay

STEP_KEY = "radix_step"
VIEWS = ("Tree", "Text dump", "Requests")
REQUEST_HEADERS = {
    "device_hit": Header("GPU hit", "Prompt tokens already in GPU memory when the request started."),
    "host_hit": Header("CPU hit", "Prompt tokens found only in CPU memory: loaded back, or computed again."),
    "loaded": Header("loaded", "Of the CPU hit, the tokens loaded back into GPU memory."),
    "in_flight": Header(
        "in flight", "Prompt tokens another request was still computing when this one started: computed twice."
    ),
    "deferrals": Header("deferred", "Rounds the request waited for a span in flight (a delay hit)."),
}
"""The request table's columns under short headers (each header's help says what it counts)."""
PRESENTER_REQUEST_COLUMNS = 6
"""In presenter mode the request table beside the controls shows the request, its prompt, what it
computed and at most three other counts: more would not fit a projector's column at 1366 px."""


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


def step_caption(row) -> None:
    """The step's explanation: the script's caption for it, if it has one."""
    if row.caption:
        st.markdown(f"*{plain(row.caption, 2000)}*")


def step_events(row) -> None:
    """The cache's own events of the step, in words. They quote the script's words, kept as text (bold ids stay)."""
    st.markdown("\n".join(f"- {plain(line, 2000, bold=True)}" for line in row.lines))


def presenter_columns(requests) -> tuple[list[str], list[str], list[str]]:
    """The request table's columns a projector shows, the counts left out because they are zero for every
    request, and those left out for room (up to ``PRESENTER_REQUEST_COLUMNS`` in all; the status is in
    the step's words and the CSV)."""
    counts = [c for c in REQUEST_HEADERS if c in requests]
    zero = [c for c in counts if not requests[c].any()]
    kept = [c for c in counts if c not in zero][: PRESENTER_REQUEST_COLUMNS - 3]
    shown = [c for c in requests.columns if c in ("request", "prompt", "computed", *kept)]
    return shown, zero, [c for c in counts if c not in zero and c not in kept]


def request_table(s: Stepped, presenting: bool) -> None:
    """Every request's hits, loads and computation over the whole script (the same at every step)."""
    settings = {"script": s.name, "source": s.source, **asdict(s.config)}
    columns = None
    if presenting:
        columns, zero, more = presenter_columns(s.rep.requests)
        left_out = ["each request's status", *([f"{_names(zero)}, zero for every request"] if zero else [])]
        st.caption(f"Not shown here, in the CSV: {'; '.join([*left_out, *([_names(more)] if more else [])])}.")
    data_table(s.rep.requests, "radix", "per-request table", settings, headers=REQUEST_HEADERS, columns=columns or None)


def _names(columns: list[str]) -> str:
    return ", ".join(REQUEST_HEADERS[c].short for c in columns)


def step_figure(s: Stepped, step: int, row, view: str, presenting: bool) -> None:
    """The tree at this step (or its text dump, or the per-request table)."""
    if view == "Requests":
        request_table(s, presenting)
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
        presenting,
        cache_key=f"{s.key}:{step}",
        key="radix_tree",
    )
    st.caption(
        "Gold halo: used in this step. Dark ring: locked (held by a running request or a pending "
        "transfer). Grey outline: evicted this step, where it was. Dotted edges: spans being computed."
    )
    frame.terms("lock count", "D/H")


def view_switch() -> str:
    return st.segmented_control("View", VIEWS, default=VIEWS[0], required=True, key="radix_view", **links.PART)


def step_cards(s: Stepped, step: int) -> None:
    """The metric cards: what the cache holds now and what this step hit, evicted and recomputed, one
    line each (two to a row where the column is wide enough) in one box, so that they fit the first
    screen under the step's heading, beside the tree, with the step's words after them."""
    with st.container(horizontal=True, border=True, gap="xsmall", key="radix_cards"):
        for label, value, tip in report.step_metrics(s.rep, s.other, step):
            st.markdown(f"{label}: **{value:,}**", help=tip, width="content")


@links.view_fragment("radix")
def stepped_view(s: Stepped) -> None:
    """The step controls, the tree, the cards and the totals: a step reruns only this part of the page.

    The step controls sit right above the tree, so every ▶ shows its effect without a scroll, with the
    view switch, the step's heading, the cards and the step's words beside the tree; in presenter mode
    the arrows and slider go beside the tree too, the step's explanation before the cards (both in the
    first screen of a 1366 × 768 projector), then Play and the view switch."""
    presenting = frame.presenter()
    if presenting:
        tree_col, say_col = st.columns([3, 2])
        with say_col:
            step = keys.step_controls(
                STEP_KEY, s.rep.n_steps, stacked=True, play=False, on_change=links.keep_part_change
            )
    else:
        step = keys.step_controls(STEP_KEY, s.rep.n_steps, on_change=links.keep_part_change)
        tree_col, say_col = st.columns([5, 2])
    st.query_params[STEP_KEY] = str(step)
    row = s.rep.steps.iloc[step]
    with say_col:
        view = None if presenting else view_switch()
        step_heading(s, step, row)
        if presenting:  # the step's explanation before the cards, so the projector's first screen shows both
            step_caption(row)
            step_cards(s, step)
        else:
            step_cards(s, step)
            step_caption(row)
        step_events(row)
        if presenting:
            keys.autoplay(STEP_KEY, s.rep.n_steps)
        view = view or view_switch()
    with tree_col:
        step_figure(s, step, row, view, presenting)
    figures.figure("radix.fig_radix_totals", totals_frame(s.rep), step, cache_key=f"{s.key}:{step}", key="radix_totals")
