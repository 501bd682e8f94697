"""Radix cache & HiCache: SGLang's prefix tree and its GPU/CPU tiers, stepped through operation by operation."""

from dataclasses import asdict, replace

import streamlit as st

from kvviz.radix import report
from kvviz.radix.presets import PRESETS
from kvviz.radix.replay import snapshot_window, totals_frame
from kvviz.radix.script import to_text
from kvviz.radix.trace_replay import script_from_trace
from ui import figures, frame, keys, radix_sidebar
from ui.errors import user_errors
from ui.radix_controls import cached_replay, seed_from_preset
from ui.tables import data_table
from ui.text import plain
from ui.traces import session_trace

frame.header(
    "radix",
    "How a prefix cache fills, splits, evicts, spills to CPU memory and comes back — one scheduling round at a time.",
)

seed_from_preset()

source, preset, config = radix_sidebar.sidebar()
typed = st.empty()  # the typed script's place in every source: the tree and totals below keep theirs, not redrawn
if source == "Preset":
    text, name = preset.text, preset.title
    st.sidebar.caption(f"**{preset.title}.** {preset.blurb}")  # beside its selector: the tree stays in view
elif source == "Type":
    text = typed.text_area(
        "One step per line: `prompt => output` (words or integers, `a..b` for a run), `&` to arrive with the "
        "line above, or `match` / `insert` / `lock` / `unlock` tokens, `evict N`, `evict_host N`, `ack`; "
        "a `# comment` above a step is its caption.",
        preset.text,
        height=180,
        key="radix_text",
        bind="query-params",
    )
    name = "typed script"
else:
    with user_errors():
        trace = session_trace("radix")
    if trace is None:
        st.info(
            "No trace is loaded in this session. Open the **Trace** page, pick or upload a trace there, "
            "then come back: its first requests replay here with block ids as tokens.",
            icon=":material/timeline:",
        )
        st.page_link("pages/trace.py", label="Go to the Trace page", icon=":material/arrow_forward:")
        st.stop()
    c1, c2 = st.columns(2)
    n = c1.number_input("First N requests", 1, 2000, 30, key="radix_n", bind="query-params")
    round_ms = c2.number_input(
        "Round length (ms)",
        1,
        3_600_000,
        1000,
        key="radix_round",
        bind="query-params",
        help="Requests arriving in the same window are scheduled in the same round.",
    )
    with user_errors():
        text, name = to_text(script_from_trace(trace, int(n), int(round_ms))), f"{trace.name} (first {n})"
    st.caption(f"One token = one {trace.block_size}-token block, so capacities count blocks.")

with user_errors():
    rep = cached_replay(text, name, tuple(asdict(config).values()))
    other = cached_replay(text, name, tuple(asdict(replace(config, deferral=not config.deferral)).values()))

if rep.error:
    st.error(f"The replay stopped: {plain(rep.error)}", icon=":material/error:")
last = rep.n_steps - 1
raw_step = st.query_params.get("radix_step", "0")
if "radix_step" not in st.session_state:  # the step a shared link points at (the URL is kept by hand:
    st.session_state["radix_step"] = int(raw_step) if raw_step.isdigit() else 0  # the range changes)
if st.session_state.pop("radix_restart", False):
    st.session_state["radix_step"] = 0
st.session_state["radix_step"] = min(st.session_state["radix_step"], last)
replay_key = str(hash((text, name, tuple(asdict(config).values()))))  # stands for the replay in the figure cache


def step_words(step: int, row) -> None:
    """The step's heading, its caption and the cache's own events in words."""
    st.markdown(f"#### Step {step} of {last}: {plain(row.op)}")
    if row.caption:
        st.markdown(f"*{plain(row.caption, 2000)}*")
    # The lines narrate the cache's own events; they quote the script's words, kept as text (bold ids stay).
    st.markdown("\n".join(f"- {plain(line, 2000, bold=True)}" for line in row.lines))


def step_figure(step: int, row, shots, view: str) -> None:
    """The tree at this step (or its text dump, or the per-request table)."""
    if view == "Tree":
        marks = report.step_marks(rep, step)
        figures.figure(
            "radix.fig_radix_tree",
            shots.tree(step),
            (int(row.clock_from), int(row.clock_to)),
            rep.steps["clock_to"].to_numpy(),
            marks.ghosts,
            marks.marks,
            frame.presenter(),
            cache_key=f"{replay_key}:{step}",
            key="radix_tree",
        )
        st.caption(
            "Gold halo: used in this step. Dark ring: locked (lock_ref > 0: a running request or a "
            "pending transfer). Grey outline: evicted this step, where it was. Dotted edges: spans being "
            "computed."
        )
        frame.terms("lock_ref", "D/H")
    elif view == "Text dump":
        st.code(shots.dump(step), language=None)
    else:
        data_table(rep.requests, "radix", "per-request table", {"script": name, "source": source, **asdict(config)})


def view_switch() -> str:
    return st.segmented_control(
        "View", ["Tree", "Text dump", "Requests"], default="Tree", required=True, key="radix_view", bind="query-params"
    )


@st.fragment
def stepped_view() -> None:
    """The step controls, the tree and the totals: a step reruns only this part of the page.

    The step controls sit right above the tree, so every ▶ shows its effect without a scroll; in
    presenter mode they go beside it, with the step's words, so that the tree, the words and the
    arrows all fit the first screen of a projector."""
    presenting = frame.presenter()
    if presenting:
        tree_col, say_col = st.columns([3, 2])
        with say_col:
            step = keys.step_controls("radix_step", rep.n_steps, stacked=True)
    else:
        step = keys.step_controls("radix_step", rep.n_steps)
        tree_col, say_col = st.columns([5, 2])
    st.query_params["radix_step"] = str(step)
    with user_errors():
        shots = cached_replay(text, name, tuple(asdict(config).values()), snapshot_window(rep.n_steps, step))
    row = rep.steps.iloc[step]
    with say_col:
        step_words(step, row)
        view = view_switch() if presenting else None
    with tree_col:
        step_figure(step, row, shots, view or view_switch())
    metrics = report.step_metrics(rep, other, step)
    for col, (label, value, tip) in zip(st.columns(len(metrics)), metrics):
        col.metric(label, f"{value:,}", border=True, help=tip)
    figures.figure(
        "radix.fig_radix_totals", totals_frame(rep), step, cache_key=f"{replay_key}:{step}", key="radix_totals"
    )


stepped_view()
frame.explain(report.RULES)
frame.what_to_notice(report.notice(rep, other))
frame.paper_vs_sim(
    report.paper_rows(rep, other, source == "Preset" and preset is PRESETS["sglang9"]), note=report.PAPER_NOTE
)
