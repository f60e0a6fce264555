"""The cabling graph (plugins/module_utils/mesh/cabling.py) and the addresses and routes it gives.

Port maps are written the way inventories write them: each node maps a peer to its port, or to a list of
ports (rails); a peer without a cable is left out.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from netaddr import IPNetwork

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling, host_plan, reachability

POOL, PREFIX, NODES = "192.168.100.0/22", 30, "10.255.0.0/24"
PLAN_ARGS = {
    "link_pool": POOL,
    "link_prefix": PREFIX,
    "node_pool": NODES,
    "fabric_subnet": "192.168.200.0/24",
    "nodeaddr_ifname": "nodeaddr0",
}


def names(n: int) -> list[str]:
    return [f"node{i}" for i in range(1, n + 1)]


def ring(n: int) -> dict[str, dict[str, Any]]:
    """The lab's ring: node i's data0 faces node i-1, data1 faces node i+1 (wrapping)."""
    hosts = names(n)
    return {h: {hosts[i - 1]: "data0", hosts[(i + 1) % n]: "data1"} for i, h in enumerate(hosts)}


def chain(n: int) -> dict[str, dict[str, Any]]:
    ports = ring(n)
    first, last = "node1", f"node{n}"
    del ports[first][last], ports[last][first]
    return ports


def full_mesh(n: int) -> dict[str, dict[str, Any]]:
    """The lab's full mesh: node i reaches peer j through data<j-1> below i and data<j-2> above."""
    hosts = names(n)
    return {
        h: {p: f"data{j if j < i else j - 1}" for j, p in enumerate(hosts) if p != h}
        for i, h in enumerate(hosts)
    }


def graph(ports: dict[str, Any], hosts: list[str] | None = None) -> cabling.Graph:
    hosts = hosts or list(ports)
    cable_list, errors = cabling.cables(hosts, ports)
    assert errors == []
    return cabling.Graph(hosts, cable_list)


def ring_hops(i: int, j: int, n: int) -> int:
    return min(abs(i - j), n - abs(i - j))


@pytest.mark.parametrize("n", range(4, 17))
def test_rings_of_4_to_16_nodes(n: int) -> None:
    hosts = names(n)
    g = graph(ring(n))
    assert len(g.cables) == n and g.shape() == "ring" and g.max_cables() == 1
    assert cabling.connectivity_errors(g) == []
    # Along the ring from node1, towards its neighbour that comes first in the host list (node2).
    assert g.order() == hosts
    assert cabling.node_order(hosts, ring(n)) == hosts
    for i, j in itertools.permutations(range(n), 2):
        src, dst = hosts[i], hosts[j]
        assert g.hops(src, dst) == ring_hops(i, j, n)
        path = g.path(src, dst)
        assert path[0] == src and path[-1] == dst and len(path) == g.hops(src, dst) + 1
        # Every step of the route is a cable.
        assert all(path[k + 1] in g.neighbours[path[k]] for k in range(len(path) - 1))
        # Routes are consistent: the next hop's own route continues the same path.
        assert g.path(path[1], dst) == path[1:]
    # Every node but the two ends of a line forwards in a ring of 5 or more.
    assert set(g.transit()) == (set(hosts) if n > 4 else {"node1", "node2"})
    # The ring's subnets are the full mesh's for the same pairs: a ring grown into a mesh renumbers nothing.
    by_pair = {(x["a"], x["b"]): x for x in ma.mesh_links(hosts, "10.64.0.0/16", PREFIX)}
    for link in ma.mesh_links(hosts, "10.64.0.0/16", PREFIX, ring(n)):
        assert link["subnet"] == by_pair[(link["a"], link["b"])]["subnet"]


