"""Address math for meshes and switched fabrics (plugins/module_utils/mesh/addressing.py)."""

from __future__ import annotations

import itertools
import json

import pytest
from netaddr import IPAddress, IPNetwork, IPSet

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma

from ...conftest import FIXTURE_DIR

HOSTS = [f"node{i}" for i in range(1, 9)]
# host_plan takes every pool and name explicitly (the mesh_network role's defaults own them).
PLAN_ARGS = {
    "link_pool": "192.168.100.0/22",
    "link_prefix": 30,
    "node_pool": "10.255.0.0/24",
    "fabric_subnet": "192.168.200.0/24",
    "nodeaddr_ifname": "nodeaddr0",
}


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


# `ip -j link show` (iproute2 6.1, Debian 12) of a node with two mesh ports (fixtures/iproute2/SOURCES.md).
IPROUTE2 = FIXTURE_DIR / "iproute2"
IP_LINK = (IPROUTE2 / "ip_link_two_mesh_ports.json").read_text()
IFACES = ma.ip_link_interfaces(IP_LINK)


def test_ip_link_interfaces_lowercases_macs() -> None:
    assert IFACES == {
        "lo": "00:00:00:00:00:00",
        "eth0": "02:00:00:00:00:01",
        "enp1s0f0np0": "5c:25:73:00:00:10",
        "enp1s0f1np1": "5c:25:73:00:00:11",
    }


@pytest.mark.parametrize("text", ["not json", '{"ifname": "x"}'])
def test_ip_link_interfaces_rejects_garbage(text: str) -> None:
    with pytest.raises(ma.MeshAddressingError, match="ip -j link"):
        ma.ip_link_interfaces(text)


def test_port_errors_good_mesh_by_name_and_mac() -> None:
    ifaces = IFACES
    ports = {"n2": "enp1s0f0np0", "n3": {"macaddress": "5c:25:73:00:00:11"}}
    assert ma.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, ifaces) == []
    # A peer without a cable (ring, chain) is no error here; whether both ends agree is the graph's check.
    assert ma.port_errors("n1", ["n1", "n2", "n3"], "mesh", {"n2": "enp1s0f0np0"}, None, ifaces) == []
    # Two cables to one peer (rails).
    rails = {"n2": ["enp1s0f0np0", {"macaddress": "5c:25:73:00:00:11"}]}
    assert ma.port_errors("n1", ["n1", "n2"], "mesh", rails, None, ifaces) == []


