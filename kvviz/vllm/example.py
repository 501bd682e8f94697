"""The worked example where vLLM and SGLang part ways: a pool that evicts one block against a tree that
evicts a whole edge.

Four requests over chained blocks — [A,B,C,D], [A,E], [A,B,C,D], [A,E] — through four blocks of
cache. The second request needs one new block. SGLang's RadixCache holds B·C·D as one edge under A
and evicts the leaf whole: three blocks go to make room for one. vLLM's pool takes the block at the
head of its free queue, D (the first request freed its blocks tail first), and keeps B and C; the
third request then finds A·B·C cached in vLLM and only A in SGLang. Both columns are measured by
the two kernels (``kvviz.vllm.block_pool`` and ``kvviz.prefix_cache.replay``), step by step.
"""

from __future__ import annotations

from kvviz.prefix_cache.example import Example, Step, labels_and_parents, prefix_contents, script_trace
from kvviz.prefix_cache.replay import prepare, request_hits
from kvviz.vllm.block_pool import final_state

EDGE_SCRIPT: tuple[tuple[str, ...], ...] = (("A", "B", "C", "D"), ("A", "E"), ("A", "B", "C", "D"), ("A", "E"))
EDGE_CAPACITY = 4
VLLM_SIDE = "vLLM pool, tail first"
SGLANG_SIDE = "SGLang tree, LRU leaves first"


def engines_example(script: tuple[tuple[str, ...], ...] = EDGE_SCRIPT, capacity: int = EDGE_CAPACITY) -> Example:
    """Replay the script through vLLM's pool (left) and SGLang's radix LRU (right), keeping both after
    every request."""
    trace, ids = script_trace(script)
    name, parents = labels_and_parents(ids)
    sglang = request_hits(prepare(trace), "lru", capacity)
    steps = [Step(0, (), 0, 0, frozenset(), frozenset())]
    for k in range(1, trace.n_requests + 1):
        head = trace.head(k)
        replay = prepare(head)
        pool = final_state(replay, capacity)
        in_pool = frozenset(name[int(b)] for b in set(head.blocks[pool.cached[replay.nodes]].tolist()))
        steps.append(
            Step(
                k,
                script[k - 1],
                int(sglang[k - 1]),
                int(pool.hits[k - 1]),
                prefix_contents(head, capacity, name),
                in_pool,
            )
        )
    labels = tuple(name[i] for i in range(len(ids)))
    return Example(labels, parents, capacity, tuple(steps), (VLLM_SIDE, SGLANG_SIDE))
