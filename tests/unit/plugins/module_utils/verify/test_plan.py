"""verify_plan: links from mesh plans and rounds of disjoint pairs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import host_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import plan as vp

from ..mesh.conftest import role_phases
from ..mesh.test_fabric_plan import inventory

# The mesh_network role's defaults, given explicitly as the role does.
POOLS: dict[str, Any] = {
    "link_pool": "192.168.100.0/22",
    "link_prefix": 30,
    "node_pool": "10.255.0.0/24",
    "fabric_subnet": "192.168.200.0/24",
    "nodeaddr_ifname": "nodeaddr0",
}


def mesh_plans(hosts: list[str]) -> dict[str, Any]:
    """Real mesh_network plans: node i reaches peer j over port data<j>."""
    plans = {}
    for host in hosts:
        ports = {peer: f"data{k}" for k, peer in enumerate(hosts) if peer != host}
        interfaces = {
            name: f"02:00:00:00:{hosts.index(host):02x}:{k:02x}" for k, name in enumerate(ports.values())
        }
        plans[host] = host_plan.host_plan(host, hosts, "mesh", ports=ports, interfaces=interfaces, **POOLS)
    return plans


def switched_plans(hosts: list[str]) -> dict[str, Any]:
    return {
        h: host_plan.host_plan(
            h, hosts, "switched", fabric_port="fab0", interfaces={"fab0": "02:00:00:00:00:01"}, **POOLS
        )
        for h in hosts
    }


def rails_plans(hosts: list[str], rails: int) -> dict[str, Any]:
    """The switched plans of a shared-scheme fabric (as the fab lab: data0.. per node, 192.168.200.0/24), as
    the mesh_network role's phases make them."""
    params = inventory(len(hosts), [f"data{i}" for i in range(rails)], hosts=hosts, fabric_scheme="shared")
    nodes = params["nodes"]
    params["nodes"] = {h: nodes[f"gpu{i:02d}"] for i, h in enumerate(hosts, start=1)}
    return {h: role_phases({**params, "host": h})["plan"] for h in hosts}


# --------------------------------------------------------------------------- rounds


