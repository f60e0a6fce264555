"""A switched fabric planned as tasks/validate.yml plans it (cluster phase once, then each node's check), per
scheme: every node's addresses, each NIC's table and source rule, the sysctls, the netplan document, the
mesh_network_fabric export, the paths verify probes and those the apply's rollback probe pings
(plugins/module_utils/mesh/fabric_plan.py, cluster.py, check.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import fabric_plan, host_plan

from ...conftest import FIXTURE_DIR, ROOT
from .conftest import ROLE_SETTINGS, role_phases

RAILS = ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]


def ip_addr(index: int, ports: list[str], max_mtu: int = 9216) -> str:
    """`ip -d -j addr show` of a GPU server: the management port with its address, the RDMA ports."""
    links: list[dict[str, Any]] = [
        {
            "ifindex": 2,
            "ifname": "eno1",
            "address": f"02:00:00:00:00:{index:02x}",
            "max_mtu": 9216,
            "addr_info": [{"family": "inet", "local": f"10.93.0.{10 + index}", "prefixlen": 24}],
        }
    ]
    links += [
        {"ifindex": 3 + k, "ifname": p, "address": f"b8:3f:d2:00:{index:02x}:{k:02x}", "max_mtu": max_mtu}
        for k, p in enumerate(ports)
    ]
    return json.dumps(links)


def inventory(
    n: int = 4, ports: list[Any] | None = None, host: str = "gpu02", **changes: Any
) -> dict[str, Any]:
    """The role's inputs for ``host`` of an n-node switched fabric, each node with ``ports`` in rail order."""
    ports = RAILS if ports is None else ports
    hosts = [f"gpu{i:02d}" for i in range(1, n + 1)]
    names = [p if isinstance(p, str) else p["name"] for p in ports]
    nodes = {
        h: {
            "addr": ip_addr(i, names),
            "route": "[]",
            "netplan": None,
            "netplan_text": "",
            "connect": [f"10.93.0.{10 + i}"],
            "ports": {},
            "fabric_ports": list(ports),
            "fabric_port": "",
        }
        for i, h in enumerate(hosts, start=1)
    }
    params: dict[str, Any] = {
        "host": host,
        "hosts": hosts,
        "topology": "switched",
        "fabric_ports": list(ports),
        **ROLE_SETTINGS,
        "nodes": nodes,
    }
    params.update(changes)
    return params


def planned(**kwargs: Any) -> dict[str, Any]:
    out = role_phases(inventory(**kwargs))
    assert out["errors"] == [], out["errors"]
    return out["plan"]


def refused(**kwargs: Any) -> str:
    out = role_phases(inventory(**kwargs))
    assert out["plan"] == {}
    return "; ".join(out["errors"])


def port(doc: dict[str, Any], ifname: str) -> dict[str, Any]:
    return doc["network"]["ethernets"][ifname]


# --------------------------------------------------------------------------- one port: today's fabric


def render(host: str, plan: dict[str, Any]) -> str:
    """The role's templates/netplan.yaml.j2, rendered by Ansible's own templar."""
    source = (ROOT / "roles/mesh_network/templates/netplan.yaml.j2").read_text()
    variables = {"inventory_hostname": host, "mesh_network_topology": "switched", "mesh_network_plan": plan}
    return str(Templar(loader=DataLoader(), variables=variables).template(trust_as_template(source)))


@pytest.mark.parametrize(
    ("host", "fabric_port"),
    [("node1", "data0"), ("node2", {"name": "data0", "macaddress": "02:00:00:00:02:00"})],
)
def test_one_port_per_node_writes_the_same_file_as_before(host: str, fabric_port: Any) -> None:
    """netplan files main wrote (fixtures/iproute2/SOURCES.md): an upgrade renumbers no switched cluster."""
    hosts = ["node1", "node2", "node3"]
    params = inventory(3, ["data0"], host=host, hosts=hosts, fabric_ports=[], fabric_port=fabric_port)
    params["nodes"] = {
        h: {
            **params["nodes"][f"gpu{i:02d}"],
            "addr": ip_addr(i, ["data0"]).replace("b8:3f:d2:00", "02:00:00:00"),
            "fabric_ports": [],
            "fabric_port": fabric_port if h == host else "data0",
        }
        for i, h in enumerate(hosts, start=1)
    }
    out = role_phases(params)
    assert out["errors"] == []
    plan = out["plan"]
    fixture = FIXTURE_DIR / "iproute2" / f"netplan_{host}_switched3_main.yaml.txt"
    assert render(host, plan) == fixture.read_text()
    assert plan["sysctl"] == [] and plan["socket_ifname"] == "data0" and "rail_peers" not in plan
    assert plan["fabric_rails"] == [
        {
            "rail": 0,
            "name": "rail0",
            "ifname": "data0",
            "address": plan["node_address"],
            "prefix": 24,
            "subnet": "192.168.200.0/24",
            "table": None,
            "gateway": None,
        }
    ]
    # the rollback probe and verify as before: every peer's fabric address over the port, no source
    assert [c["address"] for c in plan["path_checks"]] == list(plan["peers"].values())
    assert all(c["source"] == "" and "rail" not in c for c in plan["path_checks"])
    assert all("source" not in t for t in plan["apply_targets"])


