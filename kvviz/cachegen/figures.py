"""Figures of the CacheGen page: the streaming timeline, violation rate against the SLO, and the
codec's bits-per-value against error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.cachegen.streaming import Bandwidth, Run, StreamSetup
from kvviz.common.style import INK, PALETTE, color, series_style

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, _, GREY, INDIGO = PALETTE
MET, MISSED = GREEN, VERMILLION  # a TTFT within / over the SLO; the SLO line itself is vermillion
POLICY_LABELS = {
    "paper": "paper rule",
    "artifact": "artifact rule",
    "quant8": "8-bit quant",
    "text": "text only",
    "oracle": "oracle (bound)",
}
LEVEL_COLORS = (SKY, BLUE, INDIGO)  # level 1 (fewest bits) light to level 3 (most bits) dark


def config_colors(names: tuple[str, ...]) -> dict[str, str]:
    """Configurations of a chunk: levels light to dark blue, 8-bit quantisation orange, text grey
    (and hatched, so it reads without colour)."""
    levels = [n for n in names if n not in ("quant8", "text")]
    out = {n: LEVEL_COLORS[i] if i < len(LEVEL_COLORS) else color(i) for i, n in enumerate(levels)}
    out.update(quant8=ORANGE, text=GREY)
    return out


def policy_label(name: str) -> str:
    return POLICY_LABELS.get(name, name.replace("level", "level "))


def _bandwidth_line(bw: Bandwidth, until: float) -> tuple[np.ndarray, np.ndarray]:
    times = np.append(bw.times[0], max(until, bw.times[0, -1]))
    return times, np.append(bw.gbps[0], bw.gbps[0, -1])


def _row_label(run: Run, trace: int) -> str:
    """A row's title: the policy and its TTFT against the SLO (in words, not only in colour)."""
    ttft, ok = float(run.ttft[trace]), bool(run.met[trace])
    verdict = f"<span style='color:{MET if ok else MISSED}'>TTFT {ttft:.2f} s {'✓ met' if ok else '✗ missed'}</span>"
    return f"<b>{policy_label(run.policy)}</b> · {verdict}"


BAND_GAP = 0.25  # empty space between two policies' bands, as a share of a band's height


def _nice_tick(top: float) -> float:
    """A round Gb/s value a little under the band's top, for the one labelled tick of each band."""
    step = 10 ** np.floor(np.log10(top * 0.7))
    return float(np.floor(top * 0.7 / step) * step)


