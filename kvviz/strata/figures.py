"""Figures of the Strata page: bandwidth against page size, the loading-bound prefill, the batch timeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvviz.common.style import color
from kvviz.ledger.figures import INK_GRAY, reference_hline, reference_vline
from kvviz.strata.io import STRATA_THRESHOLD, Schedule

STALL = "#d62728"
LOAD = "#a3a8b4"


def fig_page_sweep(
    sweep: pd.DataFrame, link_gb_s: float, platform: str, paper: Sequence[tuple[int, float]] = ()
) -> go.Figure:
    """Effective CPU→GPU bandwidth against page size for each layout, with the link's peak."""
    fig = go.Figure()
    for i, (layout, part) in enumerate(sweep.groupby("layout", sort=False)):
        fig.add_scatter(
            x=part["page tokens"],
            y=part["effective GB/s"],
            mode="lines+markers",
            name=layout,
            line=dict(color=color(i)),
            customdata=np.c_[part["copy KiB"], 100 * part["share of peak"]],
            hovertemplate=layout + ": page %{x} → %{y:.1f} GB/s (%{customdata[1]:.1f}% of peak; "
            "%{customdata[0]:,.0f} KiB per copy)<extra></extra>",
        )
    reference_hline(
        fig,
        link_gb_s,
        [sweep["page tokens"].min(), sweep["page tokens"].max()],
        f"{platform} peak {link_gb_s:g} GB/s",
        INK_GRAY,
        "dash",
    )
    for page, share in paper:
        fig.add_scatter(
            x=[page],
            y=[share * link_gb_s],
            mode="markers",
            name=f"paper: {share:.0%} at page {page}",
            marker=dict(symbol="star", size=16, color="black"),
        )
    fig.update_xaxes(type="log", title_text="page size (tokens)", dtick=np.log10(2) * 2)
    fig.update_yaxes(type="log", title_text="effective bandwidth (GB/s)")
    fig.update_layout(title=f"Small pages waste the link: {platform}", height=480)
    return fig


def fig_loading(curve: pd.DataFrame, knees: Mapping[str, float], new_tokens: int) -> go.Figure:
    """Compute time and load time against the load/compute token ratio; knees where they cross."""
    fig = go.Figure()
    fig.add_scatter(
        x=curve["ratio"],
        y=curve["compute ms"],
        mode="lines",
        name=f"compute {new_tokens} new tokens",
        line=dict(color="black", width=3),
    )
    for i, name in enumerate(knees):
        fig.add_scatter(
            x=curve["ratio"],
            y=curve[f"{name} load ms"],
            mode="lines",
            name=f"load via {name}",
            line=dict(color=color(i)),
        )
    times = curve[[c for c in curve.columns if c.endswith(" ms")]].to_numpy()
    ys = [times.min(), times.max()]
    for i, knee in enumerate(knees.values()):
        if np.isfinite(knee) and curve["ratio"].min() <= knee <= curve["ratio"].max():
            reference_vline(fig, knee, ys, f"knee {knee:.3g}", color(i), level=i)
    reference_vline(fig, STRATA_THRESHOLD, ys, "Strata's 100", INK_GRAY, "dash", level=len(knees))
    fig.update_xaxes(type="log", title_text="load/compute ratio (cached tokens ÷ new tokens)")
    fig.update_yaxes(type="log", title_text="time (ms)", dtick=1)
    fig.update_layout(title="Right of a knee the prefill is loading-bound", height=480)
    return fig


def _mix(requests) -> str:
    kinds = {r.kind for r in requests}
    return "mixed" if len(kinds) > 1 else next(iter(kinds))


MIX_COLOR = {"long doc + question": color(1), "fresh prompt": color(0), "mixed": color(2)}


def _lanes(schedule: Schedule) -> tuple[str, str]:
    """A policy's load lane and compute lane."""
    label = "FCFS" if schedule.policy == "fcfs" else "Balanced"
    return f"{label} · load", f"{label} · compute"


def fig_timeline(schedules: Sequence[Schedule]) -> go.Figure:
    """Per policy, a load lane and a compute lane: one bar per batch; red is compute waiting for KV.

    One bar trace per legend entry (load, stall, each compute mix) holds all its bars: a trace per
    bar made 80 traces, and the browser's redraw of a figure grows with its traces."""
    bars: dict[str, dict[str, list]] = {}  # legend entry -> its bars' lanes, lengths, starts and hovers

    def bar(entry: str, lane: str, length: float, start: float, hover: str, extra: str) -> None:
        columns = bars.setdefault(entry, {"y": [], "x": [], "base": [], "customdata": []})
        for column, value in zip(columns.values(), (lane, length, start, (hover, extra))):
            column.append(value)

    lanes = []
    for s in schedules:
        load_lane, comp_lane = _lanes(s)
        lanes += [load_lane, comp_lane]
        for b in s.batches:
            names = " + ".join(r.kind for r in b.requests)
            if b.load_s > 0:
                bar("load", load_lane, b.load_s, b.start_s, f"batch {b.index}: load {b.load_s * 1e3:.0f} ms", names)
            if b.stall_s > 1e-9:
                bar("stall", comp_lane, b.stall_s, b.start_s, f"batch {b.index}: stalled {b.stall_s * 1e3:.0f} ms", "")
            bar(
                _mix(b.requests),
                comp_lane,
                b.compute_s,
                b.start_s + b.stall_s,
                f"batch {b.index}: compute {b.compute_s * 1e3:.0f} ms",
                names,
            )
    fig = go.Figure()
    for entry, columns in bars.items():
        look = (
            dict(name="load", marker_color=LOAD)
            if entry == "load"
            else dict(name="stall (waiting for KV)", marker_color=STALL)
            if entry == "stall"
            else dict(name=f"compute: {entry}", marker=dict(color=MIX_COLOR[entry], line=dict(color="white", width=1)))
        )
        fig.add_bar(
            **columns,
            orientation="h",
            legendgroup=entry,
            **look,
            hovertemplate="%{customdata[0]}<extra>%{customdata[1]}</extra>",
        )
    for s in schedules:
        fig.add_annotation(
            x=s.total_s,
            y=_lanes(s)[1],
            text=f"{s.total_s:.2f} s, {s.stall_s:.2f} s stalled",
            showarrow=False,
            xanchor="left",
            xshift=6,
            font=dict(size=13),
        )
    fig.update_layout(
        barmode="overlay",
        title="Batch timeline: FCFS vs balanced batching",
        height=380,
        yaxis=dict(categoryorder="array", categoryarray=lanes[::-1]),
        legend=dict(orientation="h", y=-0.25),
        xaxis_title="time (s)",
    )
    fig.update_xaxes(range=[0, max(s.total_s for s in schedules) * 1.28])
    return fig
