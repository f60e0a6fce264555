"""Management-path, duplicate-node and anchored-address rules (plugins/module_utils/mesh/safety.py).

Node facts are real `ip -j` outputs and a netplan file of a converged lab node (fixtures/iproute2).
"""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import data_ports, host_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import safety as ms

from ...conftest import FIXTURE_DIR

FIXTURES = FIXTURE_DIR / "iproute2"
ADDR = (FIXTURES / "ip_addr_node1_mesh.json").read_text()
NO_DEFAULT = (FIXTURES / "ip_route_default_none.json").read_text()
HOST_DEFAULT = (FIXTURES / "ip_route_default_host.json").read_text()
NETPLAN = yaml.safe_load((FIXTURES / "netplan_node1_mesh.yaml.txt").read_text())
IFACES = data_ports.ip_link_interfaces(ADDR)
POOL, PREFIX, NODES = "192.168.100.0/22", 30, "10.255.0.0/24"


def mgmt_errors(
    ports: dict[str, object], route: str = NO_DEFAULT, connect: list[str] | None = None
) -> list[str]:
    return ms.management_errors(
        "node1", "mesh", ports, "", IFACES, ADDR, route, connect or ["10.96.0.11"], "10.96.0.0/24"
    )


def test_real_ports_are_fine() -> None:
    assert mgmt_errors({"node2": "data0", "node3": "data1"}) == []


def test_the_interface_ansible_connects_over_is_refused() -> None:
    assert mgmt_errors({"node2": "mgmt0", "node3": "data1"}) == [
        "node1: port for peer 'node2' is 'mgmt0', the interface holding 10.96.0.11, the address Ansible "
        "connects to; a data port must not be the management interface"
    ]
    # Matched by MAC: the same interface under its MAC.
    by_mac = {"name": "", "macaddress": IFACES["mgmt0"]}
    assert "'mgmt0', the interface holding 10.96.0.11" in mgmt_errors({"node2": by_mac})[0]


def test_the_default_route_interface_is_refused() -> None:
    # The host's default route is via eth0; a node with the same route table and eth0 as a data port.
    ifaces = {**IFACES, "eth0": "02:fc:00:00:00:01"}
    errors = ms.management_errors(
        "node1", "mesh", {"node2": "eth0"}, "", ifaces, ADDR, HOST_DEFAULT, ["10.96.0.11"], "10.96.0.0/24"
    )
    assert errors == [
        "node1: port for peer 'node2' is 'eth0', the interface of the default route; "
        "a data port must not carry the default route"
    ]


def test_a_port_on_the_management_network_is_refused() -> None:
    # Ansible connects by name (no address known): mgmt0 is still caught by its management address.
    errors = mgmt_errors({"node2": "mgmt0"}, connect=["node1.example.org"])
    assert errors == [
        "node1: port for peer 'node2' is 'mgmt0', which has 10.96.0.11 on the management network "
        "10.96.0.0/24; a data port must not be on the management network"
    ]


def test_switched_fabric_port_is_checked_too() -> None:
    errors = ms.management_errors(
        "node1", "switched", {}, "mgmt0", IFACES, ADDR, NO_DEFAULT, ["10.96.0.11"], "10.96.0.0/24"
    )
    assert errors and errors[0].startswith("node1: mesh_network_fabric_port is 'mgmt0'")


def test_management_identity_and_duplicates() -> None:
    ident = ms.management_identity(ADDR, ["10.96.0.11"])
    assert ident == {"ifname": "mgmt0", "address": "10.96.0.11", "macaddress": "62:9b:d4:12:97:e5"}
    assert ms.management_identity(ADDR, ["10.1.2.3"]) == {
        "ifname": "",
        "address": "10.1.2.3",
        "macaddress": "",
    }
    other = {"ifname": "mgmt0", "address": "10.96.0.12", "macaddress": "aa:bb:cc:dd:ee:ff"}
    assert ms.identity_errors({"node1": ident, "node2": other}) == []
    assert ms.identity_errors({"node1": ident, "node2": other, "node9": ident}) == [
        "node1 and node9 have the same management address 10.96.0.11: one node under two inventory names",
        "node1 and node9 have the same management MAC 62:9b:d4:12:97:e5: one node under two inventory names",
    ]


