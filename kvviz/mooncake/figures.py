"""Figures of the Mooncake cluster page: overload timelines and the scheduler comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.style import color
from kvviz.mooncake.conductor import PAPER_FIG8_TTFT_S, REJECTED_TBT, REJECTED_TTFT, SCHEDULER_LABELS, ScheduleResult
from kvviz.mooncake.overload import POLICY_LABELS, POLICY_SHORT, OverloadResult

PREFILL, DECODE = color(0), color(1)
ADMITTED, REJ_EARLY, REJ_DECODE = color(2), "#f2b134", color(3)


SMOOTH_S = 10.0
# Points per load curve at most: a span longer than MAX_DRAWN smoothing windows (a replayed trace of
# days) is averaged over windows that long instead, so a curve ~1,000 px wide never carries 100,000
# points (tens of MB of figure for the browser to draw, and most of the rerun's time).
MAX_DRAWN = 2_000
# Points per scheduler on the TTFT distribution: 400 quantiles draw the curve as smoothly as every
# request on a figure ~1,000 px wide; 2,000 made it a 310 KB figure for 3,000 requests.
ECDF_POINTS = 400
LEGEND_HEADROOM = 1.3  # the outcomes' y axis reaches 30% past the tallest bar: room for the legend inside


def _samples(loads: pd.DataFrame, seconds: float) -> int:
    """How many load samples span ``seconds``."""
    step = float(loads["time_s"].iloc[1] - loads["time_s"].iloc[0]) if len(loads) > 1 else 1.0
    return max(1, int(round(seconds / step)))


def smoothed(loads: pd.DataFrame, seconds: float = SMOOTH_S) -> pd.DataFrame:
    """Loads averaged over a trailing ``seconds`` window (the raw 1-s samples flicker)."""
    out = loads.copy()
    cols = ["prefill_load", "decode_load"]
    out[cols] = loads[cols].rolling(_samples(loads, seconds), min_periods=1).mean()
    return out


def drawn_loads(loads: pd.DataFrame) -> pd.DataFrame:
    """The smoothed loads once per smoothing window (each point the mean of the window before it):
    the curve the smoothing shows, with a tenth of the points to draw (the browser's redraw is most
    of a rerun). The window is ``SMOOTH_S``, or the span over ``MAX_DRAWN`` where that is longer."""
    span = float(loads["time_s"].iloc[-1] - loads["time_s"].iloc[0]) if len(loads) > 1 else 0.0
    seconds = max(SMOOTH_S, span / MAX_DRAWN)
    return smoothed(loads, seconds).iloc[:: _samples(loads, seconds)]


def _load_traces(fig: go.Figure, loads: pd.DataFrame, row: int | None, legend: bool, base: float = 0.0) -> None:
    """Prefill and decode load over time in minutes, lifted by ``base`` (a band of a banded figure;
    the hover shows the load itself), on subplot ``row`` when there are subplots."""
    loads = drawn_loads(loads)
    minutes = loads["time_s"] / 60
    where = dict(row=row, col=1) if row else {}
    series = (("prefill_load", "Prefill load", "p", PREFILL), ("decode_load", "Decode load", "d", DECODE))
    for col, name, group, c in series:
        fig.add_trace(
            go.Scatter(
                x=minutes,
                y=loads[col] + base,
                customdata=loads[col],
                name=name,
                legendgroup=group,
                showlegend=legend,
                line=dict(color=c),
                hovertemplate="%{customdata:.2f} at %{x:.1f} min",
            ),
            **where,
        )


def fig_timeline(result: OverloadResult) -> go.Figure:
    """One policy: prefill and decode load over time, and what happened to arrivals per window."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38], vertical_spacing=0.06)
    _load_traces(fig, result.loads, 1, True)
    tl = result.timeline
    width = float(tl["start_s"].iloc[1] - tl["start_s"].iloc[0]) if len(tl) > 1 else result.totals["window_s"]
    x = np.append(tl["start_s"].to_numpy(float), tl["start_s"].iloc[-1] + width) / 60 if len(tl) else []
    # Stacked step areas, one path per outcome: they look like touching bars, and draw far faster than
    # a bar per window (the browser's redraw is most of a rerun). The last window's value repeats at its end.
    for col, name, c in (
        ("admitted", "Admitted", ADMITTED),
        ("rejected_early", "Rejected on arrival", REJ_EARLY),
        ("rejected_decode", "Rejected after prefill (wasted)", REJ_DECODE),
    ):
        y = np.append(tl[col].to_numpy(), tl[col].iloc[-1:])
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=name,
                stackgroup="outcome",
                mode="lines",
                fillcolor=c,
                line=dict(shape="hv", width=0, color=c),
                hovertemplate="%{y:,.0f}",
            ),
            row=2,
            col=1,
        )
    fig.update_layout(
        height=520,
        title=f"{POLICY_LABELS[result.policy]}: load and admissions over time "
        f"({result.totals['window_s']:,g}-s windows)",
        legend=dict(orientation="h", x=0, y=-0.16, yanchor="top"),
    )
    fig.update_yaxes(title_text="Load (1 = SLO)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="Requests / window", row=2, col=1)
    fig.update_xaxes(title_text="Time (minutes)", row=2, col=1)
    return fig


BAND_GAP = 0.25  # empty space between two policies' bands, as a share of a band's height


def _load_ticks(top: float) -> np.ndarray:
    """Two to five round load values from 0 up to ``top``, for each band's labelled ticks."""
    step = next(s for m in 10.0 ** np.arange(-2, 6) for s in (m, 2 * m, 2.5 * m, 5 * m) if top / s <= 4)
    return np.arange(0, top + 1e-9, step)


def fig_policy_multiples(runs: dict[str, OverloadResult]) -> go.Figure:
    """Small multiples: prefill and decode load of every policy, one band per policy on a shared time axis.

    The bands share one pair of axes (each policy's loads lifted to its band), not a subplot per
    policy: the browser redraws one axis pair much faster than four, and the figure is redrawn on
    every change of the arrivals or the cluster."""
    policies = list(runs)
    top = 1.05 * max(
        [1.0] + [float(r.loads[["prefill_load", "decode_load"]].to_numpy().max(initial=0)) for r in runs.values()]
    )
    pitch, ticks = top * (1 + BAND_GAP), _load_ticks(top)
    fig = go.Figure()
    tickvals, ticktext = [], []
    for i, p in enumerate(policies):
        base = (len(policies) - 1 - i) * pitch
        _load_traces(fig, runs[p].loads, None, i == 0, base)
        fig.add_annotation(
            x=0.5,
            xref="x domain",
            y=base + top,
            yref="y",
            yanchor="bottom",
            showarrow=False,
            text=POLICY_LABELS[p],
            font_size=15,
        )
        tickvals += list(base + ticks)
        ticktext += [f"{t:g}" for t in ticks]
    fig.update_yaxes(
        range=[0, (len(policies) - 1) * pitch + top],
        tickmode="array",
        tickvals=tickvals,
        ticktext=ticktext,
        zeroline=False,
        title_text="Load (one band per policy)",
    )
    fig.update_xaxes(title_text="Time (minutes)")
    fig.update_layout(
        height=170 * len(policies) + 110,
        title="The same arrivals under each policy",
        legend=dict(orientation="h", x=0, y=-0.06, yanchor="top"),
    )
    return fig


def fig_totals(table: pd.DataFrame) -> go.Figure:
    """Completed, rejected-on-arrival and rejected-after-prefill requests per policy (mean, ± 1 sd).

    The policies go by their short names (the full one in the hover), which stay level under the bars
    at a laptop's width, and the legend is one row at the top of the plot, in room the y axis leaves
    above the tallest bar: the figure's margins need hold only one line of labels."""
    labels = [POLICY_SHORT[p] for p in table["policy"]]
    full = [POLICY_LABELS[p] for p in table["policy"]]
    fig = go.Figure()
    outcomes = (
        ("completed", "Completed", ADMITTED),
        ("rejected_early", "Rejected on arrival", REJ_EARLY),
        ("rejected_after_prefill", "Rejected after prefill (wasted)", REJ_DECODE),
    )
    for col, name, c in outcomes:
        fig.add_trace(
            go.Bar(
                x=labels,
                y=table[col],
                name=name,
                marker_color=c,
                error_y=dict(type="data", array=table[f"{col}_sd"], visible=True),
                customdata=full,
                hovertemplate="%{customdata}: %{y:,.0f}",
            )
        )
    seeds = int(table["seeds"].iloc[0]) if len(table) else 0
    tallest = max((table[col] + table[f"{col}_sd"].fillna(0)).max() for col, _, _ in outcomes) if len(table) else 0
    fig.update_yaxes(range=[0, max(tallest, 1) * LEGEND_HEADROOM])
    fig.update_layout(
        barmode="group",
        title=f"Outcomes per policy (mean of {seeds} run{'s' * (seeds != 1)}, ± 1 sd)",
        yaxis_title="Requests",
        legend=dict(orientation="h", x=0.01, y=0.99, yanchor="top"),
    )
    return fig


def fig_ttft_ecdf(results: dict[str, ScheduleResult]) -> go.Figure:
    """Distribution of the admitted requests' TTFT per scheduler (empirical CDF, log time axis)."""
    fig = go.Figure()
    for i, (name, r) in enumerate(results.items()):
        t = np.sort(r.accepted_ttft_s)
        if len(t) > ECDF_POINTS:  # thin the curve, keep its shape and both ends
            idx = np.unique(np.linspace(0, len(t) - 1, ECDF_POINTS).astype(int))
            t, y = t[idx], (idx + 1) / len(r.accepted_ttft_s)
        else:
            y = np.arange(1, len(t) + 1) / len(t)
        fig.add_trace(go.Scatter(x=t, y=y, name=SCHEDULER_LABELS[name], mode="lines", line=dict(color=color(i))))
    fig.update_xaxes(type="log", title_text="TTFT (s, log scale)")
    fig.update_yaxes(title_text="Share of requests ≤ x", range=[0, 1.02])
    rejected = any(not r.accepted.all() for r in results.values())
    title = "Time to first token of the admitted requests" if rejected else "Time to first token per scheduler"
    fig.update_layout(title=title, legend=dict(x=0.01, y=0.99))
    return fig


def fig_schedule_bars(results: dict[str, ScheduleResult]) -> go.Figure:
    """Cache hit ratio and busiest-instance load over average, per scheduler."""
    names = [SCHEDULER_LABELS[k] for k in results]
    colors = [color(i) for i in range(len(results))]
    hit = [r.hit_ratio for r in results.values()]
    imb = [r.imbalance for r in results.values()]
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("Cache hit ratio (blocks reused)", "Busiest instance ÷ average load")
    )
    for col, values in enumerate((hit, imb), start=1):
        text = [f"{v:.2f}" for v in values]
        bars = go.Bar(x=names, y=values, marker_color=colors, text=text, textposition="outside", showlegend=False)
        fig.add_trace(bars, row=1, col=col)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(range=[0, max(imb + [1.0]) * 1.2], row=1, col=2)
    return level_names(fig, names)