def fig_timeline(setup: StreamSetup, runs: list[Run], bw: Bandwidth, trace: int = 0) -> go.Figure:
    """One band per policy, top to bottom in order: each chunk is a bar over [start, end], as tall
    as the bandwidth its transfer saw and coloured by the configuration chosen; the SLO line and
    each TTFT marked (the TTFT's value sits in the band's title, where no bar or line can cross it).
    For a timed trace the bandwidth itself is drawn behind the bars.

    The bands share one pair of axes (each bar stands on its band's base), not one subplot per
    policy: the browser redraws a single axis pair four times faster than six, and the figure is
    redrawn on every change of the stream. Shapes and annotations are collected and set once."""
    colors = config_colors(setup.config_names)
    names = np.array(setup.config_names)
    until = max(setup.slo_s, max(float(r.ttft[trace]) for r in runs)) * 1.06
    top = max(float(bw.gbps[trace].max()), max(float(r.seen_gbps[trace].max()) for r in runs)) * 1.45
    pitch = top * (1 + BAND_GAP)
    fig = go.Figure()
    shapes, notes, shown, ticks, labels = [], [], set(), [], []
    tick = _nice_tick(top)
    for row, run in enumerate(runs):
        base = (len(runs) - 1 - row) * pitch
        if bw.kind == "timed":
            t, g = _bandwidth_line(bw, until)
            fig.add_trace(
                go.Scatter(
                    x=t,
                    y=g + base,
                    customdata=g,
                    mode="lines",
                    name="bandwidth",
                    legendgroup="bw",
                    line=dict(shape="hv", color=GREY, width=1.5),
                    showlegend=row == 0,
                    hovertemplate="%{customdata:.2f} Gb/s from %{x:.2f} s<extra></extra>",
                )
            )
        start, end = run.start[trace], run.end[trace]
        for name in setup.config_names:
            pick = names[run.config[trace]] == name
            if not pick.any():
                continue
            chunks = np.flatnonzero(pick)
            fig.add_trace(
                go.Bar(
                    x=(start[pick] + end[pick]) / 2,
                    width=end[pick] - start[pick],
                    y=run.seen_gbps[trace, pick],
                    base=base,
                    marker=dict(
                        color=colors[name],
                        line=dict(color="white", width=1),
                        pattern_shape="/" if name == "text" else "",
                    ),
                    name=name,
                    legendgroup=name,
                    showlegend=name not in shown,
                    legendrank=setup.config_names.index(name),
                    customdata=np.stack([chunks, start[pick], end[pick], run.bits[trace, pick] / 8e6], axis=1),
                    hovertemplate=(
                        f"{policy_label(run.policy)} · chunk %{{customdata[0]}} · {name}<br>"
                        "%{customdata[1]:.3f}–%{customdata[2]:.3f} s · %{customdata[3]:.1f} MB"
                        "<br>bandwidth seen %{y:.2f} Gb/s<extra></extra>"
                    ),
                )
            )
            shown.add(name)
        ttft, ok = float(run.ttft[trace]), bool(run.met[trace])
        fig.add_trace(
            go.Scatter(
                x=[ttft],
                y=[base + top * 0.12],
                mode="markers",
                marker=dict(
                    symbol="diamond", size=13, color=MET if ok else MISSED, line=dict(color="white", width=1.5)
                ),
                showlegend=False,
                name=f"TTFT {policy_label(run.policy)}",
                hovertemplate=f"TTFT {ttft:.3f} s<extra></extra>",
            )
        )
        shapes.append(
            dict(
                type="line",
                x0=setup.slo_s,
                x1=setup.slo_s,
                xref="x",
                y0=base,
                y1=base + top,
                yref="y",
                line=dict(color=MISSED, dash="dash", width=2),
            )
        )
        shapes.append(
            dict(type="line", x0=0, x1=1, xref="x domain", y0=base, y1=base, yref="y", line=dict(color=INK, width=1))
        )
        notes.append(
            dict(
                x=0.005,
                y=base + top * 0.98,
                xref="x domain",
                yref="y",
                text=_row_label(run, trace),
                showarrow=False,
                xanchor="left",
                yanchor="top",
                bgcolor="rgba(255,255,255,0.85)",
            )
        )
        ticks += [base, base + tick]
        labels += ["0", f"{tick:g}"]
    notes.append(
        dict(
            x=setup.slo_s,
            y=1.0,
            xref="x",
            yref="paper",
            text=f"SLO {setup.slo_s:g} s",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font=dict(color=MISSED),
        )
    )
    fig.update_layout(
        barmode="overlay",
        bargap=0,
        height=130 * len(runs) + 120,
        shapes=shapes,
        annotations=notes,
        legend=dict(orientation="h", y=-0.08, x=0),
    )
    fig.update_yaxes(
        title_text="Gb/s seen (one band per policy)",
        range=[-top * 0.05, len(runs) * pitch - top * BAND_GAP],
        tickmode="array",
        tickvals=ticks,
        ticktext=labels,
        zeroline=False,
    )
    fig.update_xaxes(title_text="time since the request (s)", range=[0, until])
    return fig


POLICY_COLORS = {
    "paper": BLUE,
    "artifact": VERMILLION,
    "level1": SKY,
    "level2": GREEN,
    "level3": PURPLE,
    "quant8": ORANGE,
    "text": GREY,
}


def policy_colors(policies) -> dict[str, str]:
    """A palette colour per policy (its dash and marker follow from it, ``kvviz.common.style``); the oracle,
    the bound, in ink."""
    spare = iter(c for c in PALETTE if c not in POLICY_COLORS.values())
    return {p: INK if p == "oracle" else POLICY_COLORS.get(p) or next(spare, INK) for p in policies}


QUALITY_SPREAD = 0.005  # mean qualities closer than this (half a point) tell the policies apart by nothing


def quality_differs(sweep: pd.DataFrame) -> bool:
    """Whether the policies' mean quality differs anywhere in the sweep. Where every level the
    policies pick answers the record-world questions as full precision does, the quality proxy is
    100% for all of them: a panel of flat lines that would read as a bug, so it is not drawn."""
    q = sweep["mean_quality"]
    return bool(len(q)) and float(q.max() - q.min()) > QUALITY_SPREAD


