"""HiRadixCache against the spec's scenarios S8–S10 (radix_spec.md §6) and the HiCache invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.common.errors import InputError
from kvviz.radix.hiradix_cache import HiRadixCache


def r(a: int, b: int) -> list[int]:
    return list(range(a, b + 1))


def find(cache, key):
    return next(n for n in cache.nodes() if list(n.key) == list(key))


def test_s8_write_through_backup_lock_evict_to_host_and_host_hit():
    c = HiRadixCache(32, 64, "write_through")
    assert c.insert(r(1, 8)) == 0
    a = find(c, r(1, 8))
    assert (a.state, a.hit_count, a.lock_ref) == ("D+H", 1, 1)
    assert (c.evictable_size(), c.protected_size(), c.device_free, c.host_free) == (0, 8, 24, 56)
    assert c.evict(8) == 0  # locked until the write is acknowledged
    c.ack()
    assert a.lock_ref == 0 and (c.evictable_size(), c.protected_size()) == (8, 0)
    assert c.evict(8) == 8
    assert a.state == "H" and a.value is None and a.parent is c.root
    assert c.device_free == 32 and c.evictable_size() == 0
    m = c.match_prefix(r(1, 8) + [99])
    assert (m.device_len, m.host_len) == (0, 8)
    assert m.last_device_node is c.root and m.last_host_node is a


def test_s9_load_back_threshold_and_recompute_adoption():
    c = HiRadixCache(64, 64, "write_through")
    a_key, c_key = r(1, 8), r(1, 8) + r(201, 204)
    c.insert(a_key)
    c.ack()
    c.insert(c_key)
    c.ack()
    assert c.evict(4) == 4
    u, a = find(c, r(201, 204)), find(c, a_key)
    assert u.state == "H" and a.state == "D+H"
    m = c.match_prefix(c_key)
    assert (m.device_len, m.host_len) == (8, 4) and m.last_host_node is u
    loaded, node = c.init_load_back(u)
    assert (loaded, node) == (0, a)  # 4 < 10: recompute instead
    host_copy = u.host_value
    assert c.insert(c_key, list(m.device_indices) + [901, 902, 903, 904]) == 8
    assert u.state == "D+H" and u.value == (901, 902, 903, 904) and u.host_value == host_copy
    assert u.hit_count == 1 and a.hit_count == 3 and c.evictable_size() == 12


def test_load_back_of_a_long_chain_locks_until_ack():
    c = HiRadixCache(64, 64, "write_through")
    c.insert(r(1, 8))
    c.insert(r(1, 8) + r(201, 220))
    c.ack()
    c.evict(20)
    u = find(c, r(201, 220))
    m = c.match_prefix(r(1, 8) + r(201, 220) + [5])
    assert m.host_len == 20
    assert c.init_load_back(m.last_host_node) == (20, u)
    assert u.state == "D+H" and u.lock_ref == 1 and c.device_free == 64 - 28
    assert c.evict(64) == 0  # the loaded chain and its ancestor are locked
    c.ack()
    assert u.lock_ref == 0 and c.evict(64) == 28


def test_s10_write_through_selective():
    c = HiRadixCache(32, 64, "write_through_selective")
    c.insert(r(1, 8))
    a = find(c, r(1, 8))
    assert (a.hit_count, a.state, a.lock_ref) == (1, "D", 0)
    assert c.evict(8) == 8 and list(c.nodes()) == []  # no host copy: deleted
    m = c.match_prefix(r(1, 8))
    assert (m.device_len, m.host_len) == (0, 0)

    c = HiRadixCache(32, 64, "write_through_selective")
    c.insert(r(1, 8))
    assert c.insert(r(1, 8)) == 8
    a = find(c, r(1, 8))
    assert (a.hit_count, a.state, a.lock_ref) == (2, "D+H", 1)
    c.ack()
    c.evict(8)
    assert a.state == "H" and c.match_prefix(r(1, 8)).host_len == 8


def test_s10_write_back():
    c = HiRadixCache(32, 64, "write_back")
    c.insert(r(1, 8))
    c.insert(r(1, 8))
    a = find(c, r(1, 8))
    assert (a.hit_count, a.state) == (0, "D")
    assert c.evict(8) == 8
    assert a.state == "H" and c.host_free == 56 and c.device_free == 32 and a.lock_ref == 0
    m = c.match_prefix(r(1, 8))
    assert (m.device_len, m.host_len) == (0, 8) and m.last_host_node is a


def test_evict_host_deletes_host_only_leaves_and_cascades():
    c = HiRadixCache(64, 64, "write_through")
    c.insert(r(1, 8))
    c.insert(r(1, 8) + r(201, 204))
    c.ack()
    c.evict(12)  # both H now: [1..8] → [201..204]
    assert [n.state for n in c.nodes()] == ["H", "H"]
    assert c.evict_host(4) == 4 and len(list(c.nodes())) == 1
    assert c.evict_host(1) == 8 and list(c.nodes()) == [] and c.host_free == 64


def test_evict_host_never_drops_device_copies():
    c = HiRadixCache(64, 16, "write_through")
    c.insert(r(1, 8))
    c.ack()
    assert c.evict_host(8) == 0 and find(c, r(1, 8)).state == "D+H"


def test_backup_fails_when_host_is_full_of_device_copies():
    c = HiRadixCache(64, 8, "write_through")
    c.insert(r(1, 8))
    c.insert(r(101, 104))  # host full of D+H: no room, stays D
    assert find(c, r(101, 104)).state == "D"


def test_selective_legacy_threshold_three():
    c = HiRadixCache(32, 64, "write_through_selective", selective_threshold=3)
    for _ in range(2):
        c.insert(r(1, 8))
    assert find(c, r(1, 8)).state == "D"
    c.insert(r(1, 8))
    assert find(c, r(1, 8)).state == "D+H"


@pytest.mark.parametrize(
    "bad,field",
    [
        (dict(device_capacity=0), "device_capacity"),
        (dict(host_capacity=2, page_size=4), "host_capacity"),
        (dict(write_policy="write_around"), "write_policy"),
        (dict(page_size=0), "page_size"),
    ],
)
def test_bad_configuration(bad, field):
    args = dict(device_capacity=32, host_capacity=64) | bad
    with pytest.raises(InputError) as err:
        HiRadixCache(**args)
    assert err.value.field == field


def check_tree(c: HiRadixCache) -> None:
    """The tree's invariants: the leaf set is exactly the attached childless nodes; device residency
    is prefix-closed (I3); outside write-back so are host copies (I4); every size adds up."""
    nodes = list(c.nodes())
    ids = {n.id for n in nodes}
    assert all(n.id in ids and not n.children for n in c.leaves())
    assert {n.id for n in c.leaves()} == {n.id for n in nodes if not n.children}
    for n in nodes:
        assert n.parent.children[c._child_key(n.extra_key, n.key)] is n
        if n.parent is not c.root:
            assert n.value is None or n.parent.value is not None
            if c.write_policy != "write_back":
                assert n.host_value is None or n.parent.host_value is not None
        assert n.value is not None or n.host_value is not None or n.in_flight
        assert n.lock_ref >= 0
    device = [n for n in nodes if n.value is not None]
    assert c.n_nodes == len(nodes)
    assert c.total_size() == sum(len(n.value) for n in device) <= c.capacity
    assert c.host_tokens == sum(len(n.host_value) for n in nodes if n.host_value is not None) <= c.host_capacity
    assert c.evictable_size() == sum(len(n.value) for n in device if n.lock_ref == 0)
    assert c.protected_size() == sum(len(n.value) for n in device if n.lock_ref > 0)


def serve(c: HiRadixCache, key: list[int]) -> None:
    """One request as the scheduler serves it: match, load back a host hit, lock what matched,
    allocate the rest on the device (evicting), insert, release."""
    m = c.match_prefix(key)
    loaded, last = c.init_load_back(m.last_host_node) if m.host_len else (0, m.last_node)
    c.inc_lock_ref(last)
    need = len(key) - m.device_len - loaded
    if c.alloc_device(need):
        c.insert(key)
        c.release_device(need)
    c.dec_lock_ref(last)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("serve"), st.lists(st.integers(0, 3), min_size=1, max_size=12)),
        st.tuples(st.just("match"), st.lists(st.integers(0, 3), max_size=12)),
        st.tuples(st.just("evict"), st.integers(0, 12)),
        st.tuples(st.just("evict_host"), st.integers(0, 12)),
        st.tuples(st.just("ack"), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=50)
@given(
    ops,
    st.sampled_from(["write_through", "write_back", "write_through_selective"]),
    st.integers(12, 32),
    st.integers(1, 12),
)
def test_laws_invariants_and_sizes_after_every_operation(script, policy, device, host):
    c = HiRadixCache(device, host, policy)
    for op, arg in script:
        if op == "serve":
            serve(c, arg)
        elif op == "match":
            m = c.match_prefix(arg)
            assert m.device_len + m.host_len <= len(arg)
        else:
            getattr(c, op)(arg) if op != "ack" else c.ack()
        check_tree(c)


def test_a_node_is_not_backed_up_under_a_parent_without_a_host_copy():
    """Host full of a device copy: the parent's backup fails, so its child is not backed up either
    (a copy under it would be cut off when the parent is deleted: the page crashed on that)."""
    c = HiRadixCache(100, 10, "write_through")
    c.insert(r(21, 26))  # 6 tokens D+H: 4 free on the host
    c.ack()
    c.insert(r(1, 5))  # 5 > 4: stays D
    c.insert(r(1, 9))  # its 4-token child would fit, but its parent has no host copy
    assert [(len(n.key), n.state) for n in c.nodes()] == [(6, "D+H"), (5, "D"), (4, "D")]
    c.ack()
    assert c.evict(10) == 10 and c.evict(5) == 5  # [21..26] to host; [6..9] then [1..5] deleted
    assert c.evict_host(10) == 6 and list(c.nodes()) == []
    check_tree(c)


def test_write_back_keeps_a_node_whose_copy_failed_while_its_children_hang_from_it():
    c = HiRadixCache(100, 6, "write_back")
    c.insert(r(1, 5))
    c.insert(r(1, 9))  # [1..5] → [6..9], both D
    assert c.evict(9) == 4  # [6..9] written back; [1..5] does not fit the host and holds it: stays
    assert [(len(n.key), n.state) for n in c.nodes()] == [(5, "D"), (4, "H")]
    check_tree(c)


def test_deleting_a_device_only_leaf_cascades_to_its_parent():
    c = HiRadixCache(80, 400, "write_through_selective")
    c.insert(r(1, 60))
    c.insert(r(1, 60) + r(601, 604))  # [1..60] hc2: backed up; [601..604] D only
    c.ack()
    assert c.evict(48) == 64  # [601..604] deleted, then [1..60] → H
    assert [(len(n.key), n.state) for n in c.nodes()] == [(60, "H")]
