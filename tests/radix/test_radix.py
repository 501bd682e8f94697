"""RadixCache against the spec's acceptance scenarios S1–S6 (radix_spec.md §6) and its laws."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.radix.radix_cache import POLICIES, RadixCache, RadixKey


def shape(cache: RadixCache, node=None) -> list:
    """The tree as nested [key, children] lists, children in key order."""
    node = node or cache.root
    return [[list(c.key), shape(cache, c)] for c in sorted(node.children.values(), key=lambda c: c.key)]


def find(cache: RadixCache, key) -> object:
    return next(n for n in cache.nodes() if list(n.key) == list(key))


def r(a: int, b: int) -> list[int]:
    return list(range(a, b + 1))


# ---- S1 -----------------------------------------------------------------------------------------
def test_s1_insert_split_and_return_value():
    c = RadixCache()
    assert c.insert([1, 2, 3, 4, 5]) == 0
    original = find(c, [1, 2, 3, 4, 5])
    assert original.hit_count == 1 and c.evictable_size() == 5
    assert c.insert([1, 2, 3, 9]) == 3
    assert shape(c) == [[[1, 2, 3], [[[4, 5], []], [[9], []]]]]
    assert (c.total_size(), c.evictable_size(), c.protected_size()) == (6, 6, 0)
    prefix = find(c, [1, 2, 3])
    assert prefix is not original and original.key == (4, 5)  # the old object is the suffix
    assert prefix.id > original.id
    assert (prefix.hit_count, original.hit_count, find(c, [9]).hit_count) == (2, 1, 1)
    assert original.last_access_time[0] == 2  # stamped by insert 2 before the split
    assert c.insert([1, 2, 3, 4, 5]) == 5
    assert (prefix.hit_count, original.hit_count, find(c, [9]).hit_count) == (3, 2, 1)
    assert c.total_size() == 6 and len(list(c.nodes())) == 3


# ---- S2 -----------------------------------------------------------------------------------------
def test_s2_match_splits_without_changing_data():
    c = RadixCache()
    c.insert([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    c.insert([1, 2, 3, 9], [11, 21, 31, 91])
    n9 = find(c, [9])
    t9 = n9.last_access_time
    m = c.match_prefix([1, 2, 3, 4, 7])
    assert m.device_len == 4 and m.device_indices == (10, 20, 30, 40)
    assert list(m.last_node.key) == [4] and m.last_node.id == 4
    assert shape(c) == [[[1, 2, 3], [[[4], [[[5], []]]], [[9], []]]]]
    assert c.total_size() == 6 and len(list(c.nodes())) == 4
    assert find(c, [4]).hit_count == 1 and find(c, [5]).hit_count == 1
    k = c.clock
    assert c.root.last_access_time == (k, 0) and find(c, [1, 2, 3]).last_access_time == (k, 0)
    assert find(c, [5]).last_access_time == (k, 0) and find(c, [4]).last_access_time > (k, 0)
    assert n9.last_access_time == t9
    assert c.match_prefix([1, 2]).device_len == 2
    assert shape(c) == [[[1, 2], [[[3], [[[4], [[[5], []]]], [[9], []]]]]]]
    assert c.total_size() == 6
    before = shape(c)
    assert c.match_prefix([]).device_len == 0 and c.match_prefix([]).last_node is c.root
    m = c.match_prefix([5, 4])
    assert m.device_len == 0 and m.last_node is c.root and shape(c) == before


# ---- S3 -----------------------------------------------------------------------------------------
def test_s3_lru_whole_node_cascade_and_overshoot():
    c = RadixCache()
    c.insert([1, 2, 3, 4, 5])
    c.insert([1, 2, 3, 9])
    c.insert([7, 8])
    c.match_prefix([1, 2, 3, 9, 9])
    assert c.evict(2) == 2
    assert shape(c) == [[[1, 2, 3], [[[9], []]]], [[7, 8], []]]
    assert c.evict(3) == 3
    assert shape(c) == [[[1, 2, 3], []]] and c.evictable_size() == 3
    d = RadixCache()
    d.insert([1, 2, 3, 4, 5])
    assert d.evict(1) == 5 and shape(d) == [] and d.total_size() == 0


# ---- S4 -----------------------------------------------------------------------------------------
def test_s4_page_size_two():
    c = RadixCache(page_size=2)
    assert c.insert([1, 2, 3, 4, 5, 6]) == 0
    assert c.insert([1, 2, 3, 5, 7, 8]) == 2
    assert shape(c) == [[[1, 2], [[[3, 4, 5, 6], []], [[3, 5, 7, 8], []]]]]
    assert set(find(c, [1, 2]).children) == {(3, 4), (3, 5)}
    m = c.match_prefix([1, 2, 3, 4, 5])
    assert m.device_len == 4 and list(m.last_node.key) == [3, 4]
    assert shape(c) == [[[1, 2], [[[3, 4], [[[5, 6], []]]], [[3, 5, 7, 8], []]]]]
    assert c.match_prefix([1, 2, 3]).device_len == 2
    m = c.match_prefix([1])
    assert m.device_len == 0 and m.last_node is c.root
    assert c.match_prefix([1, 2, 3, 9]).device_len == 2


# ---- S5 -----------------------------------------------------------------------------------------
def _s5(policy: str, rule: str = "upstream") -> list:
    c = RadixCache(eviction_policy=policy, hit_count_rule=rule)
    c.insert([1, 2])
    assert c.insert([1, 2]) == 2
    c.insert([3, 4])
    c.match_prefix([3, 4])
    assert c.evict(2) == 2
    return shape(c)


def test_s5_lfu_versus_lru_and_what_counts_as_a_hit():
    assert _s5("lru") == [[[3, 4], []]]
    assert _s5("lfu") == [[[1, 2], []]]
    assert _s5("slru") == [[[1, 2], []]]
    assert _s5("lfu", "legacy") == [[[3, 4], []]]
    c = RadixCache()
    c.insert([3, 4])
    c.match_prefix([3, 4])
    assert find(c, [3, 4]).hit_count == 1


def test_s5_legacy_counts_are_zero():
    c = RadixCache(hit_count_rule="legacy")
    c.insert([1, 2])
    c.insert([1, 2])
    assert find(c, [1, 2]).hit_count == 0


# ---- S6 -----------------------------------------------------------------------------------------
def test_s6_extra_key_namespaces():
    c = RadixCache()
    c.insert(RadixKey([1, 2, 3], "k1"), [10, 20, 30])
    c.insert(RadixKey([1, 2, 3], None), [70, 80, 90])
    assert set(c.root.children) == {("k1", 1), 1}
    assert c.match_prefix(RadixKey([1, 2, 3], "k1")).device_indices == (10, 20, 30)
    assert c.match_prefix([1, 2, 3]).device_indices == (70, 80, 90)
    assert c.match_prefix([1, 2, 3], extra_key="zz").device_len == 0


# ---- locks --------------------------------------------------------------------------------------
def test_locks_count_and_protect_ancestors():
    c = RadixCache()
    c.insert([1, 2, 3, 4, 5])
    c.insert([1, 2, 3, 9])
    leaf = find(c, [9])
    assert c.inc_lock_ref(leaf) == -4
    assert c.inc_lock_ref(leaf) == 0  # locking twice counts twice
    assert (c.evictable_size(), c.protected_size()) == (2, 4)
    assert c.evict(10) == 2  # only [4,5] may go
    assert shape(c) == [[[1, 2, 3], [[[9], []]]]]
    assert c.dec_lock_ref(leaf) == 0
    assert c.dec_lock_ref(leaf) == 4
    with pytest.raises(InputError, match="holds no lock"):
        c.dec_lock_ref(leaf)
    assert c.root.lock_ref == 1


def test_fifo_sees_split_prefix_as_younger():
    c = RadixCache(eviction_policy="fifo")
    c.insert([1, 2, 3])
    c.insert([7])
    c.match_prefix([1, 2])  # [1,2] is new; [3] keeps its old creation time
    assert c.evict(1) == 1 and shape(c) == [[[1, 2], []], [[7], []]]


def test_mru_and_filo_and_priority():
    for policy, gone in (("mru", [7]), ("filo", [7]), ("priority", [1])):
        c = RadixCache(eviction_policy=policy)
        c.insert([1], priority=0)
        c.insert([7], priority=5)
        c.evict(1)
        assert [list(n.key) for n in c.nodes()] != [gone] and len(list(c.nodes())) == 1
        assert all(list(n.key) != gone for n in c.nodes())


@pytest.mark.parametrize(
    "bad,field",
    [
        (dict(page_size=0), "page_size"),
        (dict(page_size=-3), "page_size"),
        (dict(eviction_policy="random"), "eviction_policy"),
        (dict(capacity=3, page_size=4), "device_capacity"),
    ],
)
def test_bad_configuration(bad, field):
    with pytest.raises(InputError) as err:
        RadixCache(**bad)
    assert err.value.field == field


@pytest.mark.parametrize("key", [[1, "a"], [1.5], "abc", 7, [-1], [True]])
def test_bad_keys(key):
    with pytest.raises(InputError):
        RadixCache().insert(key)


def test_pretty_print_and_frame():
    c = RadixCache()
    c.insert([1, 2, 3, 4, 5])
    c.insert([1, 2, 3, 9])
    text = c.pretty_print()
    assert "3 D [1..3]  locks 0, hits 2, last used at time 2" in text and "  2 D [4, 5]" in text
    f = c.node_frame()
    assert list(f["length"]) == [0, 3, 2, 1] and list(f["parent"]) == [-1, 0, 2, 2] and list(f["id"]) == [0, 2, 1, 3]


# ---- laws ---------------------------------------------------------------------------------------
keys = st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=8), min_size=1, max_size=12)


@settings(max_examples=60)
@given(keys, st.sampled_from(POLICIES), st.integers(1, 3), st.integers(0, 20))
def test_laws_sizes_and_matches(seqs, policy, page, evict_n):
    c = RadixCache(page_size=page, eviction_policy=policy)
    inserted = []
    for s in seqs:
        s = s[: len(s) - len(s) % page]
        before = c.match_prefix(s).device_len
        assert c.insert(s) == before  # insert returns what match saw
        assert c.match_prefix(s).device_len == len(s)  # a page-aligned key is fully cached
        inserted.append(s)
    nodes = list(c.nodes())
    assert c.total_size() == sum(len(n.key) for n in nodes) == c.evictable_size()
    for n in nodes:  # I1: distinct child keys, page-multiple edges
        assert len(n.key) % page == 0 and len(n.key) > 0
        assert n.parent.children[c._child_key(None, n.key)] is n
    total = c.total_size()
    freed = c.evict(evict_n)
    assert c.total_size() == total - freed and (freed >= evict_n or c.total_size() == 0)