@pytest.mark.parametrize("bad", ["{", '{"a": 1}'])
def test_ip_output_that_is_not_a_list_is_an_error(bad: str) -> None:
    with pytest.raises(ma.MeshAddressingError):
        ms.ip_addresses(bad)


def test_read_netplan_from_the_real_file() -> None:
    assert ms.read_netplan(NETPLAN, "nodeaddr0") == {
        "node_address": "10.255.0.1",
        "links": [
            {
                "ifname": "data0",
                "address": "192.168.100.1",
                "prefix": 30,
                "subnet": "192.168.100.0/30",
                "peer_address": "192.168.100.2",
                "peer_node_address": "10.255.0.2",
                "peer": "",
            },
            {
                "ifname": "data1",
                "address": "192.168.100.5",
                "prefix": 30,
                "subnet": "192.168.100.4/30",
                "peer_address": "192.168.100.6",
                "peer_node_address": "10.255.0.3",
                "peer": "",
            },
        ],
    }
    assert ms.read_netplan(None, "nodeaddr0") == {"node_address": "", "links": []}
    with pytest.raises(ma.MeshAddressingError):
        ms.read_netplan({"nope": 1}, "nodeaddr0")


def existing_for(hosts: list[str]) -> dict[str, dict[str, object]]:
    """What every node's file holds after the role applied the positional plan of ``hosts``."""
    out = {}
    for host in hosts:
        plan = host_plan.host_plan(
            host,
            hosts,
            "mesh",
            ports={p: f"to-{p}" for p in hosts if p != host},
            interfaces={f"to-{p}": "" for p in hosts},
            link_pool=POOL,
            link_prefix=PREFIX,
            node_pool=NODES,
            fabric_subnet="192.168.200.0/24",
            nodeaddr_ifname="nodeaddr0",
        )
        out[host] = ms.read_netplan(host_plan.netplan_document(plan, 9000), "nodeaddr0")
    return out


def addresses(layout: dict[str, object]) -> set[tuple[str, str, str]]:
    """{(host, peer, host's address)} of every link end, and node addresses as (host, '', address)."""
    out = {(h, "", a) for h, a in layout["nodes"].items()}  # type: ignore[attr-defined]
    for link in layout["links"]:  # type: ignore[attr-defined]
        out |= {(link["a"], link["b"], link["a_ip"]), (link["b"], link["a"], link["b_ip"])}
    return out


def test_without_anything_in_use_the_layout_is_the_positional_plan() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    layout = ms.anchored_layout(hosts, {}, POOL, PREFIX, NODES)
    assert layout["links"] == ma.mesh_links(hosts, POOL, PREFIX)
    assert layout["nodes"] == ma.node_addresses(hosts, NODES)
    assert layout["errors"] == [] and layout["kept"] == 0


def test_a_reorder_keeps_every_address() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    before = ms.anchored_layout(hosts, {}, POOL, PREFIX, NODES)
    after = ms.anchored_layout(list(reversed(hosts)), existing_for(hosts), POOL, PREFIX, NODES)
    assert addresses(after) == addresses(before) and after["kept"] == 6 and after["errors"] == []
    # The positional plan of the reversed list would have moved them.
    assert addresses(ms.anchored_layout(list(reversed(hosts)), {}, POOL, PREFIX, NODES)) != addresses(before)


def test_removing_a_middle_node_keeps_the_others() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    before = addresses(ms.anchored_layout(hosts, {}, POOL, PREFIX, NODES))
    rest = ["n1", "n3", "n4"]
    existing = {h: v for h, v in existing_for(hosts).items() if h in rest}
    after = ms.anchored_layout(rest, existing, POOL, PREFIX, NODES)
    assert addresses(after) == {a for a in before if "n2" not in a[:2]}


def test_appending_two_gives_new_subnets_and_keeps_the_rest() -> None:
    first = ["n1", "n2", "n3"]
    # A reorder happened earlier: the numbering in use is not the positional one of the new list.
    existing = existing_for(["n3", "n1", "n2"])
    grown = ms.anchored_layout([*first, "n4", "n5"], existing, POOL, PREFIX, NODES)
    kept = addresses(ms.anchored_layout(["n3", "n1", "n2"], {}, POOL, PREFIX, NODES))
    assert kept <= addresses(grown)
    subnets = [link["subnet"] for link in grown["links"]]
    assert len(subnets) == 10 and len(set(subnets)) == 10
    assert len(set(grown["nodes"].values())) == 5