def test_one_port_as_a_one_item_list_is_the_same_fabric() -> None:
    listed = planned(n=3, ports=["ens1f0np0"])
    single = planned(n=3, ports=["ens1f0np0"], fabric_ports=[], fabric_port="ens1f0np0")
    assert listed["netplan"] == single["netplan"] and listed["fabric_rails"] == single["fabric_rails"]


# --------------------------------------------------------------------------- the schemes


def test_rails_is_a_subnet_per_rail_without_tables() -> None:
    plan = planned()  # auto with four ports: rails
    assert [(r["ifname"], r["address"], r["subnet"], r["table"]) for r in plan["fabric_rails"]] == [
        ("ens1f0np0", "192.168.192.2", "192.168.192.0/24", None),
        ("ens1f1np1", "192.168.193.2", "192.168.193.0/24", None),
        ("ens2f0np0", "192.168.194.2", "192.168.194.0/24", None),
        ("ens2f1np1", "192.168.195.2", "192.168.195.0/24", None),
    ]
    assert port(plan["netplan"], "ens2f0np0") == {
        "renderer": "networkd",
        "mtu": 9000,
        "optional": True,
        "link-local": [],
        "addresses": ["192.168.194.2/24"],
    }
    assert plan["node_address"] == "192.168.192.2" and plan["socket_ifname"] == ",".join(RAILS)
    assert plan["rail_peers"]["gpu04"] == ["192.168.192.4", "192.168.193.4", "192.168.194.4", "192.168.195.4"]
    # the ARP settings of a host with several NICs, on every fabric port and no other
    assert plan["sysctl"][:3] == [
        {"name": "net.ipv4.conf.ens1f0np0.arp_ignore", "value": "1"},
        {"name": "net.ipv4.conf.ens1f0np0.arp_announce", "value": "2"},
        {"name": "net.ipv4.conf.ens1f0np0.rp_filter", "value": "2"},
    ]
    assert {s["name"].split(".")[3] for s in plan["sysctl"]} == set(RAILS) and len(plan["sysctl"]) == 12


def test_explicit_rail_subnets_are_used_in_rail_order() -> None:
    subnets = [f"172.20.{i}.0/24" for i in range(4)]
    plan = planned(fabric_scheme="rails", rail_subnets=subnets)
    assert [r["subnet"] for r in plan["fabric_rails"]] == subnets
    assert [r["address"] for r in plan["fabric_rails"]] == [f"172.20.{i}.2" for i in range(4)]


def test_shared_gives_each_nic_a_table_and_a_source_rule() -> None:
    plan = planned(fabric_scheme="shared")
    # node k's NIC i at host k * rails + i + 1: gpu02 (k=1) holds .5 to .8
    assert [r["address"] for r in plan["fabric_rails"]] == [f"192.168.200.{5 + i}" for i in range(4)]
    assert [r["table"] for r in plan["fabric_rails"]] == [100, 101, 102, 103]
    assert port(plan["netplan"], "ens1f1np1") == {
        "renderer": "networkd",
        "mtu": 9000,
        "optional": True,
        "link-local": [],
        "addresses": ["192.168.200.6/24"],
        "routes": [{"to": "192.168.200.0/24", "scope": "link", "table": 101}],
        "routing-policy": [{"from": "192.168.200.6/32", "table": 101, "priority": 101}],
    }
    assert len(plan["sysctl"]) == 12


