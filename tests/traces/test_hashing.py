"""Prefix chain hashing: equal k-th hashes exactly when the first k blocks are equal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.traces.hashing import chain_block_hashes, remap_ids


def test_only_full_blocks_get_a_hash():
    assert len(chain_block_hashes(range(10), 4)) == 2
    assert chain_block_hashes(range(3), 4) == []


def test_hash_depends_on_the_whole_prefix():
    a = chain_block_hashes([1, 2, 3, 4, 5, 6], 2)
    b = chain_block_hashes([9, 9, 3, 4, 5, 6], 2)
    assert a[1:] != b[1:]  # same blocks 2 and 3, different first block
    assert chain_block_hashes([1, 2, 3, 4], 2) == a[:2]


def test_bad_block_size():
    with pytest.raises(InputError, match="block size"):
        chain_block_hashes([1, 2], 0)


@settings(max_examples=80)
@given(st.lists(st.integers(0, 3), max_size=24), st.lists(st.integers(0, 3), max_size=24), st.integers(1, 4))
def test_equal_kth_hash_iff_equal_prefix(x, y, bs):
    hx, hy = chain_block_hashes(x, bs), chain_block_hashes(y, bs)
    for k in range(min(len(hx), len(hy))):
        assert (hx[k] == hy[k]) == (x[: (k + 1) * bs] == y[: (k + 1) * bs])


def test_remap_numbers_by_first_appearance():
    table: dict[int, int] = {}
    assert remap_ids([77, 5, 77], table) == [0, 1, 0]
    assert remap_ids([5, 9], table) == [1, 2]
