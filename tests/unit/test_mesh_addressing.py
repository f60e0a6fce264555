"""Address math for meshes and switched fabrics (plugins/module_utils/mesh_addressing.py)."""

from __future__ import annotations

import itertools

import pytest
from netaddr import IPAddress, IPNetwork, IPSet

from ansible_collections.rdmaops.cluster.plugins.module_utils import mesh_addressing as ma

HOSTS = [f"node{i}" for i in range(1, 9)]


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


FACTS = {
    "interfaces": ["lo", "eth0", "enp1s0f0np0", "enp1s0f1np1"],
    "eth0": {"macaddress": "02:00:00:00:00:01"},
    "enp1s0f0np0": {"macaddress": "5C:25:73:00:00:10"},
    "enp1s0f1np1": {"macaddress": "5c:25:73:00:00:11"},
    "lo": {},
}


def test_facts_interfaces_lowercases_macs() -> None:
    ifaces = ma.facts_interfaces(FACTS)
    assert ifaces["enp1s0f0np0"] == "5c:25:73:00:00:10" and ifaces["lo"] == ""


def test_facts_interfaces_reads_mangled_keys() -> None:
    facts = {"interfaces": ["mesh-a"], "mesh_a": {"macaddress": "aa:bb:cc:dd:ee:ff"}}
    assert ma.facts_interfaces(facts) == {"mesh-a": "aa:bb:cc:dd:ee:ff"}


def test_port_errors_good_mesh_by_name_and_mac() -> None:
    ifaces = ma.facts_interfaces(FACTS)
    ports = {"n2": "enp1s0f0np0", "n3": {"macaddress": "5c:25:73:00:00:11"}}
    assert ma.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, ifaces) == []


@pytest.mark.parametrize(
    ("ports", "needle"),
    [
        ({"n2": "enp1s0f0np0"}, "no port for peer 'n3'"),
        ({"n2": "enp1s0f0np0", "n3": "enp9s0"}, "interface 'enp9s0' does not exist"),
        ({"n2": "enp1s0f0np0", "n3": "enp1s0f0np0"}, "'enp1s0f0np0' is used for both 'n2' and 'n3'"),
        (
            {"n2": "enp1s0f0np0", "n3": "enp1s0f1np1", "n9": "eth0"},
            "'n9', which is not one of the mesh hosts",
        ),
        ({"n2": "enp1s0f0np0", "n3": "enp1s0f1np1", "n1": "eth0"}, "names the host itself ('n1')"),
        (
            {"n2": "enp1s0f0np0", "n3": {"macaddress": "00:11:22:33:44:55"}},
            "'00:11:22:33:44:55' is not on any",
        ),
        (
            {"n2": "enp1s0f0np0", "n3": {"name": "enp1s0f0np0", "macaddress": "5c:25:73:00:00:11"}},
            "belongs to 'enp1s0f1np1', not to the named interface 'enp1s0f0np0'",
        ),
        ({"n2": "enp1s0f0np0", "n3": 7}, "7 is neither an interface name"),
        ("enp1s0f0np0", "mesh_network_ports 'enp1s0f0np0' is not a mapping"),
    ],
)
def test_port_errors_name_the_bad_value(ports: object, needle: str) -> None:
    errs = ma.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, ma.facts_interfaces(FACTS))
    assert any(needle in e for e in errs), errs


def test_port_errors_switched() -> None:
    ifaces = ma.facts_interfaces(FACTS)
    assert ma.port_errors("n1", ["n1", "n2"], "switched", {}, "enp1s0f0np0", ifaces) == []
    assert "'ens9'" in ma.port_errors("n1", ["n1", "n2"], "switched", {}, "ens9", ifaces)[0]
    assert "fabric_port is not set" in ma.port_errors("n1", ["n1", "n2"], "switched", {}, "", ifaces)[0]
    assert "'ring'" in ma.port_errors("n1", ["n1", "n2"], "ring", {}, "", ifaces)[0]


def _plans(n: int) -> dict[str, dict[str, object]]:
    hosts = HOSTS[:n]
    plans = {}
    for host in hosts:
        peers = [h for h in hosts if h != host]
        names = [f"mesh{k}" for k in range(len(peers))]
        facts: dict[str, object] = {"interfaces": names}
        plans[host] = ma.host_plan(
            host,
            hosts,
            "mesh",
            ports=dict(zip(peers, names, strict=True)),
            interfaces=ma.facts_interfaces(facts),
        )
    return plans


def test_host_plans_agree_between_the_two_ends() -> None:
    plans = _plans(4)
    for host, plan in plans.items():
        assert plan["socket_ifname"] == "nodeaddr0"
        for link in plan["links"]:  # type: ignore[attr-defined]
            other = next(x for x in plans[link["peer"]]["links"] if x["peer"] == host)  # type: ignore[attr-defined]
            assert other["subnet"] == link["subnet"]
            assert (other["address"], other["peer_address"]) == (link["peer_address"], link["address"])
            assert link["peer_node_address"] == plans[link["peer"]]["node_address"]


def test_host_plan_rejects_unknown_host_and_bad_ports() -> None:
    with pytest.raises(ma.MeshAddressingError, match="host 'x' is not in the host list"):
        ma.host_plan("x", ["a", "b"], "mesh", ports={}, interfaces={})
    with pytest.raises(ma.MeshAddressingError, match="no port for peer 'b'"):
        ma.host_plan("a", ["a", "b"], "mesh", ports={}, interfaces={})


def test_netplan_document_mesh() -> None:
    plan = _plans(3)["node1"]
    doc = ma.netplan_document(plan, 9000)["network"]
    assert doc["version"] == 2
    assert doc["ethernets"]["mesh0"]["addresses"] == ["192.168.100.1/30"]
    assert doc["ethernets"]["mesh0"]["routes"] == [
        {"to": "10.255.0.2/32", "via": "192.168.100.2", "from": "10.255.0.1"}
    ]
    assert doc["ethernets"]["mesh1"]["mtu"] == 9000
    assert "match" not in doc["ethernets"]["mesh0"]
    assert doc["bridges"]["nodeaddr0"] == {
        "renderer": "networkd",
        "interfaces": [],
        "addresses": ["10.255.0.1/32"],
        "ignore-carrier": True,
        "link-local": [],
    }


def test_netplan_document_mac_match_and_switched() -> None:
    ifaces = ma.facts_interfaces(FACTS)
    plan = ma.host_plan(
        "n1", ["n1", "n2"], "switched", fabric_port={"macaddress": "5c:25:73:00:00:10"}, interfaces=ifaces
    )
    assert plan["socket_ifname"] == "enp1s0f0np0" and plan["node_address"] == "192.168.200.1"
    doc = ma.netplan_document(plan, 1500)["network"]
    port = doc["ethernets"]["enp1s0f0np0"]
    assert port["match"] == {"macaddress": "5c:25:73:00:00:10"} and port["set-name"] == "enp1s0f0np0"
    assert port["addresses"] == ["192.168.200.1/24"] and port["mtu"] == 1500
    assert "bridges" not in doc


@pytest.mark.parametrize("mtu", ["jumbo", 100, 10000])
def test_netplan_document_bad_mtu(mtu: object) -> None:
    with pytest.raises(ma.MeshAddressingError, match=f"mtu {mtu!r}"):
        ma.netplan_document(_plans(2)["node1"], mtu)
