"""The RadixAttention scheduling page's queue (the teaching example or a window of a trace), its
scheduler controls, the cached schedules and the paper rows."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from kvviz.common import paper
from kvviz.radix import schedule_policy as rs
from kvviz.traces import fingerprint
from ui.kit import links
from ui.kit.errors import user_errors
from ui.kit.text import plain
from ui.kit.traces import trace_picker

SOURCES = ("Teaching example", "Trace window")
EXAMPLE_BLOCK = 16  # tokens per block in the teaching example (SGLang's 32-token thresholds = 2 blocks)
S7 = [
    tuple(range(1, 65)) + (1001,),
    tuple(range(1, 65)) + (1002,),
    tuple(range(201, 265)) + (1003,),
    tuple(range(1, 21)) + tuple(range(2001, 2041)),
]  # SGLang's LPM example (scenario S7), in tokens


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def run(key: str, order: str, queue: tuple, warm: tuple, config: rs.ScheduleConfig) -> rs.Schedule:
    """One order over one queue (cached on the queue's content and the configuration)."""
    return rs.schedule(list(queue), rs.Order(order), config, list(warm))


@dataclass(frozen=True)
class Queue:
    """The waiting requests (block ids), those served before them (a warm cache), the tokens per
    block, the queue in words, its cache key and the trace it comes from (None: the example)."""

    queue: tuple
    warm: tuple
    block_tokens: int
    what: str
    key: str
    trace_name: str | None


def queue_of(source: str) -> Queue:
    """The queue the page schedules, with the trace window's controls when it comes from a trace."""
    # The trace's controls, in the sidebar and on the page, each go into one container drawn in either queue: the
    # scheduler controls, figures and text after them keep their place (Streamlit keys an element by its position).
    picker = st.sidebar.container()
    with st.container():
        if source == "Teaching example":
            queue, warm, block_tokens, what = (
                rs.INTERLEAVED,
                (),
                EXAMPLE_BLOCK,
                "nine requests over three 4-block prefixes",
            )
        else:
            trace = trace_picker("radix_schedule", sidebar=picker)
            if trace is None:
                st.info("Upload a trace with block ids (Mooncake JSONL or CSV).", icon=":material/upload_file:")
                links.stop()
            left, mid, right = st.columns(3)
            start = left.number_input(
                "First request of the queue",
                0,
                max(trace.n_requests - 1, 0),
                0,
                key="radix_schedule_start",
                bind="query-params",
            )
            size = mid.slider("Requests waiting", 2, 200, 40, key="radix_schedule_size", bind="query-params")
            warm_n = right.slider(
                "Requests served before (warm cache)", 0, 2000, 0, 50, key="radix_schedule_warm", bind="query-params"
            )
            with user_errors():
                q, w = rs.trace_queue(trace, int(start), int(size), int(warm_n))
            queue, warm, block_tokens = tuple(q), tuple(w), trace.block_size
            what = f"requests {int(start) + 1:,}–{int(start) + len(q):,} of {plain(trace.name)}"
    if source == SOURCES[0]:
        return Queue(queue, warm, block_tokens, what, "example", None)
    return Queue(queue, warm, block_tokens, what, fingerprint(trace), trace.name)


def scheduler(q: Queue) -> rs.ScheduleConfig:
    """The sidebar's scheduler controls; in-batch prefix caching is disabled, saying why, where it changes nothing."""
    queue, warm, block_tokens, key = q.queue, q.warm, q.block_tokens, q.key
    with st.sidebar:
        st.header("Scheduler")
        capacity = st.number_input(
            "Cache capacity (blocks)", 1, 1_000_000, 5, key="radix_schedule_capacity", bind="query-params"
        )
        budget = st.number_input(
            "Prefill budget per batch (uncached blocks)",
            1,
            1_000_000,
            5,
            key="radix_schedule_budget",
            bind="query-params",
            help="SGLang's max prefill tokens: a "
            "batch takes requests in order until their uncached blocks exceed it (the first always runs).",
        )
        with user_errors():
            lpm = [
                run(
                    key,
                    rs.Order.LPM.value,
                    queue,
                    warm,
                    rs.ScheduleConfig(int(capacity), int(budget), block_tokens, on),
                )
                for on in (True, False)
            ]
        inert = (lpm[0].hits, lpm[0].rounds, lpm[0].recomputed) == (lpm[1].hits, lpm[1].rounds, lpm[1].recomputed)
        in_batch = st.toggle(
            "In-batch prefix caching (LPM)",
            value=True,
            key="radix_schedule_inbatch",
            bind="query-params",
            disabled=inert,
            help="Hold back requests that share ≥ 32 tokens of a cold prefix with an earlier one."
            + (f" Off here: {INERT}" if inert else ""),
        )
        if inert:  # a disabled control says why in words, not only in its help
            st.caption(f"In-batch prefix caching is off here: {INERT}")
    with user_errors():
        return rs.ScheduleConfig(int(capacity), int(budget), block_tokens, bool(in_batch))


INERT = "LPM serves this queue with the same hits and rounds either way, at this capacity and budget."
"""Why in-batch prefix caching is switched off for a queue where it changes nothing."""

PAPER_NOTE = (
    "SGLang's paper proves that serving a batch in DFS order of the radix tree is optimal when the cache holds "
    "the longest request, and that LPM approximates it online. With a cache smaller than that, or a budget that "
    "packs many cold requests into one batch, the orders can tie or swap — the check above is run on this queue."
)


def paper_rows(table: pd.DataFrame) -> list[dict]:
    """Cache-aware orders against FCFS on this queue, SGLang's in-batch example and its thresholds."""
    by = table.set_index("order")
    s7 = [i + 1 for i in rs.lpm_order([0, 1, 2, 3], {r: 0 for r in range(4)}, S7, rs.ScheduleConfig(1000, 1000, 1))]
    return [
        paper.check(
            "Cache-aware order hits at least as much as FCFS (SGLang §3.2)",
            "LPM, DFS ≥ FCFS",
            f"LPM {by.loc['LPM', 'hits']:,} / DFS {by.loc['DFS-weight', 'hits']:,} / FCFS {by.loc['FCFS', 'hits']:,} "
            "blocks",
            min(by.loc["LPM", "hits"], by.loc["DFS-weight", "hits"]) >= by.loc["FCFS", "hits"],
            "LPM and DFS-weight hits ≥ FCFS hits",
        ),
        paper.check(
            "In-batch prefix caching, worked example: queue R1 R2 R3 R4, cold cache",
            "R1 R3 R4 R2 (SGLang's scheduler source code)",
            " ".join(f"R{i}" for i in s7),
            s7 == [1, 3, 4, 2],
            "LPM order equals R1 R3 R4 R2",
        ),
        paper.given(
            "Thresholds: check ≤ 32 tokens, deprioritize ≥ 32 tokens, LPM → FCFS above 128 waiting",
            "32 / 32 / 128 (SGLang's scheduler source code)",
            f"{rs.CHECK_THRESHOLD_TOKENS} / {rs.DEPRIORITIZE_THRESHOLD_TOKENS} / {rs.LPM_FALLBACK_QUEUE}",
            "SGLang's constants",
        ),
    ]
