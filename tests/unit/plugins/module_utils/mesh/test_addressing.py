"""Pools and their numbering for meshes and switched fabrics (plugins/module_utils/mesh/addressing.py)."""

from __future__ import annotations

import itertools

import pytest
from netaddr import IPAddress, IPNetwork, IPSet

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma

from .conftest import HOSTS


def test_mesh_links_three_hosts_exact() -> None:
    links = ma.mesh_links(["n1", "n2", "n3"], "192.168.100.0/22", 24)
    assert links == [
        {
            "a": "n1",
            "b": "n2",
            "subnet": "192.168.100.0/24",
            "a_ip": "192.168.100.1",
            "b_ip": "192.168.100.2",
        },
        {
            "a": "n1",
            "b": "n3",
            "subnet": "192.168.101.0/24",
            "a_ip": "192.168.101.1",
            "b_ip": "192.168.101.2",
        },
        {
            "a": "n2",
            "b": "n3",
            "subnet": "192.168.102.0/24",
            "a_ip": "192.168.102.1",
            "b_ip": "192.168.102.2",
        },
    ]


@pytest.mark.parametrize("n", range(0, 9))
def test_mesh_links_cover_every_pair_once_without_overlap(n: int) -> None:
    hosts = HOSTS[:n]
    links = ma.mesh_links(hosts, "192.168.100.0/22", 30)
    pairs = {frozenset((link["a"], link["b"])) for link in links}
    assert pairs == {frozenset(p) for p in itertools.combinations(hosts, 2)}
    assert len(links) == n * (n - 1) // 2
    seen = IPSet()
    for link in links:
        subnet = IPNetwork(link["subnet"])
        assert subnet in IPNetwork("192.168.100.0/22")
        assert not (seen & IPSet([subnet])), f"{subnet} overlaps an earlier link"
        seen.add(subnet)
        assert IPAddress(link["a_ip"]) in subnet and IPAddress(link["b_ip"]) in subnet
        assert link["a_ip"] != link["b_ip"]
        # "a" is always the host that comes first in the list.
        assert hosts.index(link["a"]) < hosts.index(link["b"])


@pytest.mark.parametrize("prefix", [24, 29, 30, 31])
def test_appending_hosts_never_changes_existing_links(prefix: int) -> None:
    pool = "10.20.0.0/16"
    previous: dict[frozenset[str], dict[str, str]] = {}
    for n in range(2, 9):
        current = {frozenset((x["a"], x["b"])): x for x in ma.mesh_links(HOSTS[:n], pool, prefix)}
        for pair, link in previous.items():
            assert current[pair] == link, f"appending {HOSTS[n - 1]} renumbered {sorted(pair)}"
        previous = current


def test_order_not_sorting_decides_numbering() -> None:
    # 'zeta' comes first in the list, so it keeps the first subnet although it sorts last.
    links = ma.mesh_links(["zeta", "alpha"], "192.168.100.0/22", 30)
    assert links[0]["a"] == "zeta" and links[0]["subnet"] == "192.168.100.0/30"


def test_mesh_links_is_deterministic() -> None:
    assert ma.mesh_links(HOSTS, "192.168.100.0/22", 30) == ma.mesh_links(list(HOSTS), "192.168.100.0/22", 30)


def test_pair_index_is_dense_in_first_possible_order() -> None:
    order = [ma.pair_index(i, j) for j in range(6) for i in range(j)]
    assert order == list(range(15))
    assert ma.pair_index(3, 1) == ma.pair_index(1, 3)


def test_slash31_uses_both_addresses() -> None:
    link = ma.mesh_links(["a", "b"], "192.168.100.0/24", 31)[0]
    assert (link["subnet"], link["a_ip"], link["b_ip"]) == (
        "192.168.100.0/31",
        "192.168.100.0",
        "192.168.100.1",
    )


