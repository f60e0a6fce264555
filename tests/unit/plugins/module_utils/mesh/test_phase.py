"""The mesh_network role's two check phases as tasks/validate.yml runs them: the cluster phase once
(plugins/module_utils/mesh/cluster.py, action mesh_network_plan), then each node's check
(plugins/module_utils/mesh/phase.py, action mesh_network_check).

What the nodes report is `ip -j addr show` / `ip -j route show default` in iproute2's JSON (the keys a real
node prints: ifname, address, addr_info with family and local), as tasks/interfaces.yml hands it over.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.rdmaops.cluster.plugins.action.mesh_network_check import ActionModule
from ansible_collections.rdmaops.cluster.plugins.action.mesh_network_plan import ActionModule as PlanAction
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cluster, data_ports, host_plan

from ...conftest import FIXTURE_DIR, ROOT, run_action
from .conftest import ROLE_SETTINGS, cluster_args, node_args, role_phases


def ip_addr(index: int, ports: list[str], extra: dict[str, str] | None = None) -> str:
    """`ip -j addr show` of a lab node: lo, mgmt0 with its management address, the data ports."""
    links: list[dict[str, Any]] = [
        {
            "ifindex": 1,
            "ifname": "lo",
            "address": "00:00:00:00:00:00",
            "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}],
        },
        {
            "ifindex": 2,
            "ifname": "mgmt0",
            "address": f"02:00:00:00:00:{index:02x}",
            "addr_info": [{"family": "inet", "local": f"10.93.0.{10 + index}", "prefixlen": 24}],
        },
    ]
    for k, port in enumerate(ports):
        address = (extra or {}).get(port)
        info = [{"family": "inet", "local": address, "prefixlen": 24}] if address else []
        links.append(
            {
                "ifindex": 3 + k,
                "ifname": port,
                "address": f"02:00:00:00:{index:02x}:{k:02x}",
                "addr_info": info,
            }
        )
    return json.dumps(links)


def inventory(port_map: dict[str, dict[str, Any]], /, **changes: Any) -> dict[str, Any]:
    """The arguments validate.yml passes for the first host, every node of ``port_map`` in the play."""
    ports = port_map
    hosts = list(ports)
    nodes = {}
    for i, h in enumerate(hosts, start=1):
        names = sorted(
            {p for v in ports[h].values() for p in (v if isinstance(v, list) else [v])} | {"data0", "data1"}
        )
        nodes[h] = {
            "addr": ip_addr(i, names),
            "route": "[]",
            "netplan": None,
            "netplan_text": "",
            "connect": [f"10.93.0.{10 + i}"],
            "ports": ports[h],
        }
    params = {
        "host": hosts[0],
        "hosts": hosts,
        "topology": "mesh",
        "ports": ports[hosts[0]],
        "all_ports": ports,
        "fabric_port": "",
        **ROLE_SETTINGS,
        "nodes": nodes,
    }
    params.update(changes)
    return params


def lab_mesh(n: int) -> dict[str, dict[str, Any]]:
    hosts = [f"node{i}" for i in range(1, n + 1)]
    return {
        h: {p: f"data{j if j < i else j - 1}" for j, p in enumerate(hosts) if p != h}
        for i, h in enumerate(hosts)
    }


def lab_ring(n: int) -> dict[str, dict[str, Any]]:
    hosts = [f"node{i}" for i in range(1, n + 1)]
    return {h: {hosts[i - 1]: "data0", hosts[(i + 1) % n]: "data1"} for i, h in enumerate(hosts)}


def test_a_full_mesh_gets_the_same_addresses_and_netplan_as_before() -> None:
    out = role_phases(inventory(lab_mesh(3)))
    assert out["errors"] == []
    plan = out["plan"]
    legacy = host_plan.host_plan(
        "node1",
        ["node1", "node2", "node3"],
        "mesh",
        ports=lab_mesh(3)["node1"],
        interfaces=data_ports.ip_link_interfaces(ip_addr(1, ["data0", "data1"])),
        link_pool="192.168.100.0/22",
        link_prefix=30,
        node_pool="10.255.0.0/24",
        fabric_subnet="192.168.200.0/24",
        nodeaddr_ifname="nodeaddr0",
        backups=True,
    )
    assert plan["netplan"] == host_plan.netplan_document(legacy, 9000)
    assert [(x["ifname"], x["address"], x["peer_address"]) for x in plan["links"]] == [
        ("data0", "192.168.100.1", "192.168.100.2"),
        ("data1", "192.168.100.5", "192.168.100.6"),
    ]
    # a full mesh of 3: backup routes, so every data port forwards (backup.py)
    assert plan["forwarding"] == ["data0", "data1"] and plan["renumbering"] is False
    assert plan["apply_targets"][0] == {
        "address": "10.93.0.1",
        "size": 0,
        "name": "management path to 10.93.0.1",
    }
    cabling = out["cluster"]["cabling"]
    assert cabling["shape"] == "full_mesh" and cabling["order"] == ["node1", "node2", "node3"]
    assert plan["mgmt_identity"] == {
        "ifname": "mgmt0",
        "address": "10.93.0.11",
        "macaddress": "02:00:00:00:00:01",
    }


def test_a_ring_plans_routes_hops_and_the_cabling_summary() -> None:
    out = role_phases(inventory(lab_ring(4)))
    assert out["errors"] == []
    plan, cabling = out["plan"], out["cluster"]["cabling"]
    assert cabling["shape"] == "ring" and cabling["order"] == ["node1", "node2", "node3", "node4"]
    assert cabling["non_neighbours"] and cabling["max_hops"] == 2 and cabling["link_prefix"] == 30
    assert cabling["transit"] == ["node1", "node2"] and plan["forwarding"] == ["data1", "data0"]
    assert plan["hops"] == {"node2": 1, "node3": 2, "node4": 1}
    routes = plan["netplan"]["network"]["ethernets"]["data1"]["routes"]
    assert [r["to"] for r in routes if "metric" not in r and "table" not in r] == [
        "10.255.0.2/32",
        "10.255.0.3/32",
    ]


def test_a_ring_routes_every_node_address_the_long_way_round_too() -> None:
    """node1's data0 faces node4, data1 node2 (lab_ring). Its backups go the other way round; what arrives
    from node2 is looked up in table 210, from node4 in 211 (host order): on to the other neighbour, or back
    (metric 100) while that cable is out."""
    out = role_phases(inventory(lab_ring(4)))
    assert out["errors"] == [] and out["cluster"]["cabling"]["backup"] == "ring"
    plan = out["plan"]
    doc = plan["netplan"]["network"]["ethernets"]
    own, pool = "10.255.0.1", "10.255.0.0/29"
    to2, to4 = doc["data1"]["routes"][0]["via"], doc["data0"]["routes"][0]["via"]
    assert doc["data1"]["routes"] == [
        {"to": "10.255.0.2/32", "via": to2, "from": own},
        {"to": "10.255.0.3/32", "via": to2, "from": own},
        {"to": "10.255.0.4/32", "via": to2, "from": own, "metric": 100},
        {"to": pool, "via": to2, "table": 210, "metric": 100},
        {"to": pool, "via": to2, "table": 211},
    ]
    assert doc["data0"]["routes"] == [
        {"to": "10.255.0.4/32", "via": to4, "from": own},
        {"to": "10.255.0.2/32", "via": to4, "from": own, "metric": 100},
        {"to": "10.255.0.3/32", "via": to4, "from": own, "metric": 100},
        {"to": pool, "via": to4, "table": 210},
        {"to": pool, "via": to4, "table": 211, "metric": 100},
    ]
    dropin = plan["networkd_dropin"]
    assert (
        dropin["path"] == "/etc/systemd/network/10-netplan-nodeaddr0.network.d/60-rdmaops-ring-transit.conf"
    )
    sections = [block.splitlines() for block in dropin["content"].split("\n\n")[1:]]
    assert sections == [
        ["[RoutingPolicyRule]", "IncomingInterface=data1", "Table=210", "Priority=210"],
        ["[RoutingPolicyRule]", "IncomingInterface=data0", "Table=211", "Priority=211"],
    ]
    sysctl = {x["name"]: x["value"] for x in plan["sysctl"]}
    assert (
        sysctl["net.ipv4.conf.data0.accept_local"] == "1" and sysctl["net.ipv4.conf.data1.rp_filter"] == "2"
    )
    # verify's DEGRADED names the way round: node3 (two cables away) the other way, node2 (a neighbour) 3 hops
    assert plan["backup_paths"] == {
        "node2": ["node1", "node4", "node3", "node2"],
        "node3": ["node1", "node4", "node3"],
        "node4": ["node1", "node2", "node3", "node4"],
    }
    # the option off: the ring as before, no tables, no drop-in (the role removes one left behind)
    off = role_phases(inventory(lab_ring(4), backup_routes=False))["plan"]
    assert off["networkd_dropin"]["content"] == "" and off["backup_paths"] == {}
    assert all(
        "table" not in r and "metric" not in r
        for e in off["netplan"]["network"]["ethernets"].values()
        for r in e["routes"]
    )


def error_of(params: dict[str, Any]) -> str:
    out = role_phases(params)
    assert out["plan"] == {}
    return "; ".join(dict.fromkeys(out["errors"]))


def with_port(ports: dict[str, Any], host: str, peer: str, value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(ports))
    if value is None:
        del copy[host][peer]
    else:
        copy[host][peer] = value
    return copy


# The cases of tests/bad_inventories/cases.yml, with the message each must name.
@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        ({"ports": {"node2": "enp9s9f9np9", "node3": "data1"}}, "interface 'enp9s9f9np9' does not exist"),
        ({"ports": {"node2": "data0", "node3": "data0"}}, "is used for both 'node2' and 'node3'"),
        (
            {"ports": {"node2": {"macaddress": "02:00:5e:00:53:01"}, "node3": "data1"}},
            "macaddress '02:00:5e:00:53:01' is not on any interface",
        ),
        (
            {"link_pool": "192.168.100.0/22", "node_pool": "192.168.101.0/24"},
            "mesh_network_link_pool 192.168.100.0/22 overlaps mesh_network_node_pool 192.168.101.0/24",
        ),
        ({"link_pool": "10.93.0.0/24"}, "overlaps the management network"),
        ({"link_prefix": 32}, "prefix 32 is too long"),
        ({"link_pool": "192.168.100.0/29"}, "pool 192.168.100.0/29 is too small"),
        ({"hosts": ["node1", "node2", "node3", "node1"]}, "duplicate host 'node1'"),
        ({"mtu": 65000}, "mesh_network_mtu '65000'"),
        (
            {"ports": {"node2": "mgmt0", "node3": "data1"}},
            "node1: port for peer 'node2' is 'mgmt0', the interface holding 10.93.0.11, "
            "the address Ansible connects to",
        ),
    ],
)
def test_the_bad_inventories_are_refused_naming_the_value(edit: dict[str, Any], expect: str) -> None:
    assert expect in error_of(inventory(lab_mesh(3), **edit))


def test_a_pool_that_is_no_cidr_is_named_once() -> None:
    message = error_of(inventory(lab_mesh(3), link_pool="192.168.300.0/22"))
    assert "mesh_network_link_pool '192.168.300.0/22' is not a valid CIDR" in message
    assert message.count("'192.168.300.0/22'") == 1


def test_a_port_deleted_at_one_end_names_the_missing_peer() -> None:
    ports = with_port(lab_mesh(3), "node1", "node3", None)
    message = error_of(inventory(ports, ports=ports["node1"]))
    assert "node1: mesh_network_ports has no port for peer 'node3', but node3 lists node1 on data0" in message


def test_one_node_under_two_names_is_refused() -> None:
    params = inventory(lab_mesh(3))
    params["nodes"]["node2"]["addr"] = params["nodes"]["node1"]["addr"]
    params["nodes"]["node2"]["connect"] = ["10.93.0.11"]
    assert "node1 and node2 have the same management address 10.93.0.11" in error_of(params)


def test_a_node_ansible_cannot_reach_stops_every_node() -> None:
    params = inventory(lab_mesh(3))
    # node3 is in the play but did not report (unreachable at fact gathering)
    params["play_hosts"] = ["node1", "node2", "node3"]
    del params["nodes"]["node3"]
    message = error_of(params)
    assert "node3: Ansible cannot reach it in this run" in message
    assert "so no node is changed" in message and "-e mesh_network_allow_unreachable=true" in message
    # the operator who means it: the plan goes on without node3, and says so
    params["allow_unreachable"] = True
    once = cluster.plan(cluster_args(params))
    assert once["errors"] == [] and once["plan"]["unreachable"] == ["node3"]
    # a node left out with --limit is not in the play: not asked for
    params.update(play_hosts=["node1", "node2"], allow_unreachable=False)
    once = cluster.plan(cluster_args(params))
    assert once["errors"] == [] and once["plan"]["unreachable"] == []


def test_a_management_cidr_without_the_nodes_addresses_is_refused() -> None:
    params = inventory(lab_mesh(3), mgmt_cidr="10.200.0.0/24")
    message = error_of(params)
    connect = {h: params["nodes"][h]["connect"][0] for h in ("node1", "node2", "node3")}
    assert (
        "mesh_network_mgmt_cidr 10.200.0.0/24 does not contain the management address of "
        f"node1 ({connect['node1']}), node2 ({connect['node2']}), node3 ({connect['node3']})"
    ) in message


def test_a_disconnected_cabling_is_refused() -> None:
    ports = {
        "node1": {"node2": "data0"},
        "node2": {"node1": "data0"},
        "node3": {"node4": "data0"},
        "node4": {"node3": "data0"},
    }
    assert "the cabling is not connected" in error_of(inventory(ports))


def test_addresses_in_use_are_kept_when_the_list_is_reordered() -> None:
    first = inventory(lab_mesh(3))
    plans = {h: role_phases({**first, "host": h, "ports": lab_mesh(3)[h]})["plan"] for h in lab_mesh(3)}
    reordered = inventory({h: lab_mesh(3)[h] for h in ["node3", "node2", "node1"]})
    for h, plan in plans.items():
        # What the role wrote: the netplan document and the peers comment, read back on the next run.
        node = reordered["nodes"][h]
        node["netplan"] = plan["netplan"]
        node["netplan_text"] = "# rdmaops-mesh-peers: " + json.dumps(
            {x["ifname"]: x["peer"] for x in plan["links"]}
        )
    again = role_phases({**reordered, "host": "node1", "ports": lab_mesh(3)["node1"]})
    assert again["errors"] == [] and again["plan"]["layout"]["kept"] == 3
    assert again["plan"]["netplan"] == plans["node1"]["netplan"]


def test_the_actions_fail_with_every_error_in_one_message() -> None:
    bad = inventory(lab_mesh(3), mtu=65000, link_prefix=32)
    out = run_action(PlanAction, cluster_args(bad), check_mode=True)
    assert out["failed"] is True and out["plan"] == {}
    assert "mesh_network_mtu '65000' must be an integer in 1280..9216" in out["msg"]
    assert "prefix 32 is too long" in out["msg"]
    good = inventory(lab_mesh(3))
    once = run_action(PlanAction, cluster_args(good), check_mode=True)
    assert not once.get("failed") and once["changed"] is False
    ok = run_action(ActionModule, node_args(good, once["plan"]), check_mode=True)
    assert not ok.get("failed") and ok["plan"]["node_address"] == "10.255.0.1" and ok["changed"] is False
    wrong = node_args({**good, "ports": {"node2": "enp9s9f9np9", "node3": "data1"}}, once["plan"])
    refused = run_action(ActionModule, wrong, check_mode=True)
    assert refused["failed"] is True and "interface 'enp9s9f9np9' does not exist" in refused["msg"]


FIXTURES = FIXTURE_DIR / "iproute2"


def render(host: str, plan: dict[str, Any]) -> str:
    """The role's templates/netplan.yaml.j2, rendered by Ansible's own templar."""
    source = (ROOT / "roles/mesh_network/templates/netplan.yaml.j2").read_text()
    templar = Templar(
        loader=DataLoader(),
        variables={
            "inventory_hostname": host,
            "mesh_network_topology": "mesh",
            "mesh_network_plan": plan,
        },
    )
    return str(templar.template(trust_as_template(source)))


@pytest.mark.parametrize("host", ["node1", "node2", "node3"])
def test_the_3_node_lab_gets_byte_identical_netplan_files(host: str) -> None:
    """Without backup routes a mesh renders exactly as before they existed (the recorded files)."""
    params = inventory(lab_mesh(3), backup_routes=False)
    out = role_phases({**params, "host": host, "ports": lab_mesh(3)[host]})
    assert out["errors"] == []
    assert render(host, out["plan"]) == (FIXTURES / f"netplan_{host}_mesh3_main.yaml.txt").read_text()


def test_a_full_mesh_of_3_routes_every_node_address_a_second_way() -> None:
    hosts = ["node1", "node2", "node3"]
    plans = {h: role_phases({**inventory(lab_mesh(3)), "host": h, "ports": lab_mesh(3)[h]}) for h in hosts}
    assert all(p["errors"] == [] for p in plans.values())
    assert plans["node1"]["cluster"]["cabling"]["backup"] == "full_mesh"
    doc = plans["node2"]["plan"]["netplan"]["network"]["ethernets"]
    # node2's data0 faces node1, data1 node3: node3's backup goes via node1, node1's via node3 (the next node
    # in host order that is not the destination), metric 100, after the direct route
    assert doc["data0"]["routes"] == [
        {"to": "10.255.0.1/32", "via": "192.168.100.1", "from": "10.255.0.2"},
        {"to": "10.255.0.3/32", "via": "192.168.100.1", "from": "10.255.0.2", "metric": 100},
    ]
    assert doc["data1"]["routes"] == [
        {"to": "10.255.0.3/32", "via": "192.168.100.10", "from": "10.255.0.2"},
        {"to": "10.255.0.1/32", "via": "192.168.100.10", "from": "10.255.0.2", "metric": 100},
    ]
    sysctl = {x["name"]: x["value"] for x in plans["node2"]["plan"]["sysctl"]}
    assert sysctl == {
        f"net.ipv4.conf.{port}.{key}": value
        for port in ("data0", "data1")
        for key, value in (("forwarding", "1"), ("rp_filter", "2"), ("ignore_routes_with_linkdown", "1"))
    }
    # two nodes have no other path, nor has a ring here: no backups, nothing forwards that need not
    two = role_phases(inventory(lab_mesh(2)))
    assert two["cluster"]["cabling"]["backup"] == "" and two["plan"]["sysctl"] == []
    assert all(
        "metric" not in r
        for e in two["plan"]["netplan"]["network"]["ethernets"].values()
        for r in e["routes"]
    )


def test_the_mtu_is_checked_against_each_data_ports_maxmtu() -> None:
    """tasks/interfaces.yml reads `ip -d -j addr show`: each link's max_mtu (the lab's veths: 65535)."""
    real = (FIXTURES / "ip_d_addr_node1_mesh.json").read_text()
    args = inventory(lab_mesh(3))
    args["nodes"]["node1"]["addr"] = real
    assert role_phases(args)["errors"] == []
    smaller = json.loads(real)
    for link in smaller:
        if link["ifname"] == "data1":
            link["max_mtu"] = 1500  # a NIC without jumbo frames
    args["nodes"]["node1"]["addr"] = json.dumps(smaller)
    assert role_phases(args)["errors"] == [
        "node1: mesh_network_mtu 9000 is larger than port data1's maxmtu 1500 (`ip -d link show data1`): "
        "lower mesh_network_mtu or use ports that carry it"
    ]