@pytest.mark.parametrize("n", [4, 6])
def test_ring_host_plans_route_every_node_address_along_the_ring(n: int) -> None:
    hosts = names(n)
    plans = {
        h: host_plan.host_plan(
            h,
            hosts,
            "mesh",
            ports=ring(n)[h],
            all_ports=ring(n),
            interfaces={"data0": "", "data1": ""},
            **PLAN_ARGS,
        )
        for h in hosts
    }
    for h, plan in plans.items():
        routed = [target for link in plan["links"] for target in link["routes"]]
        assert sorted(routed) == sorted(p for p in hosts if p != h)  # every other node, once
        for link in plan["links"]:
            assert link["routes"][0] == link["peer"]  # the peer's own route first (read back by safety)
            for target in link["routes"]:
                assert plan["paths"][target][1] == link["peer"]
        doc = host_plan.netplan_document(plan, 9000)["network"]["ethernets"]
        assert sum(len(entry["routes"]) for entry in doc.values()) == n - 1
        checks = reachability.path_checks(plan, 9000)
        assert [c["dst"] for c in checks if c["kind"] == "node"] == [p for p in hosts if p != h]
        assert {c["hops"] for c in checks if c["kind"] == "node"} == set(range(1, n // 2 + 1))
        # The apply's rollback probe keeps to the node's own cables.
        assert {t["address"] for t in reachability.check_targets([], plan, 9000)} == {
            c["address"] for c in checks if c["hops"] == 1
        }
    assert plans["node3"]["forwarding"] == ["data0", "data1"] if n > 4 else plans["node3"]["forwarding"] == []


@pytest.mark.parametrize("n", range(3, 9))
def test_chains(n: int) -> None:
    hosts = names(n)
    g = graph(chain(n))
    assert g.shape() == "chain" and len(g.cables) == n - 1
    assert g.order() == hosts
    assert g.hops("node1", f"node{n}") == n - 1
    assert g.transit() == hosts[1:-1]
    # A host list that starts in the middle of the chain: the order starts at the end that comes first.
    middle_first = [hosts[1], hosts[0], *hosts[2:]]
    assert cabling.node_order(middle_first, chain(n)) == hosts


def test_rails_two_nodes_two_cables() -> None:
    ports = {"node1": {"node2": ["data0", "data1"]}, "node2": {"node1": ["data0", "data1"]}}
    g = graph(ports)
    assert [(c["a_port"], c["b_port"], c["k"]) for c in g.cables] == [
        ("data0", "data0", 0),
        ("data1", "data1", 1),
    ]
    assert g.shape() == "full_mesh" and g.max_cables() == 2 and g.transit() == []
    links = ma.mesh_links(["node1", "node2"], POOL, PREFIX, ports)
    # The first cable keeps the pair's subnet, the second one comes from the top of the pool.
    assert [x["subnet"] for x in links] == ["192.168.100.0/30", "192.168.103.252/30"]
    plan = host_plan.host_plan(
        "node1",
        ["node1", "node2"],
        "mesh",
        ports=ports["node1"],
        all_ports=ports,
        interfaces={"data0": "", "data1": ""},
        **PLAN_ARGS,
    )
    assert [(x["ifname"], x["k"], x["routes"], x["address"]) for x in plan["links"]] == [
        ("data0", 0, ["node2"], "192.168.100.1"),
        ("data1", 1, [], "192.168.103.253"),
    ]
    ethernets = host_plan.netplan_document(plan, 9000)["network"]["ethernets"]
    assert "routes" in ethernets["data0"] and "routes" not in ethernets["data1"]
    assert [(c["kind"], c["expected_dev"]) for c in reachability.path_checks(plan, 9000)] == [
        ("link", "data0"),
        ("link", "data1"),
        ("node", "data0"),
    ]


def test_a_cable_listed_by_one_end_only_is_named() -> None:
    ports = ring(4)
    del ports["node3"]["node2"]
    _cables, errors = cabling.cables(names(4), ports)
    assert errors == [
        "node3: mesh_network_ports has no port for peer 'node2', but node2 lists node3 on data1 "
        "(both ends list every cable)"
    ]


def test_ends_listing_a_different_number_of_cables_are_named() -> None:
    ports = {"node1": {"node2": ["data0", "data1"]}, "node2": {"node1": "data0"}}
    _cables, errors = cabling.cables(["node1", "node2"], ports)
    assert errors == [
        "node1 lists 2 cable(s) to node2 (data0, data1), node2 lists 1 to node1 (data0): "
        "both ends list every cable"
    ]


def test_a_disconnected_graph_is_refused_naming_the_groups() -> None:
    ports = {
        "node1": {"node2": "data0"},
        "node2": {"node1": "data0"},
        "node3": {"node4": "data0"},
        "node4": {"node3": "data0"},
    }
    g = graph(ports)
    assert cabling.connectivity_errors(g) == [
        "the cabling is not connected: no cable joins the groups node1, node2 | node3, node4 "
        "(every node must reach every other over the data cables)"
    ]
    assert g.hops("node1", "node3") is None and g.path("node1", "node3") == []
    assert g.shape() == "partial"


def test_a_node_with_more_ports_than_peers() -> None:
    # A 3-node chain of two-port nodes: the ends leave a port unused, the middle one has two cables to node3.
    ports = {
        "node1": {"node2": "data0"},
        "node2": {"node1": "data0", "node3": ["data1", "data2"]},
        "node3": {"node2": ["data0", "data1"]},
    }
    hosts = ["node1", "node2", "node3"]
    g = graph(ports)
    assert g.shape() == "chain" and g.max_cables() == 2 and g.transit() == ["node2"]
    end = host_plan.host_plan(
        "node1",
        hosts,
        "mesh",
        ports=ports["node1"],
        all_ports=ports,
        interfaces={"data0": "", "data1": ""},
        **PLAN_ARGS,
    )
    # The unused port gets nothing; node3's node address is routed through node2 over the one cable.
    assert [x["ifname"] for x in end["links"]] == ["data0"]
    assert end["links"][0]["routes"] == ["node2", "node3"] and end["hops"] == {"node2": 1, "node3": 2}
    middle = host_plan.host_plan(
        "node2",
        hosts,
        "mesh",
        ports=ports["node2"],
        all_ports=ports,
        interfaces={"data0": "", "data1": "", "data2": ""},
        **PLAN_ARGS,
    )
    assert [(x["peer"], x["ifname"], x["k"]) for x in middle["links"]] == [
        ("node1", "data0", 0),
        ("node3", "data1", 0),
        ("node3", "data2", 1),
    ]
    assert middle["forwarding"] == ["data0", "data1", "data2"]


@pytest.mark.parametrize("n", range(2, 9))
def test_full_mesh_inventories_get_identical_addresses(n: int) -> None:
    hosts = names(n)
    assert ma.mesh_links(hosts, POOL, PREFIX, full_mesh(n)) == [
        {
            **link,
            "a_port": full_mesh(n)[link["a"]][link["b"]],
            "b_port": full_mesh(n)[link["b"]][link["a"]],
            "k": 0,
        }
        for link in ma.mesh_links(hosts, POOL, PREFIX)
    ]
    g = graph(full_mesh(n))
    assert g.shape() == "full_mesh" and g.order() == hosts and g.transit() == []
    interfaces = {f"data{k}": "" for k in range(n - 1)}
    for h in hosts:
        legacy = host_plan.host_plan(
            h, hosts, "mesh", ports=full_mesh(n)[h], interfaces=interfaces, **PLAN_ARGS
        )
        plan = host_plan.host_plan(
            h,
            hosts,
            "mesh",
            ports=full_mesh(n)[h],
            all_ports=full_mesh(n),
            interfaces=interfaces,
            **PLAN_ARGS,
        )
        assert host_plan.netplan_document(plan, 9000) == host_plan.netplan_document(legacy, 9000)
        # One route per cable, to the peer: exactly the netplan a full mesh had.
        assert all(link["routes"] == [link["peer"]] for link in plan["links"])


def test_a_cut_cable_cuts_the_pairs_routed_over_it() -> None:
    g = graph(ring(4))
    cable = g.cables_between("node1", "node2")[0]
    # Ties between the two ways round go to the neighbour first in the host list (node2 -> node4 via node1).
    assert g.cut_by(cable) == [
        ("node1", "node2"),
        ("node1", "node3"),
        ("node2", "node1"),
        ("node2", "node4"),
        ("node3", "node1"),
        ("node4", "node2"),
    ]


def test_a_ring_with_a_chord_still_orders_along_a_cycle() -> None:
    ports = ring(6)
    ports["node1"]["node4"] = "data2"
    ports["node4"]["node1"] = "data2"
    g = graph(ports)
    order = g.order()
    assert g.shape() == "partial" and order[0] == "node1" and sorted(order) == names(6)
    assert all(order[(k + 1) % 6] in g.neighbours[order[k]] for k in range(6))
    assert g.hops("node1", "node4") == 1


def test_nccl_device_index_rule() -> None:
    # Rails: every device faces the peer.
    rails = graph({"node1": {"node2": ["p0", "p1"]}, "node2": {"node1": ["p0", "p1"]}})
    assert cabling.device_index_problems(rails, rails.shape(), rails.order()) == []
    # A directed ring (each node's port 0 to the next node's port 1): one end always faces the other.
    hosts = names(4)
    directed = {h: {hosts[(i + 1) % 4]: "p0", hosts[i - 1]: "p1"} for i, h in enumerate(hosts)}
    g = graph(directed)
    assert cabling.device_index_problems(g, g.shape(), g.order()) == []
    # The lab's 3-node mesh numbers ports by peer: node1 and node2 both use device 1 towards node3, node2 and
    # node3 both use device 0 towards node1.
    mesh = graph(full_mesh(3))
    assert cabling.device_index_problems(mesh, mesh.shape(), mesh.order()) == [
        "node1-node2 device 1: node1 data1 faces node3, node2 data1 faces node3",
        "node2-node3 device 0: node2 data0 faces node1, node3 data0 faces node1",
    ]


def test_subnets_never_overlap_for_rails_and_rings() -> None:
    ports = ring(5)
    ports["node1"]["node2"] = ["data1", "data2"]
    ports["node2"]["node1"] = ["data0", "data2"]
    links = ma.mesh_links(names(5), POOL, PREFIX, ports)
    nets = [IPNetwork(x["subnet"]) for x in links]
    assert len(nets) == 6 and all(
        a.last < b.first or b.last < a.first for a, b in itertools.combinations(nets, 2)
    )


def test_a_pool_too_small_for_the_cables_is_named() -> None:
    with pytest.raises(ma.MeshAddressingError, match=r"pool 192.168.100.0/29 is too small: it holds 2 /30"):
        ma.mesh_links(names(4), "192.168.100.0/29", 30, ring(4))


def cabled_along(walk: list[str], port_of: Any = None) -> dict[str, dict[str, Any]]:
    """The port map of a ring cabled along ``walk`` (not the host list): each node's data0 faces the node
    before it on the walk, data1 the node after it; ``port_of(name)`` gives the map's value."""
    n = len(walk)
    port_of = port_of or (lambda name: name)
    return {
        h: {walk[i - 1]: port_of("data0"), walk[(i + 1) % n]: port_of("data1")} for i, h in enumerate(walk)
    }


@pytest.mark.parametrize("n", range(4, 17))
def test_rings_cabled_out_of_host_order_are_ordered_along_the_cables(n: int) -> None:
    hosts = names(n)
    walk = hosts[::2] + hosts[1::2][::-1]  # node1 node3 node5 ... node6 node4 node2: a ring for any n
    g = graph(cabled_along(walk), hosts)
    assert g.shape() == "ring" and cabling.connectivity_errors(g) == []
    # From node1 towards its neighbour first in the host list (node2), i.e. the walk backwards.
    assert g.order() == [walk[0], *walk[1:][::-1]] == cabling.node_order(hosts, cabled_along(walk))
    position = {h: i for i, h in enumerate(walk)}
    for src, dst in itertools.permutations(hosts, 2):
        assert g.hops(src, dst) == ring_hops(position[src], position[dst], n)
    # Ranks along the order: NCCL's ring joins only nodes that share a cable, the last and the first too.
    assert cabling.nccl_pairs(g, g.shape(), g.order()) == [
        (g.order()[k], g.order()[(k + 1) % n]) for k in range(n)
    ]


def test_a_ring_of_rails_routes_over_cable_0_and_uses_every_cable() -> None:
    hosts = names(4)
    ports = cabled_along(hosts, lambda name: [name, f"{name}b"])  # two cables to each neighbour
    g = graph(ports)
    assert g.shape() == "ring" and g.max_cables() == 2 and len(g.cables) == 8 and g.order() == hosts
    assert [c["k"] for c in g.path_cables("node1", "node3")] == [0, 0]
    links = ma.mesh_links(hosts, POOL, PREFIX, ports)
    assert len(links) == 8 and len({x["subnet"] for x in links}) == 8
    plan = host_plan.host_plan(
        "node1",
        hosts,
        "mesh",
        ports=ports["node1"],
        all_ports=ports,
        interfaces={"data0": "", "data0b": "", "data1": "", "data1b": ""},
        **PLAN_ARGS,
    )
    # node3 (two hops) is routed over the first cable to node2, the neighbour first in the host list.
    routes = {x["ifname"]: x["routes"] for x in plan["links"]}
    assert routes == {"data1": ["node2", "node3"], "data1b": [], "data0": ["node4"], "data0b": []}


def test_a_node_without_any_cable_is_named_in_its_own_group() -> None:
    ports = {"node1": {"node2": "data0"}, "node2": {"node1": "data0"}, "node3": {}}
    g = graph(ports, names(3))
    assert cabling.connectivity_errors(g) == [
        "the cabling is not connected: no cable joins the groups node1, node2 | node3 "
        "(every node must reach every other over the data cables)"
    ]


def test_the_order_search_gives_up_in_bounded_time_where_no_path_passes_every_node() -> None:
    # Every one of 7 nodes cabled to every one of 9 others, none among themselves (K7,9): no path through all
    # 16 nodes exists, and a search without a bound would try them all.
    hosts = names(16)
    left, right = hosts[:7], hosts[7:]
    ports: dict[str, dict[str, Any]] = {h: {} for h in hosts}
    for a in left:
        for k, b in enumerate(right):
            ports[a][b] = f"p{k}"
            ports[b][a] = f"p{left.index(a)}"
    g = graph(ports)
    order = g.order()
    # Breadth-first from node1: node1, its 9 neighbours, then the other 6 of its side.
    assert order == ["node1", *right, *left[1:]]
    assert g.shape() == "partial" and cabling.connectivity_errors(g) == []


@pytest.mark.parametrize(
    "ports",
    [
        ring(9),
        chain(6),
        full_mesh(5),
        # a partial mesh with ties: node1 reaches node4 over node2 or node3, the first in host order wins
        {
            "node1": {"node2": "d0", "node3": "d1"},
            "node2": {"node1": "d0", "node4": "d1", "node5": "d2"},
            "node3": {"node1": "d0", "node4": "d1"},
            "node4": {"node2": "d0", "node3": "d1"},
            "node5": {"node2": "d0"},
        },
    ],
    ids=["ring9", "chain6", "mesh5", "partial"],
)
def test_next_hops_computed_once_per_node_are_the_shortest_paths_first_neighbour(
    ports: dict[str, Any],
) -> None:
    """Each node's next hops come from one pass over its distances (cluster.py plans every node from them):
    the neighbour, first in host order, one hop closer; transit nodes are the insides of every path."""
    g = graph(ports)
    for src in g.hosts:
        for dst in g.hosts:
            far = g.hops(src, dst)
            want = None if not far else next(p for p in g.neighbours[src] if g.hops(p, dst) == far - 1)
            assert g.next_hop(src, dst) == want
            path = g.path(src, dst)
            assert len(path) == (far or 0) + 1 and path[0] == src and path[-1] == dst
    every = g.paths()
    assert every == {s: {d: g.path(s, d) for d in g.hosts if d != s} for s in g.hosts}
    inside = {h for s in g.hosts for d in g.hosts for h in g.path(s, d)[1:-1]}
    assert g.transit() == [h for h in g.hosts if h in inside]
