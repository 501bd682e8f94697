"""The CacheGen page's streaming views: the timeline of one trace, and violation against the SLO,
the traces' mean bandwidth or their persistence; each ends with the summary and level tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from kvviz.cachegen import figures as figs
from kvviz.cachegen import levels
from kvviz.cachegen import stream_report as report
from kvviz.cachegen import streaming as S
from kvviz.cachegen.inputs import StreamInputs
from kvviz.common import glossary
from ui.cachegen import cached
from ui.cachegen import inputs as cachegen_inputs
from ui.cachegen.codec import STEM
from ui.kit import frame, links
from ui.kit.errors import user_errors
from ui.kit.tables import download_csv
from ui.kit.text import plain
from ui.kit.work import confirm_cost, stepped

TIMELINE = "Streaming timeline"  # the view of one trace; the other streaming view sweeps
AGAINST = ("SLO", "Mean bandwidth", "Persistence")
DEFAULT_POLICIES = ["paper", "artifact", "level2", "quant8", "text", "oracle"]


def prepare(inputs: StreamInputs) -> tuple[S.StreamSetup, S.Bandwidth, levels.Measured]:
    """The measured levels (asking first when that is long), the stream and its bandwidth."""
    with user_errors():
        study = inputs.study
        confirm_cost(levels.cost(study), f"{STEM}_levels")
        measured = cached.measured_levels(study)
        return inputs.setup(measured), cached.bandwidth_of(inputs), measured


def sweep_of(inputs: StreamInputs, slos: tuple[float, ...]) -> pd.DataFrame:
    """Every policy at each SLO, one cached point at a time (the bar is drawn here, not cached)."""
    parts = stepped(
        lambda slo: f"Sweeping the SLO over every trace: {slo:g} s…",
        slos,
        lambda slo: cached.sweep_point(inputs.at_slo(slo), max(slos)),
    )
    return pd.concat(parts, ignore_index=True)


@links.view_fragment("cachegen")
def timeline_part(inputs: StreamInputs, setup: S.StreamSetup, bw: S.Bandwidth, settings: dict) -> None:
    """The policies picked, their timeline and per-chunk table: a change of policies reruns only this part."""
    names = S.policy_names(setup)
    policies = links.worded(
        st.multiselect,
        "Policies (one row each)",
        {p: figs.policy_label(p) for p in names},
        f"{STEM}_policies",
        default=list(DEFAULT_POLICIES),
        **links.PART,
        help="Each row streams the same context over the first trace under one rule. " + glossary.define("TTFT"),
    )
    chosen = tuple(p for p in policies if p in names) or ("paper",)
    with user_errors():
        cached.show(cached.timeline_figure(inputs, chosen, frame.presenter()), f"{STEM}_timeline")
        runs = cached.runs_of(inputs, chosen, True)
    st.caption(
        "A bar's height is the bandwidth that chunk's transfer saw. "
        + (
            "This trace gives each chunk its own bandwidth, whichever level it is sent at, so a chunk's bar is as "
            "tall in every band."
            if bw.kind == "chunk"
            else "The grey line is the trace's bandwidth over time: a policy that finishes later sees a different "
            "part of it."
        )
    )
    frame.terms("TTFT", "SLO", "AR(1)", "i.i.d.")
    table = pd.concat([S.timeline(setup, r) for r in runs], ignore_index=True)
    if box := frame.folded("Per-chunk table: each chunk's level, size, bandwidth and times", f"{STEM}_chunk_table"):
        box.dataframe(named(table), hide_index=True, width="stretch", column_config=cached.FORMATS)
    download_csv(
        table, STEM, "per-chunk table", settings | {"policies": ", ".join(chosen)}, trace=f"{bw.name} (trace 0)"
    )


def stream_view(view: str) -> tuple[list[str], list[dict], str]:
    """A streaming view (the timeline, or violation against SLO, bandwidth or persistence) and the tables
    every streaming view ends with; its "What to notice" points, paper rows and the note under them."""
    against = (
        None
        if view == TIMELINE
        else st.segmented_control(
            "Against", AGAINST, default="SLO", required=True, key=f"{STEM}_against", bind="query-params"
        )
    )
    inputs = cachegen_inputs.stream_inputs(fresh_traces=against == "Persistence")
    setup, bw, measured = prepare(inputs)
    label = plain(bw.name)
    settings = inputs.settings()
    extra = []
    if view == TIMELINE:
        timeline_part(inputs, setup, bw, settings)
        frame.explain(report.TIMELINE_EXPLAIN)
        with user_errors():
            cost = S.stream_cost(setup, bw.traces, len(S.policy_names(setup)), timed=bw.kind == "timed")
            confirm_cost(cost, f"{STEM}_summary")
        summary = sweep_of(inputs, (setup.slo_s,))
    else:
        slos = tuple(report.slo_grid(setup.slo_s))
        repeats = {"SLO": len(slos), "Mean bandwidth": 1}.get(against, len(S.PERSISTENCE_GRID) + 1)
        traces = inputs.bandwidth.traces
        fresh = against == "Persistence"  # only the persistence sweep draws K fresh traces of its own
        cost = S.stream_cost(
            setup,
            traces if fresh else bw.traces,
            len(S.policy_names(setup)),
            repeats,
            timed=bw.kind == "timed" and not fresh,
            shared_oracle=against == "SLO",
        )
        with user_errors():
            confirm_cost(cost, f"{STEM}_sweep")
            if against == "SLO":
                sweep = sweep_of(inputs, slos)
                summary = sweep[np.isclose(sweep.slo_s, setup.slo_s)]
            elif against == "Mean bandwidth":
                runs = cached.runs_of(inputs, S.policy_names(setup), False)
                summary = S.summary(runs).assign(slo_s=setup.slo_s)
            else:
                sweep = pd.concat(
                    stepped(
                        lambda phi: f"Streaming over traces of persistence {phi:g}…",
                        S.PERSISTENCE_GRID,
                        lambda phi: cached.persistence_point(inputs, phi),
                    ),
                    ignore_index=True,
                )
                extra = [report.persistence_notice(sweep)]
                summary = sweep_of(inputs, (setup.slo_s,))
            cached.show(cached.violation_figure(inputs, against, slos, frame.presenter()), f"{STEM}_violation")
        frame.terms("SLO", "TTFT", "AR(1)", "i.i.d.")
        frame.explain(report.sweep_explain(bw.traces, traces))
    shown = summary.drop(columns="slo_s")
    same_quality = not figs.quality_differs(summary)
    st.caption(f"Over {bw.traces:,} trace(s) at SLO {setup.slo_s:g} s ({label}):")
    st.dataframe(
        named(shown.drop(columns="mean_quality") if same_quality else shown),
        hide_index=True,
        width="stretch",
        column_config=cached.FORMATS,
    )
    if same_quality:
        st.caption(_same_quality(summary))
    download_csv(summary, STEM, "summary", settings, trace=bw.name)
    if box := frame.folded("The compression levels, as measured", f"{STEM}_levels_table"):
        box.caption(report.levels_caption(setup, levels.SIZE_SOURCES[inputs.sizes]))
        box.dataframe(named(measured.table), hide_index=True, width="stretch", column_config=cached.FORMATS)
    download_csv(measured.table, STEM, "measured levels", settings)
    return (
        report.stream_notice(summary, label) + extra,
        report.paper_rows(setup, summary, label, levels.SIZE_SOURCES[inputs.sizes]),
        report.stream_note(setup, summary),
    )


def _same_quality(summary: pd.DataFrame) -> str:
    """The caption's words for a quality that is the same for every policy (its column, all one
    number, is left out of the table on screen; the CSV keeps it)."""
    mean = float(summary["mean_quality"].mean()) if len(summary) else 1.0
    return f"Quality is {mean:.0%} for every policy, so the table leaves it out (the CSV keeps it)."


def named(table: pd.DataFrame) -> pd.DataFrame:
    """A table as shown: its policies and configurations named as the chips and legends name them ("8-bit
    quant", "level 2"), not by their short names (the CSV keeps those)."""
    return table.assign(**{c: table[c].map(figs.policy_label) for c in ("policy", "config") if c in table})