@pytest.mark.parametrize(
    ("ports", "needle"),
    [
        ({}, "mesh_network_ports is empty: no cable joins n1 to any other node"),
        ({"n2": ["enp1s0f0np0", "enp1s0f0np0"]}, "'enp1s0f0np0' is listed twice for 'n2'"),
        ({"n2": []}, "lists no port for peer 'n2'"),
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
    errs = ma.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, IFACES)
    assert any(needle in e for e in errs), errs


def test_port_errors_switched() -> None:
    ifaces = IFACES
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
        plans[host] = ma.host_plan(
            host,
            hosts,
            "mesh",
            ports=dict(zip(peers, names, strict=True)),
            interfaces=dict.fromkeys(names, ""),
            **PLAN_ARGS,
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
        ma.host_plan("x", ["a", "b"], "mesh", ports={}, interfaces={}, **PLAN_ARGS)
    with pytest.raises(ma.MeshAddressingError, match="mesh_network_ports is empty: no cable joins a"):
        ma.host_plan("a", ["a", "b"], "mesh", ports={}, interfaces={}, **PLAN_ARGS)
    # The other end lists the cable, this one does not.
    with pytest.raises(ma.MeshAddressingError, match="a: mesh_network_ports has no port for peer 'c'"):
        ma.host_plan(
            "a",
            ["a", "b", "c"],
            "mesh",
            ports={"b": "eth1"},
            all_ports={"b": {"a": "eth1", "c": "eth2"}, "c": {"a": "eth1", "b": "eth2"}},
            interfaces={"eth1": ""},
            **PLAN_ARGS,
        )


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
    ifaces = IFACES
    plan = ma.host_plan(
        "n1",
        ["n1", "n2"],
        "switched",
        fabric_port={"macaddress": "5c:25:73:00:00:10"},
        interfaces=ifaces,
        **PLAN_ARGS,
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


@pytest.mark.parametrize("mtu", [1280, 9000, 9216, "9000"])
def test_mtu_errors_accepts_whole_numbers_in_range(mtu: object) -> None:
    assert ma.mtu_errors(mtu, "mtu") == []


@pytest.mark.parametrize(
    ("mtu", "message"),
    [
        ("65000", "mesh_network_mtu '65000' must be an integer in 1280..9216"),
        (1279, "mesh_network_mtu 1279 must be an integer in 1280..9216"),
        ("jumbo", "mesh_network_mtu 'jumbo' must be an integer in 1280..9216"),
        (" 9000", "mesh_network_mtu ' 9000' must be an integer in 1280..9216"),
        (9000.0, "mesh_network_mtu 9000.0 must be an integer in 1280..9216"),
        (True, "mesh_network_mtu True must be an integer in 1280..9216"),
        (None, "mesh_network_mtu None must be an integer in 1280..9216"),
    ],
)
def test_mtu_errors_names_the_bad_value(mtu: object, message: str) -> None:
    assert ma.mtu_errors(mtu, "mesh_network_mtu") == [message]


def test_netplan_document_applies_the_mtu_rule() -> None:
    # One rule: the role's validate step and the renderer reject the same values with the same words.
    with pytest.raises(ma.MeshAddressingError) as info:
        ma.netplan_document(_plans(2)["node1"], "65000")
    assert [str(info.value)] == ma.mtu_errors("65000", "mtu")


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


ROUTE_OK = '[{"dst":"192.168.100.2","dev":"mesh0","prefsrc":"192.168.100.1","flags":[],"uid":0,"cache":[]}]'
ROUTE_MGMT = json.dumps(
    [
        {
            "dst": "10.255.0.3",
            "gateway": "10.99.0.1",
            "dev": "eth0",
            "prefsrc": "10.99.0.10",
            "flags": [],
            "uid": 0,
        }
    ]
)
PING_OK = """PING 10.255.0.2 (10.255.0.2) from 10.255.0.1 : 8972(9000) bytes of data.
8980 bytes from 10.255.0.2: icmp_seq=1 ttl=64 time=0.061 ms
8980 bytes from 10.255.0.2: icmp_seq=2 ttl=64 time=0.045 ms

--- 10.255.0.2 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 201ms
rtt min/avg/max/mdev = 0.045/0.053/0.061/0.008 ms
"""
PING_MTU = """PING 10.255.0.3 (10.255.0.3) 8972(9000) bytes of data.
ping: local error: message too long, mtu=1500

--- 10.255.0.3 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
"""


def test_path_checks_and_targets() -> None:
    plan = _plans(3)["node1"]
    checks = ma.path_checks(plan, 9000)
    assert [(c["dst"], c["kind"], c["address"], c["expected_dev"]) for c in checks] == [
        ("node2", "link", "192.168.100.2", "mesh0"),
        ("node2", "node", "10.255.0.2", "mesh0"),
        ("node3", "link", "192.168.100.6", "mesh1"),
        ("node3", "node", "10.255.0.3", "mesh1"),
    ]
    assert {c["size"] for c in checks} == {8972} and checks[1]["source"] == "10.255.0.1"
    targets = ma.check_targets(["10.99.0.1", ""], plan, 9000)
    assert targets[0] == {"address": "10.99.0.1", "size": 0, "name": "management path to 10.99.0.1"}
    assert len(targets) == 5
    # a failed apply names ports and peers, the way operators think of cabling
    assert [t["name"] for t in targets[1:]] == [
        "node1 mesh0 -> node2 link address",
        "node1 mesh0 -> node2 node address",
        "node1 mesh1 -> node3 link address",
        "node1 mesh1 -> node3 node address",
    ]


def test_verify_results_parse_route_and_ping() -> None:
    plan = _plans(3)["node1"]
    checks = ma.path_checks(plan, 9000)[:2] + ma.path_checks(plan, 9000)[3:]
    routes = [
        {"stdout": ROUTE_OK},
        {"stdout": ROUTE_OK.replace("192.168.100.2", "10.255.0.2")},
        {"stdout": ROUTE_MGMT},
    ]
    pings = [
        {"rc": 0, "stdout": PING_OK},
        {"rc": 0, "stdout": PING_OK},
        {"rc": 1, "stdout": PING_MTU, "stderr": ""},
    ]
    res = ma.verify_results(checks, routes, pings)
    assert res[0]["ok"] and res[0]["dev"] == "mesh0" and res[0]["rtt_ms"] == 0.053
    assert not res[2]["ok"] and res[2]["dev"] == "eth0"
    assert res[2]["error"] == (
        "node3 node address 10.255.0.3: route goes via eth0 instead of mesh1; DF ping of 8972 B failed: "
        "1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms"
    )


def test_reachability_table() -> None:
    ok = {"ok": True, "dev": "enp1s0f0np0", "expected_dev": "enp1s0f0np0"}
    results = {
        "n1": [
            {"dst": "n2", "kind": "link", **ok, "rtt_ms": 0.03},
            {"dst": "n2", "kind": "node", **ok, "rtt_ms": 0.061},
            {"dst": "n3", "kind": "node", "ok": False, "dev": "eth0", "expected_dev": "enp1s0f1np1"},
        ],
        "n2": [{"dst": "n1", "kind": "link", "ok": False, **{k: ok[k] for k in ("dev", "expected_dev")}}],
    }
    table = ma.reachability_table(results, ["n1", "n2", "n3"]).splitlines()
    assert table[0].split() == ["from", "\\", "to", "n1", "n2", "n3"]
    assert "ok enp1s0f0np0 0.06ms" in table[1] and "FAIL via eth0 (want enp1s0f1np1)" in table[1]
    assert "FAIL via enp1s0f0np0" in table[2] and "not checked" in table[2]
    assert table[-1] == "1/3 node pairs OK"


IP_DETAILS = IPROUTE2 / "ip_d_addr_node1_mesh.json"


def test_the_mtu_is_checked_against_each_ports_maxmtu() -> None:
    text = IP_DETAILS.read_text()
    assert ma.port_mtu_errors("node1", 9000, text, ["data0", "data1"]) == []  # veths carry up to 65535
    # the same node with data1 on a NIC that carries at most 1500 (max_mtu as the kernel reports it)
    links = json.loads(text)
    next(lk for lk in links if lk["ifname"] == "data1")["max_mtu"] = 1500
    assert ma.port_mtu_errors("node1", "9000", links, ["data0", "data1"]) == [
        "node1: mesh_network_mtu 9000 is larger than port data1's maxmtu 1500 (`ip -d link show "
        "data1`): lower "
        "mesh_network_mtu or use ports that carry it"
    ]
    assert ma.port_mtu_errors("node1", "jumbo", links, ["data1"]) == []  # mtu_errors names that one
    assert ma.port_mtu_errors("node1", 9000, "not json", ["data1"])[0].startswith(
        "node1: `ip -d -j link` output"
    )