def test_leaf31_gives_each_nic_a_slash31_to_its_leaf_and_routes_via_it() -> None:
    plan = planned(fabric_scheme="leaf31", fabric_table_base=200)
    # /31 number k * rails + i of the leaf pool: the leaf the first address, the node the second
    assert [(r["address"], r["gateway"], r["subnet"]) for r in plan["fabric_rails"]] == [
        ("10.200.0.9", "10.200.0.8", "10.200.0.8/31"),
        ("10.200.0.11", "10.200.0.10", "10.200.0.10/31"),
        ("10.200.0.13", "10.200.0.12", "10.200.0.12/31"),
        ("10.200.0.15", "10.200.0.14", "10.200.0.14/31"),
    ]
    assert port(plan["netplan"], "ens1f1np1")["routes"] == [
        {"to": "10.200.0.10/31", "scope": "link", "table": 201},
        {"to": "10.200.0.0/16", "via": "10.200.0.10", "table": 201},
    ]
    # rail 0 also routes the leaf routes in the main table: traffic without a bound source stays on the fabric
    assert port(plan["netplan"], "ens1f0np0")["routes"][-1] == {"to": "10.200.0.0/16", "via": "10.200.0.8"}
    assert port(plan["netplan"], "ens2f1np1")["routing-policy"] == [
        {"from": "10.200.0.15/32", "table": 203, "priority": 203}
    ]


def test_leaf31_with_one_port_routes_via_its_leaf_without_arp_settings() -> None:
    plan = planned(
        n=3, ports=["ens1f0np0"], fabric_scheme="leaf31", leaf_routes=["10.200.0.0/16", "10.201.0.0/16"]
    )
    entry = port(plan["netplan"], "ens1f0np0")
    assert entry["addresses"] == ["10.200.0.3/31"] and plan["sysctl"] == []
    assert entry["routes"][-2:] == [
        {"to": "10.200.0.0/16", "via": "10.200.0.2"},
        {"to": "10.201.0.0/16", "via": "10.200.0.2"},
    ]


@pytest.mark.parametrize("scheme", ["shared", "rails", "leaf31"])
def test_every_node_agrees_on_every_address(scheme: str) -> None:
    plans = {h: planned(fabric_scheme=scheme, host=h) for h in ["gpu01", "gpu02", "gpu03", "gpu04"]}
    for host, plan in plans.items():
        own = [r["address"] for r in plan["fabric_rails"]]
        for other, theirs in plans.items():
            if other != host:
                assert theirs["rail_peers"][host] == own
    every = [r["address"] for p in plans.values() for r in p["fabric_rails"]]
    assert len(set(every)) == len(every)


def test_macs_match_the_nics_and_keep_their_names() -> None:
    ports = [{"name": r, "macaddress": f"b8:3f:d2:00:02:{k:02x}"} for k, r in enumerate(RAILS)]
    # one list on every node: the same MACs on four nodes is a host_vars file copied unchanged
    out = role_phases(inventory(ports=ports))
    assert "list the same MAC b8:3f:d2:00:02:00" in "; ".join(out["errors"])
    params = inventory(ports=ports)
    for i, h in enumerate(params["hosts"], start=1):
        params["nodes"][h]["fabric_ports"] = [
            {"name": r, "macaddress": f"b8:3f:d2:00:{i:02x}:{k:02x}"} for k, r in enumerate(RAILS)
        ]
    params["fabric_ports"] = params["nodes"]["gpu02"]["fabric_ports"]
    out = role_phases(params)
    assert out["errors"] == []
    entry = port(out["plan"]["netplan"], "ens2f0np0")
    assert entry["match"] == {"macaddress": "b8:3f:d2:00:02:02"} and entry["set-name"] == "ens2f0np0"


# --------------------------------------------------------------------------- probes


def test_verify_probes_every_peer_on_every_rail_from_that_rails_address() -> None:
    plan = planned(fabric_scheme="shared")
    checks = plan["path_checks"]
    assert len(checks) == 3 * 4
    # gpu01's rail 1 address, from gpu02's own on rail 1, over rail 1's port, DF at the MTU
    second = checks[1]
    assert (second["dst"], second["kind"], second["rail"], second["hops"]) == ("gpu01", "fabric", "rail1", 1)
    assert (second["address"], second["source"]) == ("192.168.200.2", "192.168.200.6")
    assert (second["expected_dev"], second["size"]) == ("ens1f1np1", 8972)


