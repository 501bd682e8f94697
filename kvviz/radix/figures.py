"""Figures of the radix page: the tree as a node-link diagram, and the running totals.

The tree is laid out left to right (depth across, leaves down, as in a file tree) by a tidy
layout computed here: leaves take consecutive rows in depth-first order and a parent sits at the
middle of its children. Chains of single children in the same state are drawn as one node, and only
the largest nodes are labelled, so a few hundred nodes stay readable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.common.style import BASE_PX, INK, LINE_EM, PALETTE, PRESENTER_GROWTH, PRESENTER_PX

STATE_STYLE: dict[str, tuple[str, str]] = {  # state -> (legend name, colour)
    "D": ("GPU only (D)", PALETTE[0]),
    "D+H": ("GPU + CPU (D+H)", PALETTE[2]),
    "H": ("CPU only (H)", PALETTE[1]),
    "in-flight": ("in flight", PALETTE[4]),
}
ROOT_COLOR = "#6c8893"
LOCK_COLOR = INK
TOUCH_COLOR = "#f2b400"
GHOST_COLOR = "#9aa3b2"
MARKS: dict[str, tuple[str, str, str]] = {  # mark -> (legend name, symbol, colour)
    "split": ("split this step", "diamond-open", PALETTE[5]),
    "loaded": ("loaded back this step", "triangle-up-open", PALETTE[2]),
}


def ghost_rows(evicted: pd.DataFrame) -> pd.DataFrame:
    """Rows for ``tree_figure``'s ``ghosts``: nodes evicted this step (columns id, parent, tokens, length),
    drawn as outlines where they were."""
    return evicted.assign(
        depth=0,
        state="evicted",
        hit_count=0,
        last_access=-1,
        created=-1,
        lock_ref=0,
        priority=0,
        extra_key="",
        owners="",
        waiting=0,
    )


@dataclass(frozen=True)
class TreeLayout:
    """Drawn nodes (after collapsing chains): one row each with x (depth), y (row) and the members."""

    nodes: pd.DataFrame
    edges: np.ndarray  # (n_edges, 2) indices into ``nodes`` (parent, child)


def _merge(group: list[dict]) -> dict:
    first, last = group[0], group[-1]
    row = dict(last)
    row.update(
        id=first["id"],
        parent=first["parent"],
        length=sum(g["length"] for g in group),
        tokens=first["tokens"] if len(group) == 1 else f"{first['tokens']} ⋯ ({len(group)} nodes)",
        hit_count=max(g["hit_count"] for g in group),
        last_access=max(g["last_access"] for g in group),
        members=sum(g.get("members", 1) for g in group),
        lock_ref=max(g["lock_ref"] for g in group),
    )
    return row


def _fold_leaves(by_id: dict, children: dict, keep: int) -> None:
    """Under a parent with more than ``keep`` leaf children, keep the most recently used and fold the
    rest into one node "+n leaves" (in the majority state of those it stands for)."""
    for pid in list(children):
        leaves = [c for c in children[pid] if not children[c]]
        if len(leaves) <= keep:
            continue
        leaves.sort(key=lambda c: -by_id[c]["last_access"])
        folded = [by_id[c] for c in leaves[keep:]]
        fid = -1 - pid
        states = pd.Series([f["state"] for f in folded]).value_counts()
        by_id[fid] = dict(
            folded[0],
            id=fid,
            parent=pid,
            tokens=f"+{len(folded)} more leaves",
            length=sum(f["length"] for f in folded),
            state=states.index[0],
            hit_count=max(f["hit_count"] for f in folded),
            lock_ref=max(f["lock_ref"] for f in folded),
            waiting=sum(f["waiting"] for f in folded),
            owners="",
            members=len(folded),
        )
        gone = {f["id"] for f in folded}
        children[pid] = [c for c in children[pid] if c not in gone] + [fid]
        children[fid] = []


def layout_tree(frame: pd.DataFrame, collapse: bool = True, keep_leaves: int = 8) -> TreeLayout:
    """Tidy left-to-right layout of a node frame (``RadixCache.node_frame``), root at x = 0.

    With ``collapse``, chains of single children in one state become one node and, under a parent
    with many leaves, all but the ``keep_leaves`` most recently used fold into one.
    """
    records = frame.to_dict("records")
    by_id = {r["id"]: r for r in records}
    children: dict[int, list[int]] = {r["id"]: [] for r in records}
    for r in records:
        if r["parent"] >= 0:
            children[r["parent"]].append(r["id"])
    if collapse:
        _fold_leaves(by_id, children, keep_leaves)

    def same(a: dict, b: dict) -> bool:
        return a["state"] == b["state"] and (a["lock_ref"] > 0) == (b["lock_ref"] > 0)

    drawn: list[dict] = []
    edges: list[tuple[int, int]] = []
    stack = [(0, -1, 0)]  # (node id, drawn parent index, drawn depth)
    while stack:
        nid, parent_idx, depth = stack.pop()
        group = [by_id[nid]]
        while (
            collapse
            and nid != 0
            and len(children[nid]) == 1
            and same(by_id[nid], by_id[children[nid][0]])
            and not by_id[nid]["waiting"]
        ):
            nid = children[nid][0]
            group.append(by_id[nid])
        row = _merge(group)
        row.update(x=float(depth), y=0.0, drawn_parent=parent_idx)
        idx = len(drawn)
        drawn.append(row)
        if parent_idx >= 0:
            edges.append((parent_idx, idx))
        for c in reversed(children[nid]):
            stack.append((c, idx, depth + 1))
    _place_rows(drawn, edges)
    return TreeLayout(pd.DataFrame(drawn), np.array(edges, dtype=np.int64).reshape(-1, 2))


def _place_rows(drawn: list[dict], edges: list[tuple[int, int]]) -> None:
    """Leaves get rows 0, 1, 2… in depth-first order; a parent sits midway between its children."""
    kids: dict[int, list[int]] = {i: [] for i in range(len(drawn))}
    for p, c in edges:
        kids[p].append(c)
    y = np.zeros(len(drawn))
    row = 0
    order = []
    stack = [(0, False)]
    while stack:  # post-order without recursion
        i, done = stack.pop()
        if done or not kids[i]:
            if kids[i]:
                y[i] = (y[kids[i][0]] + y[kids[i][-1]]) / 2
            else:
                y[i], row = row, row + 1
            order.append(i)
            continue
        stack.append((i, True))
        stack.extend((c, False) for c in reversed(kids[i]))
    for i, d in enumerate(drawn):
        d["y"] = -float(y[i])


def _hover(r: dict, step_of) -> str:
    state = "root" if r["id"] == 0 else r["state"]
    lines = [
        f"<b>node {r['id']}</b> · {state} · {r['length']} tokens",
        str(r["tokens"])[:80],
        f"hit count {r['hit_count']} · last access step {step_of(r['last_access'])}",
        f"lock count {r['lock_ref']}" + (" (locked)" if r["lock_ref"] > 0 and r["id"] != 0 else ""),
    ]
    if r.get("owners"):
        lines.append(f"computed by {r['owners']}")
    if r.get("waiting"):
        lines.append(f"{r['waiting']} request(s) deferred on it")
    if r.get("extra_key"):
        lines.append(f"namespace {r['extra_key']}")
    if r.get("members", 1) > 1:
        lines.append(f"{r['members']} nodes drawn as one")
    return "<br>".join(lines)


def tree_figure(
    frame: pd.DataFrame,
    *,
    clock_range: tuple[int, int] = (0, -1),
    step_of=lambda k: k,
    max_labels: int = 40,
    collapse_above: int = 80,
    width_chars: int = 130,
    title: str | None = None,
    ghosts: pd.DataFrame | None = None,
    marks: dict[str, set[int]] | None = None,
    label_px: int = 14,
    max_height: int = 1800,
    presenter: bool = False,
) -> go.Figure:
    """The tree at one step: nodes coloured by tier, sized by tokens, locked ones ringed.

    Nodes accessed during this step (clock in ``clock_range``) get a gold halo; ``step_of`` maps a
    logical clock value to the step it belongs to, for the hover text. ``ghosts`` (``ghost_rows``)
    are the nodes evicted this step, drawn as grey outlines at their last place; ``marks`` maps
    "split" / "loaded" to the node ids split or loaded back this step. Chains of single children
    are drawn as one node once the tree has more than ``collapse_above`` nodes. Each depth column is
    as wide as its longest label, and labels shrink (at word boundaries) so that the tree fits
    ``width_chars`` characters; ``label_px`` is their font size. The figure grows with the tree's rows
    up to ``max_height`` px (a deeper tree's rows then close up and fewer of them are labelled).
    ``presenter``: the figure will be styled for a projector (taller, a larger legend).
    """
    if ghosts is not None and len(ghosts):
        known = set(frame["id"]) | set(ghosts["id"])
        ghosts = ghosts.assign(parent=[p if p in known else 0 for p in ghosts["parent"]])
        frame = pd.concat([frame, ghosts.reindex(columns=frame.columns, fill_value=0)], ignore_index=True)
    lay = layout_tree(frame, collapse=len(frame) > collapse_above)
    nodes = lay.nodes
    depth = nodes["x"].to_numpy(int)
    levels = int(depth.max()) + 1 if len(depth) else 1
    room = int(np.clip((width_chars / max(levels, 1) - 4) / 1.1, 10, 24))
    ys = nodes["y"].to_numpy()
    rows = int(-ys.min()) + 1 if len(ys) else 1
    height = int(np.clip(150 + 56 * rows, 300, max_height))  # room for two-line labels
    touched = (
        (nodes["last_access"] >= clock_range[0]) & (nodes["last_access"] <= clock_range[1]) & (nodes["id"] > 0)
    ).to_numpy()
    locked = ((nodes["lock_ref"] > 0) & (nodes["id"] > 0)).to_numpy()
    hits = {mark: nodes["id"].isin(ids).to_numpy() for mark, ids in (marks or {}).items()}
    entries = nodes.loc[nodes["id"] > 0, "state"].nunique() + touched.any() + locked.any()
    entries += sum(hit.any() for hit in hits.values())
    size = np.clip(8 + 4 * np.sqrt(nodes["length"].to_numpy(float)), 10, 40)
    bottom = ys.min() - 0.7 if len(ys) else -1
    line_px = label_px * LINE_EM
    px_row, top = _rows_px(height, bottom, _legend_band(entries, presenter), 2 * line_px + size.max() / 2, presenter)
    size *= min(1.0, px_row / 40)
    records = nodes.to_dict("records")
    texts = [_label(r, True, room) for r in records]
    widths = np.array([max(len(line) for line in text.split("<br>")) for text in texts], dtype=float)
    low = ys - size / 2 / px_row
    high = ys + (size / 2 + line_px * np.array([t.count("<br>") + 1 for t in texts])) / px_row
    order, forced = _label_order(nodes, max_labels), _forced(nodes)
    show = _labelled(
        order, forced, texts, nodes["x"].to_numpy(), np.zeros(len(texts)), low, high
    )  # clear in its column
    col = np.zeros(levels)
    for d, i in zip(depth[sorted(show)], sorted(show)):
        col[d] = max(col[d], widths[i])
    starts = np.concatenate([[0.0], np.cumsum(0.55 * (col[:-1] + col[1:]) + 4)]) if levels > 1 else np.zeros(1)
    xs = starts[depth]
    x_range = [-0.6 * col[0] - 2, max(starts[-1] + 0.6 * col[-1] + 2, 40)]
    char = max(1.0, (x_range[1] - x_range[0]) / width_chars)  # x units a character takes in the figure
    markers = (size / 2 / (0.6 * label_px) * char, ys + size / 2 / px_row)  # a character is about 0.6 em
    show = _labelled([i for i in order if i in show], forced, texts, xs, 0.55 * widths * char, low, high, markers)
    labels = [text if i in show else "" for i, text in enumerate(texts)]
    fig = go.Figure()
    for dashed in (False, True):
        ex, ey = [], []
        for p, c in lay.edges:
            if (nodes.at[c, "state"] in ("in-flight", "evicted")) == dashed:
                ex += [xs[p], xs[p], xs[c], None]
                ey += [ys[p], ys[c], ys[c], None]
        fig.add_trace(
            go.Scatter(
                x=ex,
                y=ey,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line=dict(color="#9aa3b2", width=1.5, dash="dot" if dashed else "solid"),
            )
        )
    if touched.any():
        fig.add_trace(
            go.Scatter(
                x=xs[touched],
                y=ys[touched],
                mode="markers",
                hoverinfo="skip",
                name="used this step",
                marker=dict(size=size[touched] + 12, color=TOUCH_COLOR, opacity=0.5, line=dict(width=0)),
            )
        )
    hover = [_hover(r, step_of) for r in records]
    styles = {"root": ("root", ROOT_COLOR), **STATE_STYLE, "evicted": ("evicted this step", GHOST_COLOR)}
    for state, (name, colour) in styles.items():
        mask = (nodes["id"] == 0) if state == "root" else ((nodes["state"] == state) & (nodes["id"] > 0))
        idx = np.flatnonzero(mask.to_numpy())
        if not len(idx):
            continue
        ghost = state == "evicted"
        fig.add_trace(
            go.Scatter(
                x=xs[idx],
                y=ys[idx],
                mode="markers+text",
                name=name,
                text=[labels[i] for i in idx],
                textposition="top center",
                textfont=dict(size=label_px, color=GHOST_COLOR if ghost else INK),
                hovertext=[hover[i] for i in idx],
                hoverinfo="text",
                showlegend=state != "root",
                marker=dict(
                    size=size[idx],
                    color=GHOST_COLOR if ghost else colour,
                    symbol="diamond" if state == "root" else "circle-open" if ghost else "circle",
                    line=dict(color=GHOST_COLOR if ghost else "white", width=2 if ghost else 1),
                ),
            )
        )
    for mark, hit in hits.items():
        if hit.any():
            name, symbol, colour = MARKS[mark]
            fig.add_trace(
                go.Scatter(
                    x=xs[hit],
                    y=ys[hit],
                    mode="markers",
                    hoverinfo="skip",
                    name=name,
                    marker=dict(size=size[hit] + 14, symbol=symbol, color=colour, line=dict(width=3, color=colour)),
                )
            )
    if locked.any():
        fig.add_trace(
            go.Scatter(
                x=xs[locked],
                y=ys[locked],
                mode="markers",
                hoverinfo="skip",
                name="locked",
                marker=dict(size=size[locked] + 6, symbol="circle-open", color=LOCK_COLOR, line=dict(width=3)),
            )
        )
    fig.update_layout(
        title=title,
        height=height,
        hovermode="closest",
        legend=dict(
            orientation="h",
            yanchor="top",
            y=1.0,
            xanchor="left",
            x=0,
            entrywidthmode="fraction",
            entrywidth=1 / legend_columns(presenter),
        ),
        xaxis=dict(visible=False, range=x_range),
        yaxis=dict(visible=False, range=[bottom, top]),
    )
    return fig


def legend_columns(presenter: bool) -> int:
    """Legend entries per row, each an equal share of the plot's width whatever that width is (so the
    rows are known here): two at projector size, where the tree is drawn narrower."""
    return 2 if presenter else 3


def _legend_band(entries: int, presenter: bool) -> float:
    """Pixels of the legend's band at the plot's top: drawn inside the plot so that it never pushes the
    figure's top margin (plotly would then lay the figure out twice, and the tree would jump between steps)."""
    if entries < 2:  # plotly shows no legend for a single entry
        return 0.0
    font = (PRESENTER_PX if presenter else BASE_PX) - 1  # the legend's font as the figure style sets it
    return -(-entries // legend_columns(presenter)) * (font * 1.45 + 6) + 10


def _rows_px(height: int, bottom: float, band_px: float, label_px: float, presenter: bool) -> tuple[float, float]:
    """Pixels per row of the tree, and the y axis's top: the rows from ``bottom`` to the top row (y = 0),
    ``label_px`` above it for the top row's label, and the legend's band above that."""
    plot = height * (PRESENTER_GROWTH if presenter else 1.0) - 50  # less the style's top and bottom margins
    px_row = max(plot - band_px - label_px, plot / 4) / -bottom
    return px_row, (label_px + band_px) / px_row


# Presenter mode draws the tree beside the step's controls and words, in the first screen of a 1366 x 768
# projector: a narrower figure, and one at most this tall before presenter mode's 25% growth (450 px).
PRESENTER_WIDTH_CHARS = 64
PRESENTER_MAX_HEIGHT = 360


def fig_radix_tree(
    tree: pd.DataFrame,
    clock_range: tuple[int, int],
    clock_to: np.ndarray,
    ghosts: pd.DataFrame,
    marks: dict[str, set[int]],
    presenter: bool,
) -> go.Figure:
    """``tree_figure`` from plain inputs, for the page's figure cache: ``clock_to`` (each step's last
    clock value) maps a clock to its step for the hover text; labels at projector size in presenter mode."""
    return tree_figure(
        tree,
        clock_range=clock_range,
        step_of=lambda k: int(clock_to.searchsorted(k)),
        ghosts=ghost_rows(ghosts),
        marks=marks,
        label_px=20 if presenter else 14,
        width_chars=PRESENTER_WIDTH_CHARS if presenter else 100,
        max_height=PRESENTER_MAX_HEIGHT if presenter else 1800,
        presenter=presenter,
    )


def _forced(nodes: pd.DataFrame) -> set[int]:
    """The nodes whose labels are always drawn: the root's and a waiting span's."""
    return {i for i, r in enumerate(nodes.to_dict("records")) if r["id"] == 0 or r.get("waiting")}


def _label_order(nodes: pd.DataFrame, most: int) -> list[int]:
    """The nodes that may be labelled, in the order they are given room: those always labelled first, then
    the ``most`` largest nodes."""
    forced = _forced(nodes)
    rest = [int(i) for i in np.argsort(-nodes["length"].to_numpy(), kind="stable") if int(i) not in forced]
    return sorted(forced) + rest[:most]


def _labelled(
    order: list[int],
    forced: set[int],
    texts: list[str],
    x: np.ndarray,
    half: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    markers: tuple[np.ndarray, np.ndarray] | None = None,
) -> set[int]:
    """The labels drawn, taken in ``order``: each where its box (``x`` ± ``half`` across, ``low`` to ``high``
    up: its marker and its lines above it) clears every box taken before and, given ``markers`` (each
    node's marker half-width across and top), every other node's marker; the root's and a waiting span's
    always (``forced``)."""

    def apart(i: int, j: int, half_j: float, low_i: float, low_j: float, high_j: float) -> bool:
        return x[i] - half[i] > x[j] + half_j or x[j] - half_j > x[i] + half[i] or high[i] <= low_j or high_j <= low_i

    out: list[int] = []
    for i in order:
        if not texts[i]:
            continue
        clear = all(apart(i, j, half[j], low[i], low[j], high[j]) for j in out)
        if clear and markers is not None:  # the lines above the marker, against the other markers
            m_half, m_top = markers
            clear = all(apart(i, k, m_half[k], m_top[i], low[k], m_top[k]) for k in range(len(x)) if k != i)
        if i in forced or clear:
            out.append(i)
    return set(out)


def _label(row: dict, show: bool, room: int = 22) -> str:
    """A node's words and its length on at most two lines of ``room`` characters, cut at a word (never
    inside a word or an id run), with "…" where words were left out."""
    if row["id"] == 0:
        return "root"
    if row.get("waiting"):
        return f"⏳ {row['waiting']} waiting ({row['length']})"
    if not show:
        return ""
    items = str(row["tokens"]).strip("[]").replace(",", " ").replace("…", " ").split()
    size = f" ({row['length']})"
    lines: list[list[str]] = [[]]
    for i, item in enumerate(items):
        last = i + 1 == len(items)
        tail = len(size) + (0 if last else 2) if len(lines) == 2 else 0
        if lines[-1] and len(" ".join(lines[-1] + [item])) + tail > room:
            if len(lines) == 2:
                break
            lines.append([])
        lines[-1].append(item)
    kept = sum(len(line) for line in lines)
    cut = kept < len(items) or "…" in str(row["tokens"])
    text = "<br>".join(" ".join(line) for line in lines if line)
    return text + (" …" if cut else "") + size


TOTAL_LINES = {  # column -> (label, panel)
    "device_tokens": ("on GPU", 1),
    "host_tokens": ("on CPU", 1),
    "reserved": ("held by running requests", 1),
    "device_hit": ("GPU hits", 2),
    "loaded_tokens": ("loaded back from CPU", 2),
    "computed": ("computed", 2),
    "evicted_device": ("evicted from GPU", 2),
    "evicted_host": ("evicted from CPU", 2),
    "redundant": ("redundant prefill (in flight, recomputed)", 2),
}


def fig_radix_totals(totals: pd.DataFrame, step: int) -> go.Figure:
    """Tokens held per tier (top) and cumulative hits / computation / eviction (bottom) per step."""
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=("Tokens held", "Cumulative tokens")
    )
    for i, (col, (label, panel)) in enumerate(TOTAL_LINES.items()):
        if col not in totals or (panel == 1 and not totals[col].any() and col != "device_tokens"):
            continue
        fig.add_trace(
            go.Scatter(
                x=totals["step"],
                y=totals[col],
                name=label,
                mode="lines+markers",
                line=dict(shape="hv", color=PALETTE[i % len(PALETTE)]),
                marker=dict(size=5),
                legendgroup=str(panel),
            ),
            row=panel,
            col=1,
        )
    fig.add_vline(x=step, line=dict(color=INK, dash="dash", width=1))
    fig.update_xaxes(dtick=max(1, int(np.ceil(len(totals) / 12))))
    fig.update_xaxes(title_text="step", row=2, col=1)
    fig.update_yaxes(title_text="tokens", rangemode="tozero")
    fig.update_layout(height=520, hovermode="x unified", legend=dict(orientation="v", x=1.02, y=1))
    return fig
