"""Backup routes: which neighbour carries them, the way round, a ring's transit tables and rules
(plugins/module_utils/mesh/backup.py, cabling.Graph.backup_*)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import backup, cabling


def ring(n: int) -> cabling.Graph:
    hosts = [f"node{i}" for i in range(1, n + 1)]
    cables = [
        {"a": hosts[i], "b": hosts[(i + 1) % n], "k": 0, "a_port": "data1", "b_port": "data0"}
        for i in range(n)
    ]
    return cabling.Graph(hosts, cables)


def test_a_ring_backs_every_destination_up_over_the_other_neighbour_the_long_way() -> None:
    graph = ring(5)
    assert graph.backup_kind() == "ring"
    # node1's neighbours are node2 and node5: node3 is reached by node2, so its backup goes by node5
    assert graph.next_hop("node1", "node3") == "node2"
    assert graph.backup_hops("node1") == {
        "node2": "node5",
        "node5": "node2",
        "node3": "node5",
        "node4": "node2",
    }
    assert graph.backup_paths("node1") == {
        "node2": ["node1", "node5", "node4", "node3", "node2"],
        "node5": ["node1", "node2", "node3", "node4", "node5"],
        "node3": ["node1", "node5", "node4", "node3"],
        "node4": ["node1", "node2", "node3", "node4"],
    }


def test_a_chain_or_two_nodes_have_no_backup() -> None:
    chain = cabling.Graph(
        ["node1", "node2", "node3"],
        [
            {"a": "node1", "b": "node2", "k": 0, "a_port": "data1", "b_port": "data0"},
            {"a": "node2", "b": "node3", "k": 0, "a_port": "data1", "b_port": "data0"},
        ],
    )
    assert chain.shape() == "chain" and chain.backup_kind() == "" and chain.backup_paths("node1") == {}
    two = cabling.Graph(["node1", "node2"], cabling.full_mesh_cables(["node1", "node2"]))
    assert two.backup_kind() == "" and two.backup_hops("node1") == {}


def test_the_transit_tables_route_the_node_addresses_on_or_back() -> None:
    tables = backup.ring_tables(["node2", "node4"])
    assert tables == {"node2": 210, "node4": 211}
    # over the cable to node4: on for what came from node2 (210), back (metric 100) for what came from node4
    assert backup.transit_routes("node4", tables, ["10.255.0.0/29"]) == [
        {"to": "10.255.0.0/29", "table": 210},
        {"to": "10.255.0.0/29", "table": 211, "metric": 100},
    ]
    links = [{"ifname": "data1", "peer": "node2"}, {"ifname": "data0", "peer": "node4"}]
    rules = backup.transit_rules(links, tables)
    assert rules == [
        {"iif": "data1", "table": 210, "priority": 210},
        {"iif": "data0", "table": 211, "priority": 211},
    ]
    text = backup.dropin("node1", rules)
    assert text.startswith("# Managed by rdmaops.cluster.mesh_network: node1's ring transit rules")
    assert "[RoutingPolicyRule]\nIncomingInterface=data0\nTable=211\nPriority=211\n" in text
    assert backup.dropin("node1", []) == ""


def test_the_tables_cover_the_node_addresses_with_one_prefix_unless_a_cable_is_inside() -> None:
    nodes = {"node1": "10.255.0.1", "node2": "10.255.0.2", "node3": "10.255.0.9"}
    assert backup.transit_prefixes(nodes, ["192.168.100.0/30"]) == ["10.255.0.0/28"]
    # addresses from a layout whose smallest common prefix holds a cable's subnet: each address alone
    assert backup.transit_prefixes(nodes, ["10.255.0.4/30"]) == [
        "10.255.0.1/32",
        "10.255.0.2/32",
        "10.255.0.9/32",
    ]


def test_a_ring_node_accepts_its_own_source_back() -> None:
    names = {x["name"]: x["value"] for x in backup.sysctl(["data0"], False, "ring")}
    assert names == {
        "net.ipv4.conf.data0.forwarding": "1",
        "net.ipv4.conf.data0.rp_filter": "2",
        "net.ipv4.conf.data0.ignore_routes_with_linkdown": "1",
        "net.ipv4.conf.data0.accept_local": "1",
    }
    assert "net.ipv4.conf.data0.accept_local" not in {
        x["name"] for x in backup.sysctl(["data0"], False, "full_mesh")
    }
    assert backup.sysctl(["data0"], False, "") == []
