"""Lab naming, addresses, MACs, mesh ports and link aliases (plugins/module_utils/lab/plan.py)."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import plan as lab_plan


def nodes(n: int) -> list[str]:
    return lab_plan.node_names("node", n)


def test_mesh_ports_cover_every_peer_once() -> None:
    plan = lab_plan.make_plan("lab", nodes(5), "mesh", "10.99.0.0/24")
    assert len(plan.links) == 10
    for node in plan.nodes:
        peers = set(nodes(5)) - {node.name}
        assert set(node.ports) == peers
        assert sorted(node.ports.values()) == [f"data{i}" for i in range(4)]
    for link in plan.links:
        by = {n.name: n for n in plan.nodes}
        assert by[link.a].ports[link.b] == link.a_if
        assert by[link.b].ports[link.a] == link.b_if


def test_mesh_ports_do_not_change_when_nodes_are_appended() -> None:
    small = lab_plan.make_plan("lab", nodes(3), "mesh", "10.99.0.0/24")
    big = lab_plan.make_plan("lab", nodes(8), "mesh", "10.99.0.0/24")
    for before, after in zip(small.nodes, big.nodes, strict=False):
        assert {p: after.ports[p] for p in before.ports} == before.ports
        assert {i: after.macs[i] for i in before.macs} == before.macs
        assert (before.mgmt_ip, before.mgmt_mac) == (after.mgmt_ip, after.mgmt_mac)


def test_mesh_port_scheme() -> None:
    assert [lab_plan.mesh_port(1, j) for j in (2, 3, 4)] == ["data0", "data1", "data2"]
    assert [lab_plan.mesh_port(3, j) for j in (1, 2, 4)] == ["data0", "data1", "data2"]
    with pytest.raises(lab_plan.LabError, match="node indices 2 and 2"):
        lab_plan.mesh_port(2, 2)


def test_switched_plan_has_one_fabric_port() -> None:
    plan = lab_plan.make_plan("mol", nodes(3), "switched", "10.98.0.0/24")
    assert plan.links == []
    assert all(n.ports == {"fabric": "data0"} and list(n.macs) == ["data0"] for n in plan.nodes)
    assert plan.as_dict()["fabric_bridge"] == "mol-dbr"


def test_management_addresses() -> None:
    plan = lab_plan.make_plan("lab", nodes(3), "mesh", "10.99.0.0/24")
    assert plan.mgmt_host_ip == "10.99.0.1"
    assert [n.mgmt_ip for n in plan.nodes] == ["10.99.0.11", "10.99.0.12", "10.99.0.13"]
    assert [n.netns for n in plan.nodes] == ["lab-node1", "lab-node2", "lab-node3"]
    assert [n.mgmt_host_if for n in plan.nodes] == ["lab-m1", "lab-m2", "lab-m3"]


@pytest.mark.parametrize(
    ("cidr", "count", "message"),
    [
        ("10.99.0.1/24", 3, "'10.99.0.1/24' is not an IPv4 network"),
        ("10.99.0.0/33", 3, "'10.99.0.0/33' is not an IPv4 network"),
        ("fd00::/64", 3, "'fd00::/64' is not an IPv4 network"),
        ("10.99.0.0/28", 5, "10.99.0.0/28 has no room for 5 nodes"),
    ],
)
def test_bad_management_cidr(cidr: str, count: int, message: str) -> None:
    with pytest.raises(lab_plan.LabError, match=message):
        lab_plan.make_plan("lab", nodes(count), "mesh", cidr)


@pytest.mark.parametrize("name", ["", "Lab", "lab-x", "1lab", "abcdefghijk", "la b"])
def test_bad_lab_names(name: str) -> None:
    with pytest.raises(lab_plan.LabError, match="lab name"):
        lab_plan.make_plan(name, nodes(2), "mesh", "10.99.0.0/24")


def test_bad_topology_and_counts() -> None:
    with pytest.raises(lab_plan.LabError, match="topology 'star'"):
        lab_plan.make_plan("lab", nodes(2), "star", "10.99.0.0/24")
    with pytest.raises(lab_plan.LabError, match="topology ring takes at least 3 nodes, not 2"):
        lab_plan.make_plan("lab", nodes(2), "ring", "10.99.0.0/24")
    with pytest.raises(lab_plan.LabError, match="topology rails takes exactly 2 nodes, not 3"):
        lab_plan.make_plan("lab", nodes(3), "rails", "10.99.0.0/24")
    with pytest.raises(lab_plan.LabError, match="node count 0"):
        lab_plan.node_names("node", 0)
    with pytest.raises(lab_plan.LabError, match="node count 33"):
        lab_plan.node_names("node", 33)
    with pytest.raises(lab_plan.LabError, match="not unique"):
        lab_plan.make_plan("lab", ["a", "a"], "mesh", "10.99.0.0/24")


def test_host_interface_names_fit_the_kernel_limit() -> None:
    plan = lab_plan.make_plan("abcdefghij", nodes(32), "switched", "10.0.0.0/16")
    names = [n.mgmt_host_if for n in plan.nodes] + [lab_plan.fabric_host_ifname("abcdefghij", 32)]
    assert max(len(x) for x in names) <= lab_plan.IFNAMSIZ
    with pytest.raises(lab_plan.LabError, match="longer than"):
        lab_plan.mgmt_host_ifname("abcdefghij", 1000)


def test_macs_are_stable_unique_and_locally_administered() -> None:
    plan = lab_plan.make_plan("lab", nodes(8), "mesh", "10.99.0.0/24")
    macs = [m for n in plan.nodes for m in [n.mgmt_mac, n.mgmt_host_mac, *n.macs.values()]]
    assert len(set(macs)) == len(macs)
    for mac in macs:
        first = int(mac.split(":")[0], 16)
        assert first & 0x02 and not first & 0x01
    assert lab_plan.stable_mac("lab", "node1", "data0") == lab_plan.stable_mac("lab", "node1", "data0")
    assert lab_plan.stable_mac("lab", "node1", "data0") != lab_plan.stable_mac("mol", "node1", "data0")


def test_instance_prefixes_never_overlap() -> None:
    # '<lab>-' is the ownership test for netns and links; names without '-' keep it exclusive.
    names = ["lab", "lab2", "mol", "l"]
    for a, b in itertools.permutations(names, 2):
        plan_b = lab_plan.make_plan(b, nodes(3), "switched", "10.99.0.0/24")
        own_b = (
            [n.netns for n in plan_b.nodes]
            + [n.mgmt_host_if for n in plan_b.nodes]
            + [lab_plan.mgmt_bridge(b)]
        )
        assert not any(x.startswith(a + "-") for x in own_b)


def test_host_link_owner() -> None:
    assert lab_plan.node_of_host_link("lab", {"ifalias": "lab:mgmt:node4"}) == "node4"
    assert lab_plan.node_of_host_link("lab", {"ifalias": "lab:fabric:node2:data0"}) == "node2"
    assert lab_plan.node_of_host_link("lab", {"ifalias": "mol:mgmt:node4"}) is None
    assert lab_plan.node_of_host_link("lab", {}) is None


def test_switches_get_a_management_port_only_at_a_fixed_address() -> None:
    plan = lab_plan.make_plan("lab", nodes(3), "mesh", "10.99.0.0/24", ["sw1"])
    sw = [n for n in plan.nodes if n.role == "switch"]
    assert [(s.name, s.mgmt_ip, s.ports, s.macs) for s in sw] == [("sw1", "10.99.0.111", {}, {})]
    assert all(sw[0].name not in (link.a, link.b) for link in plan.links)
    grown = lab_plan.make_plan("lab", nodes(5), "switched", "10.99.0.0/24", ["sw1"])
    assert [n.mgmt_ip for n in grown.nodes if n.role == "switch"] == ["10.99.0.111"]
    assert [n.name for n in grown.nodes if n.ports] == nodes(5)


@pytest.mark.parametrize(
    "switches,cidr,message",
    [
        (["node1"], "10.99.0.0/24", "node and switch names are not unique"),
        (["Sw1"], "10.99.0.0/24", "switch name 'Sw1' is invalid"),
        (["sw1"], "10.99.0.0/26", "has no room for switches at .111+"),
    ],
)
def test_bad_switches_are_refused(switches: list[str], cidr: str, message: str) -> None:
    with pytest.raises(lab_plan.LabError, match=message):
        lab_plan.make_plan("lab", nodes(3), "mesh", cidr, switches)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_ring_two_ports_each_previous_on_data0_next_on_data1(n: int) -> None:
    plan = lab_plan.make_plan("ring", nodes(n), "ring", "10.99.0.0/24")
    assert len(plan.links) == n
    names = nodes(n)
    for i, node in enumerate(plan.nodes):
        assert node.ports == {names[i - 1]: "data0", names[(i + 1) % n]: "data1"}
        assert sorted(node.macs) == ["data0", "data1"]
    # The wrap cable: node1 data0 to the last node's data1, node1 named first (a).
    assert vars(plan.links[-1]) == {"a": "node1", "a_if": "data0", "b": f"node{n}", "b_if": "data1"}


def test_chain_ends_have_one_port() -> None:
    plan = lab_plan.make_plan("chain", nodes(4), "chain", "10.99.0.0/24")
    assert [n.ports for n in plan.nodes] == [
        {"node2": "data1"},
        {"node1": "data0", "node3": "data1"},
        {"node2": "data0", "node4": "data1"},
        {"node3": "data0"},
    ]


def test_rails_two_cables_listed_in_the_same_order_at_both_ends() -> None:
    plan = lab_plan.make_plan("rails", nodes(2), "rails", "10.99.0.0/24")
    assert [vars(link) for link in plan.links] == [
        {"a": "node1", "a_if": "data0", "b": "node2", "b_if": "data0"},
        {"a": "node1", "a_if": "data1", "b": "node2", "b_if": "data1"},
    ]
    assert [n.ports for n in plan.nodes] == [{"node2": ["data0", "data1"]}, {"node1": ["data0", "data1"]}]
    assert plan.as_dict()["cabled"] is True


@pytest.mark.parametrize("fabric", ["shared", "rails"])
def test_switched_plan_with_several_ports(fabric: str) -> None:
    plan = lab_plan.make_plan(
        "lab", ["node1", "node2", "node3"], "switched", "10.99.0.0/24", ["sw1", "sw2"], 2, fabric
    )
    nodes = [n for n in plan.nodes if n.role == "node"]
    assert all(
        n.ports == {"fabric": ["data0", "data1"]} and sorted(n.macs) == ["data0", "data1"] for n in nodes
    )
    # the first port keeps the one-port lab's names: a lab grown from one port renames nothing
    assert (
        lab_plan.fabric_host_ifname("lab", 2, 0) == "lab-d2"
        and lab_plan.fabric_host_ifname("lab", 2, 1) == "lab-d2b"
    )
    switches = {n.name: n.faces for n in plan.nodes if n.role == "switch"}
    if fabric == "rails":
        assert plan.fabric_bridges() == ["lab-dbr", "lab-dbr1"]
        assert switches == {
            "sw1": [["node1", "data0"], ["node2", "data0"], ["node3", "data0"]],
            "sw2": [["node1", "data1"], ["node2", "data1"], ["node3", "data1"]],
        }
    else:
        assert plan.fabric_bridges() == ["lab-dbr", "lab-dbr"]
        assert (
            switches["sw1"]
            == switches["sw2"]
            == [[f"node{i}", f"data{k}"] for i in (1, 2, 3) for k in (0, 1)]
        )
    assert plan.as_dict()["fabric_bridges"] == plan.fabric_bridges()


def test_fabric_port_names_fit_the_kernel_limit_at_the_largest_lab() -> None:
    names = [
        lab_plan.fabric_host_ifname("abcdefghij", i, k)
        for i in (1, 32)
        for k in range(lab_plan.MAX_FABRIC_PORTS)
    ]
    assert max(len(n) for n in names) <= lab_plan.IFNAMSIZ and len(set(names)) == len(names)
    assert lab_plan.fabric_bridge("abcdefghij", "rails", 7) == "abcdefghij-dbr7"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("mesh", [], 2, "shared"), "fabric ports and rails are for a switched lab"),
        (("switched", [], 9, "shared"), "fabric port count 9 is out of range 1..8"),
        (("switched", [], 2, "leaf"), "fabric 'leaf' is not one of shared, rails"),
        (("switched", ["sw1", "sw2"], 1, "rails"), "2 switches for 1 rails"),
    ],
)
def test_bad_fabrics_are_refused(args: tuple[str, list[str], int, str], message: str) -> None:
    topology, switches, ports, fabric = args
    with pytest.raises(lab_plan.LabError, match=message):
        lab_plan.make_plan("lab", ["node1", "node2"], topology, "10.99.0.0/24", switches, ports, fabric)
