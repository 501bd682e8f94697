"""The trace's prefix tree: exact counts on a hand-made trace, ancestor-closed cuts, merged chains."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.prefix_cache import prepare
from kvviz.prefix_cache.figures import fig_prefix_tree
from kvviz.prefix_cache.prefix_tree import hottest, node_stats, prefix_tree, tree_notes
from kvviz.traces import from_records


def chained(paths, times=None):
    ids: dict[tuple, int] = {}
    reqs = [[ids.setdefault(tuple(p[: k + 1]), len(ids)) for k in range(len(p))] for p in paths]
    n = len(reqs)
    return from_records(
        np.arange(n) * 1000 if times is None else times, [len(r) * 10 for r in reqs], np.zeros(n), reqs, block_size=10
    )


def test_a_shared_head_is_one_segment_with_its_requests_and_times():
    # three requests share blocks 1-2; two of them also share block 3; one private tail each
    replay = prepare(chained([[0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 5]]))
    tree = prefix_tree(replay, top=50)
    seg = tree.segments.set_index(["first_block", "last_block"])
    assert seg.loc[(1, 2), "requests"] == 3 and seg.loc[(1, 2), "tokens"] == 20
    assert seg.loc[(1, 2), "reused_tokens"] == 40
    assert sorted(seg.loc[(3, 3), "requests"]) == [1, 2] and seg.loc[(1, 2), "last_s"] == 2.0
    assert tree.reused_tokens == 40 + 10 == tree.kept_reused_tokens
    assert hottest(tree, 1)["blocks"].iloc[0] == "1–2"
    assert "100%" in tree_notes(tree)[0]
    assert fig_prefix_tree(tree).data[0].type == "icicle"


@settings(max_examples=30)
@given(
    paths=st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=6), min_size=1, max_size=30), top=st.integers(1, 40)
)
def test_the_cut_keeps_ancestors_and_counts_every_kept_node(paths, top):
    replay = prepare(chained(paths))
    tree = prefix_tree(replay, top)
    seg = tree.segments
    assert seg["blocks"].sum() == tree.kept_nodes == min(top, replay.n_nodes)
    ids = set(seg["segment"])
    assert all(p == -1 or p in ids for p in seg["parent"])
    stats = node_stats(replay)
    assert stats["requests"].sum() == replay.accesses
    assert tree.reused_tokens == ((stats["requests"] - 1) * 10).sum()
    by_id = seg.set_index("segment")
    for row in seg.itertuples():
        if row.parent != -1:
            assert by_id.loc[row.parent, "requests"] >= row.requests
            assert by_id.loc[row.parent, "last_block"] + 1 == row.first_block