def test_subnets_of_removed_nodes_stay_reserved_in_the_same_run() -> None:
    hosts = ["n1", "n2", "n3"]
    existing = existing_for(hosts)
    # n2 removed, n9 appended in the same run: n9 must not get n1-n2's subnet still on n1's port.
    layout = ms.anchored_layout(
        ["n1", "n3", "n9"], {"n1": existing["n1"], "n3": existing["n3"]}, POOL, PREFIX, NODES
    )
    old_n1_n2 = next(
        lk["subnet"] for lk in ma.mesh_links(hosts, POOL, PREFIX) if {lk["a"], lk["b"]} == {"n1", "n2"}
    )
    assert old_n1_n2 not in [link["subnet"] for link in layout["links"]]


def test_a_peer_whose_file_was_not_read_is_named_by_the_declared_port() -> None:
    hosts = ["n1", "n2", "n3"]
    existing = existing_for(hosts)
    ports = {"n1": {"n2": "to-n2", "n3": {"name": "to-n3"}}}
    layout = ms.anchored_layout(["n3", "n2", "n1"], {"n1": existing["n1"]}, POOL, PREFIX, NODES, ports=ports)
    before = addresses(ms.anchored_layout(hosts, {}, POOL, PREFIX, NODES))
    assert {a for a in addresses(layout) if "n1" in a[:2]} == {a for a in before if "n1" in a[:2]}


def test_a_new_pool_fails_listing_the_links_unless_renumber() -> None:
    hosts = ["n1", "n2", "n3"]
    layout = ms.anchored_layout(hosts, existing_for(hosts), "192.168.104.0/22", PREFIX, NODES)
    assert len(layout["errors"]) == 1
    assert "n1-n2 192.168.100.0/30 is outside mesh_network_link_pool 192.168.104.0/22" in layout["errors"][0]
    assert "mesh_network_renumber=true" in layout["errors"][0]
    renumbered = ms.anchored_layout(
        hosts, existing_for(hosts), "192.168.104.0/22", PREFIX, NODES, renumber=True
    )
    assert renumbered["errors"] == [] and renumbered["links"] == ma.mesh_links(
        hosts, "192.168.104.0/22", PREFIX
    )
    assert (
        "n1-n2 192.168.100.0/30 -> 192.168.104.0/30 (n1 192.168.100.1 -> 192.168.104.1)"
        in renumbered["changes"]
    )


def test_renumber_of_a_reorder_lists_what_moves() -> None:
    hosts = ["n1", "n2", "n3"]
    layout = ms.anchored_layout(["n3", "n2", "n1"], existing_for(hosts), POOL, PREFIX, NODES, renumber=True)
    assert "n1 node address 10.255.0.1 -> 10.255.0.3" in layout["changes"]
    assert layout["links"] == ma.mesh_links(["n3", "n2", "n1"], POOL, PREFIX)


def test_the_two_ends_disagreeing_is_an_error() -> None:
    hosts = ["n1", "n2"]
    existing = existing_for(hosts)
    existing["n2"]["links"][0]["subnet"] = "192.168.100.4/30"  # type: ignore[index]
    layout = ms.anchored_layout(hosts, existing, POOL, PREFIX, NODES)
    assert layout["errors"] == ["link n1-n2: n2's file has 192.168.100.4/30, the other end 192.168.100.0/30"]


def test_host_plan_uses_the_layout() -> None:
    hosts = ["n1", "n2", "n3"]
    layout = ms.anchored_layout(["n3", "n2", "n1"], existing_for(hosts), POOL, PREFIX, NODES)
    plan = host_plan.host_plan(
        "n1",
        ["n3", "n2", "n1"],
        "mesh",
        ports={"n2": "to-n2", "n3": "to-n3"},
        interfaces={"to-n2": "", "to-n3": ""},
        link_pool=POOL,
        link_prefix=PREFIX,
        node_pool=NODES,
        fabric_subnet="192.168.200.0/24",
        nodeaddr_ifname="nodeaddr0",
        layout=layout,
    )
    assert plan["node_address"] == "10.255.0.1"
    assert {(lk["peer"], lk["address"], lk["subnet"]) for lk in plan["links"]} == {
        ("n2", "192.168.100.1", "192.168.100.0/30"),
        ("n3", "192.168.100.5", "192.168.100.4/30"),
    }
    assert json.dumps(plan)  # plain data for set_fact


