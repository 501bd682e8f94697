"""Radix cache & HiCache: SGLang's prefix tree and its GPU/CPU tiers, stepped through operation by operation."""

from dataclasses import asdict, replace

import streamlit as st

from kvviz.radix import report
from kvviz.radix.presets import PRESETS
from kvviz.radix.script import to_text
from kvviz.radix.trace_replay import script_from_trace
from ui.kit import frame, links
from ui.kit.errors import user_errors
from ui.kit.text import plain
from ui.kit.traces import session_trace
from ui.radix import sidebar as radix_sidebar
from ui.radix import stepped
from ui.radix.controls import cached_replay, seed_from_preset

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
        links.stop()
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
elif rep.stalled:
    st.info(f"**The simulation stalls here.** {rep.stalled}", icon=":material/hourglass_disabled:")
stepped.start_step(rep.n_steps)
stepped.stepped_view(stepped.Stepped(text, name, source, config, rep, other))
frame.explain(report.RULES)
frame.what_to_notice(report.notice(rep, other))
frame.paper_vs_sim(
    report.paper_rows(rep, other, source == "Preset" and preset is PRESETS["sglang9"]), note=report.PAPER_NOTE
)
