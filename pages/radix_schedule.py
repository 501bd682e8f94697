"""RadixAttention scheduling: the order a queue is served in decides what the radix cache can reuse."""

import pandas as pd
import streamlit as st

from kvviz.common import paper
from kvviz.radix import schedule_policy as rs
from kvviz.traces import fingerprint
from ui import figures, frame
from ui.errors import user_errors
from ui.tables import data_table
from ui.text import plain
from ui.traces import trace_picker
from ui.work import confirm_cost, stepped

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


frame.header(
    "radix_schedule",
    "A queue of waiting requests served first-come-first-served, by longest cached "
    "prefix, or in SGLang's DFS-weight order: same cache, different reuse.",
)
source = st.segmented_control(
    "Queue", SOURCES, default=SOURCES[0], required=True, key="radix_schedule_queue", bind="query-params"
)
# The trace's controls, in the sidebar and on the page, each go into one container drawn in either queue: the
# scheduler controls, figures and text after them keep their place (Streamlit keys an element by its position).
picker = st.sidebar.container()
with st.container():
    if source == "Teaching example":
        queue, warm, block_tokens, what = rs.INTERLEAVED, (), EXAMPLE_BLOCK, "nine requests over three 4-block prefixes"
    else:
        trace = trace_picker("radix_schedule", sidebar=picker)
        if trace is None:
            st.info("Upload a trace with block ids (Mooncake JSONL or CSV).", icon=":material/upload_file:")
            st.stop()
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

key = fingerprint(trace) if source == "Trace window" else "example"
with user_errors():
    confirm_cost(rs.cost(list(queue), list(warm)), "radix_schedule")
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
            run(key, rs.Order.LPM.value, queue, warm, rs.ScheduleConfig(int(capacity), int(budget), block_tokens, on))
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
        + (
            " Off here: LPM serves this queue with the same hits and rounds either way, at this capacity and budget."
            if inert
            else ""
        ),
    )

with user_errors():
    config = rs.ScheduleConfig(int(capacity), int(budget), block_tokens, bool(in_batch))
schedules = stepped(
    lambda o: f"Scheduling the queue {o.label}…", list(rs.Order), lambda o: run(key, o.value, queue, warm, config)
)
total = sum(len(r) for r in queue)
table = pd.DataFrame(
    [
        {
            "order": s.order.label,
            "rounds": s.rounds,
            "blocks": total,
            "hits": s.hits,
            "recomputed": s.recomputed,
            "hit_ratio": s.hits / total,
        }
        for s in schedules
    ]
)
st.caption(
    f"Queue: {what} · {total:,} blocks of {block_tokens} tokens · cache {int(capacity):,} blocks · "
    f"budget {int(budget):,} blocks per batch" + (f" · {len(warm):,} warm-up requests" if warm else "")
)
figures.figure("radix_schedule.fig_orders", table, block_tokens, key="radix_schedule_orders")
figures.figure("radix_schedule.fig_rounds", schedules, key="radix_schedule_rounds")
shown = table.rename(columns={"hit_ratio": "hit ratio"})
data_table(
    shown,
    "radix_schedule",
    "scheduler table",
    {
        "queue": what,
        "cache capacity (blocks)": int(capacity),
        "prefill budget (blocks)": int(budget),
        "in-batch prefix caching": bool(in_batch),
        "block size (tokens)": block_tokens,
        "warm-up requests": len(warm),
    },
    formats={"hit ratio": "%.3f"},
    trace=trace.name if source == SOURCES[1] else None,
)

frame.explain(
    "SGLang matches every waiting request against the radix cache before each batch and orders the queue:\n\n"
    "- **FCFS**: arrival order (SGLang's default).\n"
    "- **LPM** (longest prefix match): most cached blocks first. With *in-batch prefix caching* a request whose "
    "cached match is ≤ 32 tokens but which shares ≥ 32 tokens with an earlier waiting request goes last, so one "
    "request computes a cold prefix and the others hit it a round later. Above 128 waiting requests LPM is FCFS.\n"
    "- **DFS-weight**: walk the cache tree from the root, the child with more waiting requests beneath it first; "
    "a node's own requests follow its children's.\n\n"
    "A batch admits requests in that order until its uncached blocks pass the budget; requests in one batch do not "
    "see each other's KV. The cache is the Radix cache page's tree (LRU), every block one page."
)
by = table.set_index("order")
frame.what_to_notice(rs.order_notes(table, block_tokens))
s7 = [i + 1 for i in rs.lpm_order([0, 1, 2, 3], {r: 0 for r in range(4)}, S7, rs.ScheduleConfig(1000, 1000, 1))]
frame.paper_vs_sim(
    [
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
    ],
    note="SGLang's paper proves that serving a batch in DFS order of the radix tree is optimal when the cache holds "
    "the longest request, and that LPM approximates it online. With a cache smaller than that, or a budget that "
    "packs many cold requests into one batch, the orders can tie or swap — the check above is run on this queue.",
)
