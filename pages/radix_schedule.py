"""RadixAttention scheduling: the order a queue is served in decides what the radix cache can reuse."""

import pandas as pd
import streamlit as st

from kvviz.radix import schedule_policy as rs
from ui.kit import figures, frame
from ui.kit.errors import user_errors
from ui.kit.tables import data_table
from ui.kit.work import confirm_cost, stepped
from ui.radix_schedule import queue as rsv

frame.header(
    "radix_schedule",
    "A queue of waiting requests served first-come-first-served, by longest cached "
    "prefix, or in SGLang's DFS-weight order: same cache, different reuse.",
)
source = st.segmented_control(
    "Queue", rsv.SOURCES, default=rsv.SOURCES[0], required=True, key="radix_schedule_queue", bind="query-params"
)
q = rsv.queue_of(source)
queue, warm, block_tokens, what, key = q.queue, q.warm, q.block_tokens, q.what, q.key
with user_errors():
    confirm_cost(rs.cost(list(queue), list(warm)), "radix_schedule")
config = rsv.scheduler(q)
capacity, budget, in_batch = config.capacity, config.budget, config.in_batch
schedules = stepped(
    lambda o: f"Scheduling the queue {o.label}…", list(rs.Order), lambda o: rsv.run(key, o.value, queue, warm, config)
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
    trace=q.trace_name,
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
frame.what_to_notice(rs.order_notes(table, block_tokens))
frame.paper_vs_sim(rsv.paper_rows(table), note=rsv.PAPER_NOTE)