@pytest.mark.parametrize(
    ("hosts", "pool", "prefix", "needle"),
    [
        (["a", "b", "c", "d"], "192.168.100.0/22", 24, "192.168.100.0/22 is too small"),
        (["a", "b"], "192.168.100.0/22", 32, "prefix 32"),
        (["a", "b"], "192.168.100.0/22", 20, "prefix 20"),
        (["a", "b"], "192.168.100.0/22", "abc", "prefix 'abc'"),
        (["a", "b"], "192.168.100.0/22", True, "prefix True"),
        (["a", "b"], "192.168.100.0/22", 24.5, "prefix 24.5"),
        (["a", "b", "a"], "192.168.100.0/22", 30, "duplicate host 'a'"),
        (["a", ""], "192.168.100.0/22", 30, "host name ''"),
        ("a,b", "192.168.100.0/22", 30, "hosts 'a,b'"),
        (["a", "b"], "192.168.300.0/22", 30, "'192.168.300.0/22'"),
        (["a", "b"], "192.168.100.0", 30, "'192.168.100.0'"),
        (["a", "b"], "192.168.100.4/22", 30, "'192.168.100.4/22' has host bits set"),
        (["a", "b"], "fd00::/64", 126, "'fd00::/64' is not IPv4"),
    ],
)
def test_mesh_links_errors_name_the_bad_value(hosts: object, pool: str, prefix: object, needle: str) -> None:
    with pytest.raises(ma.MeshAddressingError, match=None) as info:
        ma.mesh_links(hosts, pool, prefix)
    assert needle in str(info.value)


def test_pool_exactly_full_is_accepted_and_one_more_host_is_not() -> None:
    # /22 holds four /24s: 3 hosts need 3 links, 4 hosts need 6.
    assert len(ma.mesh_links(["a", "b", "c"], "192.168.100.0/22", 24)) == 3
    assert len(ma.mesh_links(["a", "b"], "192.168.100.0/24", 24)) == 1
    with pytest.raises(ma.MeshAddressingError, match="holds 1 /24 subnets, 3 hosts need 3"):
        ma.mesh_links(["a", "b", "c"], "192.168.100.0/24", 24)


def test_switched_addresses_stable_under_append() -> None:
    small = ma.switched_addresses(HOSTS[:2], "192.168.200.0/24")
    big = ma.switched_addresses(HOSTS, "192.168.200.0/24")
    assert small == {h: big[h] for h in HOSTS[:2]}
    assert big["node1"] == {"address": "192.168.200.1", "prefix": 24, "cidr": "192.168.200.1/24"}
    assert big["node8"]["address"] == "192.168.200.8"


def test_switched_subnet_too_small() -> None:
    assert len(ma.switched_addresses(["a", "b"], "192.168.200.0/30")) == 2
    with pytest.raises(ma.MeshAddressingError, match=r"subnet 192.168.200.0/30 is too small"):
        ma.switched_addresses(["a", "b", "c"], "192.168.200.0/30")


def test_node_addresses_stable_and_unique() -> None:
    addrs = ma.node_addresses(HOSTS, "10.255.0.0/24")
    assert addrs["node1"] == "10.255.0.1" and addrs["node8"] == "10.255.0.8"
    assert len(set(addrs.values())) == len(HOSTS)
    assert ma.node_addresses(HOSTS[:3], "10.255.0.0/24") == {h: addrs[h] for h in HOSTS[:3]}
    with pytest.raises(ma.MeshAddressingError, match="duplicate host 'node1'"):
        ma.node_addresses(["node1", "node1"], "10.255.0.0/24")


def test_pool_errors() -> None:
    ok = {"link": "192.168.100.0/22", "node": "10.255.0.0/24"}
    assert ma.pool_errors(ok, "10.99.0.0/24") == []
    errs = ma.pool_errors({"link": "10.255.0.0/16", "node": "10.255.0.0/24"}, "10.99.0.0/24")
    assert errs == ["link 10.255.0.0/16 overlaps node 10.255.0.0/24"]
    errs = ma.pool_errors(ok, "192.168.101.0/24")
    assert errs == ["link 192.168.100.0/22 overlaps the management network 192.168.101.0/24"]
    errs = ma.pool_errors({"link": "nope"}, "bad")
    assert any("'nope'" in e for e in errs) and any("'bad'" in e for e in errs)


def test_plan_errors() -> None:
    assert ma.plan_errors(HOSTS[:3], "mesh", "192.168.100.0/22", 30, "10.255.0.0/24", "x") == []
    assert ma.plan_errors(HOSTS[:3], "switched", "x", 99, "y", "192.168.200.0/24") == []
    errs = ma.plan_errors(HOSTS[:4], "mesh", "192.168.100.0/22", 24, "10.255.0.0/24", "")
    assert errs == [
        "pool 192.168.100.0/22 is too small: it holds 4 /24 subnets, 4 hosts need 6 (one per pair)"
    ]
    assert (
        "'10.255.0.0/33'" in ma.plan_errors(HOSTS[:2], "mesh", "192.168.100.0/22", 30, "10.255.0.0/33", "")[0]
    )