def test_the_recorded_peer_wins_over_declared_ports_when_the_peer_file_is_unread() -> None:
    # Only node1 in the play, and its inventory now declares the two ports swapped (crossed cables):
    # the pair subnets stay with the peers recorded in node1's file, so the file changes and the probes
    # of the apply catch the swap (the declared ports alone would have kept the file as it is).
    text = "# rdmaops-mesh-peers: " + json.dumps({"data0": "node2", "data1": "node3"}) + "\n"
    existing = {"node1": ms.read_netplan(NETPLAN, "nodeaddr0", text)}
    assert [link["peer"] for link in existing["node1"]["links"]] == ["node2", "node3"]
    swapped = {"node1": {"node2": "data1", "node3": "data0"}}
    layout = ms.anchored_layout(["node1", "node2", "node3"], existing, POOL, PREFIX, NODES, ports=swapped)
    pair = next(lk for lk in layout["links"] if {lk["a"], lk["b"]} == {"node1", "node2"})
    assert pair["subnet"] == "192.168.100.0/30" and pair["a_ip"] == "192.168.100.1"
    # Without the record, the declared (swapped) ports name the peers.
    bare = {"node1": ms.read_netplan(NETPLAN, "nodeaddr0")}
    layout = ms.anchored_layout(["node1", "node2", "node3"], bare, POOL, PREFIX, NODES, ports=swapped)
    pair = next(lk for lk in layout["links"] if {lk["a"], lk["b"]} == {"node1", "node2"})
    assert pair["subnet"] == "192.168.100.4/30"


def test_a_new_link_prefix_inside_the_pool_says_the_prefix_changes() -> None:
    # issue 39: mesh_network_link_prefix=31 said the /30s were "outside mesh_network_link_pool", which they
    # are not
    hosts = ["n1", "n2", "n3"]
    layout = ms.anchored_layout(hosts, existing_for(hosts), POOL, 31, NODES)
    assert len(layout["errors"]) == 1
    assert (
        "n1-n2 192.168.100.0/30 is a /30 link, mesh_network_link_prefix asks for /31" in layout["errors"][0]
    )
    assert "outside" not in layout["errors"][0] and "mesh_network_renumber=true" in layout["errors"][0]


def test_mgmt_cidr_must_hold_each_nodes_management_address() -> None:
    connect = {"node1": ["10.93.0.11"], "node2": ["node2.example", "10.93.1.12"], "node3": ["node3.example"]}
    assert ms.mgmt_cidr_errors("10.93.0.0/16", connect) == []
    (error,) = ms.mgmt_cidr_errors("10.93.0.0/24", connect)
    # node2 is outside; node3 is known by name only and not judged
    assert "does not contain the management address of node2 (10.93.1.12):" in error
    assert "node1" not in error and "node3" not in error
    # either of a node's addresses will do (ansible_host, the server side of its SSH connection)
    assert ms.mgmt_cidr_errors("10.93.0.0/24", {"node2": ["192.0.2.7", "10.93.0.12"]}) == []
    # a CIDR that does not parse is named by the pool checks, not here
    assert ms.mgmt_cidr_errors("10.93.0.0/33", connect) == []
    assert ms.mgmt_cidr_errors("", connect) == []


def test_unreachable_nodes_are_named_and_limited_ones_are_not() -> None:
    hosts = ["node1", "node2", "node3", "node4"]
    # node4 left out with --limit; node3 in the play without facts
    (error,) = ms.unreachable_errors(hosts, ["node1", "node2", "node3"], ["node1", "node2"])
    assert error.startswith("node3: Ansible cannot reach it in this run")
    (error,) = ms.unreachable_errors(hosts, hosts, ["node1"])
    assert error.startswith("node2, node3, node4: Ansible cannot reach them in this run")
    assert ms.unreachable_errors(hosts, hosts, hosts) == []