def level_names(fig: go.Figure, names: list[str]) -> go.Figure:
    """The schedulers' names level under their bars, on two lines where they are long, so a narrow
    screen reads them without tilting its head."""
    wrapped = [n.replace(" ", "<br>", 1).replace("Cache-", "Cache-<br>", 1) if len(n) > 8 else n for n in names]
    fig.update_xaxes(tickmode="array", tickvals=names, ticktext=wrapped, tickangle=0)
    return fig


def fig_fig8(results: dict[str, ScheduleResult]) -> go.Figure:
    """Mooncake's Figure 8 beside this simulation: average TTFT per scheduler."""
    keys = [k for k in PAPER_FIG8_TTFT_S if k in results]
    names = [SCHEDULER_LABELS[k] for k in keys]
    colors = [color(list(results).index(k)) for k in keys]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Paper, Fig. 8 (8P+8D, 23k real requests)", "This simulation"))
    paper = [PAPER_FIG8_TTFT_S[k] for k in keys]
    sim = [results[k].mean_ttft_s for k in keys]
    for col, values in ((1, paper), (2, sim)):
        fig.add_trace(
            go.Bar(
                x=names,
                y=values,
                marker_color=colors,
                showlegend=False,
                text=[f"{v:.2f} s" if v < 10 else f"{v:.0f} s" for v in values],
                textposition="outside",
            ),
            row=1,
            col=col,
        )
        fig.update_yaxes(
            title_text="Average TTFT (s)" if col == 1 else None, range=[0, max(values + [1e-3]) * 1.2], row=1, col=col
        )
    fig.update_layout(title="Average TTFT: the paper's order and this run's", height=360)
    return level_names(fig, names)