@pytest.mark.parametrize("n", range(2, 10))
def test_tournament_covers_every_pair_once_without_sharing_a_host(n: int) -> None:
    hosts = [f"n{i}" for i in range(n)]
    rounds = vp.tournament_rounds(hosts)
    pairs = [frozenset(p) for rnd in rounds for p in rnd]
    assert sorted(map(sorted, pairs)) == sorted(map(sorted, map(frozenset, itertools.combinations(hosts, 2))))
    assert len(set(pairs)) == len(pairs)
    for rnd in rounds:
        used = [h for p in rnd for h in p]
        assert len(used) == len(set(used))
    # Optimal: n-1 rounds of n/2 pairs for even n, n rounds of (n-1)/2 for odd n.
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert all(len(rnd) == n // 2 for rnd in rounds)


def test_ring_rounds_are_optimal_and_disjoint() -> None:
    for n, expected_rounds in ((2, 1), (3, 3), (4, 2), (5, 3), (6, 2)):
        hosts = [f"n{i}" for i in range(n)]
        plans = mesh_plans(hosts)
        links = vp.links(plans, hosts, "ring")
        assert len(links) == (1 if n == 2 else n)
        rounds = vp.schedule(links, hosts, "ring", "one")
        assert len(rounds) == expected_rounds
        for rnd in rounds:
            used = [h for m in rnd for h in (m["client"], m["server"])]
            assert len(used) == len(set(used))


def test_schedule_both_directions_and_concurrency_cap() -> None:
    hosts = ["a", "b", "c", "d"]
    links = vp.links(mesh_plans(hosts), hosts)
    rounds = vp.schedule(links, hosts, "all_pairs", "both")
    assert len(rounds) == 6
    directed = [(m["client"], m["server"]) for rnd in rounds for m in rnd]
    assert sorted(directed) == sorted(itertools.permutations(hosts, 2))
    # Each round is followed by its mirror image.
    assert [(m["server"], m["client"]) for m in rounds[1]] == [(m["client"], m["server"]) for m in rounds[0]]
    capped = vp.schedule(links, hosts, "all_pairs", "one", max_concurrent=1)
    assert len(capped) == 6 and all(len(r) == 1 for r in capped)


def test_schedule_uses_link_addresses_and_ports() -> None:
    hosts = ["node1", "node2", "node3"]
    plans = mesh_plans(hosts)
    links = vp.links(plans, hosts)
    first = vp.schedule(links, hosts, "all_pairs", "both")[0][0]
    link = next(x for x in plans[first["client"]]["links"] if x["peer"] == first["server"])
    assert first["client_address"] == link["address"]
    assert first["server_address"] == link["peer_address"]
    assert first["client_ifname"] == link["ifname"]
    assert (
        first["label"]
        == f"{first['client']}:{first['client_ifname']} -> {first['server']}:{first['server_ifname']}"
    )
    assert first["link"].count("<->") == 1


def test_switched_links_use_fabric_addresses() -> None:
    hosts = ["s1", "s2", "s3"]
    plans = switched_plans(hosts)
    links = vp.links(plans, hosts)
    assert [(x["a"], x["b"]) for x in links] == [("s1", "s2"), ("s1", "s3"), ("s2", "s3")]
    assert links[0]["a_address"] == plans["s1"]["node_address"]
    assert links[0]["a_ifname"] == "fab0"


def test_parts_in_round() -> None:
    hosts = ["a", "b", "c"]
    rnd = vp.schedule(vp.links(mesh_plans(hosts), hosts), hosts, "all_pairs", "one")[0]
    roles = {h: [part["role"] for part in vp.parts_in_round(rnd, h)] for h in hosts}
    assert sorted(roles.values()) == [[], ["client"], ["server"]]


def test_switched_rails_are_measured_at_once_each_nic_against_its_rail() -> None:
    hosts = ["node1", "node2", "node3"]
    plans = rails_plans(hosts, 2)
    links = vp.links(plans, hosts)
    assert [(x["label"], x["k"], x["rail"]) for x in links[:2]] == [
        ("node1:data0 <-> node2:data0", 0, "rail0"),
        ("node1:data1 <-> node2:data1", 1, "rail1"),
    ]
    assert (links[1]["a_address"], links[1]["b_address"]) == ("192.168.200.2", "192.168.200.4")
    rounds = vp.schedule(links, hosts, "all_pairs", "both")
    # 3 nodes: 3 rounds of one pair, each both ways; a round measures the pair on both rails at once
    assert len(rounds) == 6 and all(len(rnd) == 2 for rnd in rounds)
    k = next(i for i, rnd in enumerate(rounds) if rnd[0]["label"] == "node1:data0 -> node2:data0")
    assert [(m["label"], m["rail"], m["port_offset"]) for m in rounds[k]] == [
        ("node1:data0 -> node2:data0", "rail0", 0),
        ("node1:data1 -> node2:data1", "rail1", 2),
    ]
    assert [m["label"] for m in rounds[k + 1]] == ["node2:data0 -> node1:data0", "node2:data1 -> node1:data1"]
    rdma = [
        {"device": "mlx5_1", "port": 1, "netdev": "data1", "active": True},
        {"device": "mlx5_0", "port": 1, "netdev": "data0", "active": True},
    ]
    parts = vp.parts_in_round(rounds[k], "node1", rdma, 5201)
    assert [(p["role"], p["ifname"], p["port"], p["latency_port"], p["rdma"]["device"]) for p in parts] == [
        ("client", "data0", 5201, 5202, "mlx5_0"),
        ("client", "data1", 5203, 5204, "mlx5_1"),
    ]
    server = vp.parts_in_round(rounds[k], "node2", [], 5201)
    assert [(p["role"], p["ifname"], p["port"], p["rdma"]) for p in server] == [
        ("server", "data0", 5201, {}),
        ("server", "data1", 5203, {}),
    ]
    assert vp.parts_in_round(rounds[k], "node3") == []
    # every directed NIC pair once; no NIC in two measurements of a round
    directed = [m["label"] for rnd in rounds for m in rnd]
    assert len(directed) == len(set(directed)) == 3 * 2 * 2
    for rnd in rounds:
        nics = [f"{m[e]}:{m[e + '_ifname']}" for m in rnd for e in ("client", "server")]
        assert len(nics) == len(set(nics))
    ring = vp.schedule(vp.links(plans, hosts, "ring"), hosts, "ring", "one")
    assert [len(rnd) for rnd in ring] == [2, 2, 2]


def test_a_pair_with_different_rail_counts_is_named() -> None:
    plans = rails_plans(["a", "b"], 2)
    plans["b"]["rails"] = plans["b"]["rails"][:1]
    with pytest.raises(vp.VerifyError, match="a has 2 rails and b 1"):
        vp.links(plans, ["a", "b"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: vp.links({}, ["a", "b"]), "no mesh_network plan for a, b"),
        (lambda: vp.links({}, ["a", "a"]), "host 'a' appears twice"),
        (lambda: vp.links(mesh_plans(["a", "b"]), ["a", "b"], "star"), "pattern 'star'"),
        (lambda: vp.schedule([], ["a", "b"], "all_pairs", "sideways"), "directions 'sideways'"),
        (lambda: vp.schedule([], ["a", "b"], "all_pairs", "one", -1), "max_concurrent -1"),
        (lambda: vp.schedule([], ["a", "b"], "all_pairs", "one", "x"), "max_concurrent 'x'"),
    ],
)
def test_bad_plan_input_names_the_value(call: Any, message: str) -> None:
    with pytest.raises(vp.VerifyError, match=message):
        call()


def test_rdma_port_for_takes_the_ports_own_device_else_the_first_active() -> None:
    ports = [
        {"device": "mlx5_0", "port": 1, "netdev": "ens1", "active": False},
        {"device": "mlx5_1", "port": 1, "netdev": "ens2", "active": True},
    ]
    assert vp.rdma_port_for(ports, "ens1")["device"] == "mlx5_0"
    # a port without an RDMA device of its own (TCP over a veth): the first active one
    assert vp.rdma_port_for(ports, "data0")["device"] == "mlx5_1"
    assert vp.rdma_port_for([], "data0") == {}
    assert vp.rdma_port_for(None, "data0") == {}