def test_the_rollback_probe_pings_every_peer_on_rail0_and_the_neighbours_on_the_others() -> None:
    plan = planned(n=8, host="gpu04")
    targets = plan["apply_targets"]
    assert targets[0]["name"] == "management path to 10.93.0.1"
    rail0 = [t for t in targets[1:] if t["name"].startswith("gpu04 ens1f0np0 ")]
    assert len(rail0) == 7
    further = sorted({t["name"].split(" -> ")[1].split()[0] for t in targets[1:] if t not in rail0})
    assert further == ["gpu03", "gpu05"]  # the nodes before and after gpu04
    assert all(t["source"] for t in targets[1:]) and len(targets) == 1 + 7 + 3 * 2
    last = planned(n=8, host="gpu08")["apply_targets"]
    assert sorted({t["name"].split(" -> ")[1].split()[0] for t in last if "ens2f1np1" in t["name"]}) == [
        "gpu01",
        "gpu07",
    ]


def test_the_export_holds_the_designs_keys_only() -> None:
    plan = planned()
    assert fabric_plan.export(plan) == plan["fabric_rails"]
    assert list(plan["fabric_rails"][0]) == list(fabric_plan.EXPORT_KEYS)
    assert host_plan.expected_addresses(plan) == [
        {"ifname": r["ifname"], "address": f"{r['address']}/{r['prefix']}"} for r in plan["fabric_rails"]
    ]


# --------------------------------------------------------------------------- refusals


def test_a_node_missing_a_rail_stops_every_node() -> None:
    params = inventory()
    params["nodes"]["gpu03"]["fabric_ports"] = RAILS[:3]
    message = "; ".join(role_phases(params)["errors"])
    assert message.startswith("gpu03: no port for rail3: mesh_network_fabric_ports lists 3")


def test_a_node_outside_the_play_counts_only_when_its_inventory_says() -> None:
    params = inventory()
    del params["nodes"]["gpu04"]  # --limit: gpu04 is not in the play
    assert role_phases(params)["errors"] == []
    params["all_fabric_ports"] = {"gpu04": RAILS[:2]}
    assert "gpu04: no port for rail2, rail3" in "; ".join(role_phases(params)["errors"])


@pytest.mark.parametrize(
    ("rail", "expect"),
    [
        (
            "eno1",
            "gpu02: mesh_network_fabric_ports rail2 is 'eno1', the interface holding 10.93.0.12, the address "
            "Ansible connects to; a data port must not be the management interface",
        ),
        (
            "ens9f0np0",
            "gpu02: mesh_network_fabric_ports rail2 interface 'ens9f0np0' does not exist on this host",
        ),
    ],
)
def test_a_fabric_port_that_is_the_management_port_or_absent_is_named_by_rail(rail: str, expect: str) -> None:
    ports = [*RAILS[:2], rail, RAILS[3]]
    params = inventory()
    params["fabric_ports"] = ports
    params["nodes"]["gpu02"]["fabric_ports"] = ports
    for h in ("gpu01", "gpu03", "gpu04"):
        params["nodes"][h]["fabric_ports"] = ports
    assert expect in "; ".join(role_phases(params)["errors"])


def test_the_one_port_as_management_port_keeps_its_message() -> None:
    params = inventory(3, ["ens1f0np0"], fabric_ports=[], fabric_port="eno1")
    for node in params["nodes"].values():
        node.update(fabric_ports=[], fabric_port="eno1")
    assert "gpu02: mesh_network_fabric_port is 'eno1', the interface holding 10.93.0.12" in "; ".join(
        role_phases(params)["errors"]
    )


def test_each_rail_port_must_carry_the_mtu() -> None:
    params = inventory()
    params["nodes"]["gpu02"]["addr"] = ip_addr(2, RAILS, max_mtu=4200)
    errors = role_phases(params)["errors"]
    assert len(errors) == 4 and errors[1].startswith(
        "gpu02: mesh_network_mtu 9000 is larger than port ens1f1np1's maxmtu 4200"
    )


def test_subnets_are_checked_for_the_whole_fabric_before_any_node() -> None:
    message = refused(fabric_scheme="shared", fabric_subnet="192.168.200.0/28")
    assert "4 nodes x 4 NICs need 16" in message
    assert "overlaps the management network" in refused(fabric_scheme="rails", rail_pool="10.93.0.0/22")