def fig_admission(results: dict[str, ScheduleResult]) -> go.Figure:
    """Per scheduler: requests served within both SLOs, served late, and rejected by reason; goodput above."""
    names = [SCHEDULER_LABELS[k] for k in results]
    served = [r.within_slo for r in results.values()]
    parts = (
        ("Served within both SLOs", served, ADMITTED),
        ("Served, an SLO missed", [int(r.accepted.sum()) - w for r, w in zip(results.values(), served)], REJ_EARLY),
        ("Rejected: TTFT over its SLO", [r.rejected(REJECTED_TTFT) for r in results.values()], REJ_DECODE),
        ("Rejected: TBT over its SLO", [r.rejected(REJECTED_TBT) for r in results.values()], color(4)),
    )
    fig = go.Figure()
    for name, values, c in parts:
        fig.add_trace(go.Bar(x=names, y=values, name=name, marker_color=c, hovertemplate="%{y:,}"))
    total = max((len(r.ttft_s) for r in results.values()), default=0)
    fig.add_trace(
        go.Scatter(
            x=names,
            y=[total] * len(names),
            mode="text",
            text=[f"goodput {r.goodput_rps:.2f} req/s" for r in results.values()],
            textposition="top center",
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        barmode="stack",
        title="What happened to the requests",
        yaxis=dict(title="Requests", range=[0, total * 1.15 if total else 1]),
        legend=dict(orientation="h", x=0, y=-0.15, yanchor="top"),
    )
    return fig