def fig_violation(sweep: pd.DataFrame, slo_now: float | None = None, x: str = "slo_s") -> go.Figure:
    """SLO-violation rate against the SLO (``x="slo_s"``, log axis), the traces' mean bandwidth
    (``x="mean_gbps"``) or their persistence (``x="persistence"``), one line per policy; beside it the
    mean quality proxy when it tells the policies apart (``quality_differs``), else the title says why
    there is no quality panel."""
    policies = list(dict.fromkeys(sweep["policy"]))
    colors = policy_colors(policies)
    x_label = {
        "slo_s": "SLO (s)",
        "mean_gbps": "mean bandwidth the chunks see (Gb/s)",
        "persistence": "persistence (lag-1 correlation)",
    }[x]
    panels = (("violation_rate", "SLO-violation rate"),)
    if quality_differs(sweep):
        panels += (("mean_quality", "mean quality proxy"),)
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        horizontal_spacing=0.1,
        subplot_titles=[t for _, t in panels] if len(panels) > 1 else None,
    )
    for p in policies:
        d = sweep[sweep.policy == p]
        dash = "dot" if p == "oracle" else None  # the others: their colour's dash
        for col, (ycol, _) in enumerate(panels, start=1):
            fig.add_trace(
                go.Scatter(
                    x=d[x],
                    y=d[ycol],
                    mode="lines+markers",
                    name=policy_label(p),
                    legendgroup=p,
                    showlegend=col == 1,
                    line=dict(color=colors[p], dash=dash),
                    hovertemplate=f"{policy_label(p)}<br>{x_label} %{{x:.2f}}: %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    if slo_now is not None and x == "slo_s":
        for col in range(1, len(panels) + 1):
            fig.add_vline(x=slo_now, line=dict(color=MISSED, dash="dash", width=1.5), row=1, col=col)
    fig.update_yaxes(tickformat=".0%", range=[-0.02, 1.02])  # both are shares: violations and quality
    fig.update_xaxes(title_text=x_label, type="log" if x == "slo_s" else "linear")
    if len(panels) == 1:
        same = float(sweep["mean_quality"].mean()) if len(sweep) else 1.0
        fig.update_layout(
            title=f"SLO-violation rate<br><sup>Quality is {same:.0%} for every policy here (every level they "
            "pick answers as full precision does), so it tells them apart by nothing and is not drawn</sup>"
        )
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.22, x=0))
    return fig


def fig_pareto(points: pd.DataFrame, error: str = "weighted_error") -> go.Figure:
    """Bits per value against error (log) per encoder variant across levels, with the baselines."""
    fig = go.Figure()
    curves = points[points.level.notna()]
    for i, (name, d) in enumerate(curves.groupby("variant", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=d.bits_per_value,
                y=d[error],
                mode="lines+markers+text" if i == 0 else "lines+markers",
                name=name,
                text=[f"L{int(v)}" for v in d.level],
                textposition="bottom left",
                textfont=dict(size=12),
                marker=series_style(i).marker(),
                line=series_style(i).line(),
                hovertemplate=f"{name}<br>level %{{text}}: %{{x:.2f}} bits/value, error %{{y:.3~g}}<extra></extra>",
            )
        )
    base = points[points.level.isna()]
    lossy = base[~base.variant.str.startswith("zlib")]
    fig.add_trace(
        go.Scatter(
            x=lossy.bits_per_value,
            y=lossy[error],
            mode="markers+text",
            name="fixed-width quantization",
            text=lossy.variant,
            textposition="middle right",
            marker=dict(symbol="star", size=14, color=INK),
            hovertemplate="%{text}: %{x:.2f} bits/value, error %{y:.3~g}<extra></extra>",
        )
    )
    for _, z in base[base.variant.str.startswith("zlib")].iterrows():
        fig.add_vline(
            x=z.bits_per_value,
            line=dict(color=GREY, dash="dot"),
            annotation_text=f"zlib on fp16: {z.bits_per_value:.1f} bits, lossless",
            annotation_position="top left",
        )
    fig.update_layout(
        height=520,
        xaxis_title="bits per KV value (everything sent)",
        yaxis_title="relative squared error" + (" (layer-weighted)" if error == "weighted_error" else ""),
        legend=dict(orientation="h", y=-0.18, x=0),
    )
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_xaxes(range=[0, float(points.bits_per_value.max()) * 1.06])  # room right of the zlib line
    return fig


def fig_quality(points: pd.DataFrame) -> go.Figure:
    """Bits per value against the model's loss per encoder variant across levels, with fixed-width
    quantization: mean KL of the answer distribution from full precision (log) and the accuracy."""
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=("KL of the answers from full precision (nats)", "accuracy"),
    )
    curves = points[points.level.notna()]
    for i, (name, d) in enumerate(curves.groupby("variant", sort=False)):
        for col, ycol in ((1, "kl"), (2, "accuracy")):
            fig.add_trace(
                go.Scatter(
                    x=d.bits_per_value,
                    y=d[ycol],
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    marker=series_style(i).marker(),
                    line=series_style(i).line(),
                    customdata=d.level,
                    hovertemplate=f"{name}<br>level %{{customdata}}: %{{x:.2f}} bits/value, {ycol} %{{y:.3g}}"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
    base = points[points.level.isna() & ~points.variant.str.startswith("zlib")]
    for col, ycol in ((1, "kl"), (2, "accuracy")):
        fig.add_trace(
            go.Scatter(
                x=base.bits_per_value,
                y=base[ycol],
                mode="markers",
                name="fixed-width quantization",
                legendgroup="fixed",
                showlegend=col == 1,
                text=base.variant,
                marker=dict(symbol="star", size=14, color=INK),
                hovertemplate="%{text}: %{x:.2f} bits/value, %{y:.3g}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=1)
    fig.update_yaxes(tickformat=".1%", row=1, col=2)
    fig.update_xaxes(title_text="bits per KV value (everything sent)")
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.22, x=0))
    return fig