def test_the_rails_example_inventory_plans_as_its_comments_say() -> None:
    """inventories/rails: four servers of four NICs on four leaves; gpu03's ports matched by MAC."""
    where = ROOT / "inventories" / "rails"
    hosts = list(yaml.safe_load((where / "hosts.yml").read_text())["all"]["children"]["cluster"]["hosts"])
    group = yaml.safe_load((where / "group_vars" / "all.yml").read_text())
    own = {
        h: yaml.safe_load(f.read_text()) for h in hosts if (f := where / "host_vars" / f"{h}.yml").exists()
    }
    ports = {h: own.get(h, group)["mesh_network_fabric_ports"] for h in hosts}
    params = inventory(4, group["mesh_network_fabric_ports"], host="gpu02", hosts=hosts)
    params.update(
        mgmt_cidr=group["mesh_network_mgmt_cidr"],
        fabric_scheme=group["mesh_network_fabric_scheme"],
        rail_pool=group["mesh_network_rail_pool"],
        rail_prefix=group["mesh_network_rail_prefix"],
    )
    params["nodes"] = {}
    for i, host in enumerate(hosts, start=1):
        names = [p if isinstance(p, str) else p["name"] for p in ports[host]]
        links = json.loads(ip_addr(i, names).replace("10.93.0.", "172.16.10."))
        for link, spec in zip(links[1:], ports[host], strict=True):
            link["address"] = spec["macaddress"] if isinstance(spec, dict) else link["address"]
        params["nodes"][host] = {
            "addr": json.dumps(links),
            "route": "[]",
            "netplan": None,
            "netplan_text": "",
            "connect": [f"172.16.10.{20 + i}"],
            "fabric_ports": ports[host],
        }
    for host in hosts:
        out = role_phases({**params, "host": host, "fabric_ports": ports[host]})
        assert out["errors"] == [], out["errors"]
        if host == "gpu02":
            assert [r["address"] for r in out["plan"]["fabric_rails"]] == [
                "192.168.192.2",
                "192.168.193.2",
                "192.168.194.2",
                "192.168.195.2",
            ]
        if host == "gpu03":
            assert port(out["plan"]["netplan"], "ens21np0")["match"] == {"macaddress": "b8:3f:d2:a0:32:10"}


def written(params: dict[str, Any]) -> dict[str, Any]:
    """Every node's netplan file as the role wrote it for ``params``, read back by the next run."""
    files = {h: role_phases({**params, "host": h})["plan"]["netplan"] for h in params["hosts"]}
    again = json.loads(json.dumps(params))
    for host, doc in files.items():
        again["nodes"][host]["netplan"] = doc
    return again


def test_addresses_in_use_move_only_when_renumbering_is_asked_for() -> None:
    """The nodes' own files are the record: a new scheme (or host order) would renumber a running fabric."""
    running = written(inventory(fabric_scheme="shared"))
    same = role_phases(running)
    assert same["errors"] == [] and same["plan"]["layout"] == {"kept": 16, "changes": []}
    message = "; ".join(role_phases({**running, "fabric_scheme": "rails"})["errors"])
    assert message.startswith(
        "these addresses in use would change: gpu01 rail0 ens1f0np0 192.168.200.1/24 -> 192.168.192.1/24; "
    )
    assert message.endswith("(run with -e mesh_network_renumber=true to renumber the fabric)")
    reordered = {**running, "hosts": ["gpu02", "gpu01", "gpu03", "gpu04"]}
    assert "gpu02 rail0 ens1f0np0 192.168.200.5/24 -> 192.168.200.1/24" in "; ".join(
        role_phases(reordered)["errors"]
    )
    asked = role_phases({**running, "fabric_scheme": "rails", "renumber": True})
    assert asked["errors"] == [] and asked["plan"]["renumbering"] is True
    # while every node moves at once, only the controller must keep answering the apply
    assert asked["plan"]["apply_targets"] == ["10.93.0.1"]


def test_a_node_appended_keeps_every_address_in_use() -> None:
    running = written(inventory(n=3, host="gpu01"))
    grown = inventory(n=4, host="gpu01")
    for host, node in running["nodes"].items():
        grown["nodes"][host]["netplan"] = node["netplan"]
    out = role_phases(grown)
    assert out["errors"] == [] and out["plan"]["layout"]["kept"] == 12
