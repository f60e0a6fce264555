"""The lab role's check: its settings, root on the local machine, the network plan and a free management CIDR,
and an inventory directory the lab may write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import phase
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import plan as lab_plan

from ...conftest import FIXTURE_DIR

# `ip -j addr show` on a lab node (mgmt0 10.96.0.11/24): the host of another instance sees such addresses
NODE_ADDRESSES = json.loads((FIXTURE_DIR / "iproute2/ip_addr_node1_mesh.json").read_text())


def _check(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "state": "present",
        "crash_nodes": [],
        "name": "misc",
        "nodes": 3,
        "topology": "mesh",
        "node_prefix": "node",
        "switches": [],
        "fabric_ports": 1,
        "fabric": "shared",
        "mgmt_cidr": "10.94.0.0/24",
        "inventory_dir": "inventories/misc",
        "inventory_path": "/work/inventories/misc",
        "inventory_text": None,
        "cache_dir": "/var/lib/rdmaops-lab",
        "run_dir": "/run/rdmaops-lab",
        "uid": "0",
        "connection": "local",
        "host_addresses": NODE_ADDRESSES,
        "code_root": None,
    }
    args.update(over)
    return phase.check(args)


def test_plans_the_network_as_lab_fabric_does() -> None:
    out = _check()
    assert out["errors"] == []
    wanted = lab_plan.make_plan("misc", ["node1", "node2", "node3"], "mesh", "10.94.0.0/24").as_dict()
    assert out["plan"] == {"network": wanted, "code_digest": None}
    switched = _check(topology="switched", switches=["sw1"], nodes="2")["plan"]["network"]
    assert [n["name"] for n in switched["nodes"]] == ["node1", "node2", "sw1"]
    ring = _check(topology="ring", nodes="4")["plan"]["network"]
    assert ring["nodes"][0]["ports"] == {"node2": "data1", "node4": "data0"}


def test_absent_and_crashed_plan_no_network() -> None:
    assert _check(state="absent", host_addresses=[]) == {
        "errors": [],
        "plan": {"network": None, "code_digest": None},
    }
    # a string from -e lab_crash_nodes=node9 is checked by lab_crash, which names the node
    assert _check(state="crashed", crash_nodes="node9")["errors"] == []


@pytest.mark.parametrize(
    ("over", "wanted"),
    [
        ({"state": "gone"}, "lab_state=gone: use present, absent or crashed"),
        (
            {"state": "crashed"},
            "lab_state=crashed needs the nodes to crash: -e '{\"lab_crash_nodes\": "
            "[\"node2\"]}'",
        ),
        (
            {"name": "bad-name"},
            "lab_name=bad-name: use 1-10 of [a-z0-9], a letter first, no '-' (it separates "
            "the instance prefix)",
        ),
        ({"nodes": 99}, "lab_nodes=99: use a whole number from 1 to 32"),
        ({"nodes": "three"}, "lab_nodes=three: use a whole number from 1 to 32"),
        ({"topology": "torus"}, "lab_topology=torus: use mesh, switched, ring, chain or rails"),
        ({"topology": "ring", "nodes": "2"}, "lab_topology=ring takes lab_nodes of 3 or more (got 2)"),
        ({"topology": "chain", "nodes": "1"}, "lab_topology=chain takes lab_nodes of 2 or more (got 1)"),
        ({"topology": "rails", "nodes": "3"}, "lab_topology=rails takes lab_nodes=2 (two nodes"),
        ({"node_prefix": "Node"}, "lab_node_prefix=Node: use 1-12 of [a-z0-9], a letter first"),
        (
            {"mgmt_cidr": "10.94.0.0"},
            "lab_mgmt_cidr=10.94.0.0: use an IPv4 network in CIDR notation, e.g. 10.99.0.0/24",
        ),
        ({"inventory_dir": ""}, "lab_inventory_dir=: use a directory path"),
        ({"run_dir": "run"}, "lab_cache_dir=/var/lib/rdmaops-lab, lab_run_dir=run: use absolute paths"),
        ({"uid": "1000"}, "The lab is built on the local machine by root (uid now 1000)."),
        ({"connection": "ssh"}, "The lab is built on the local machine by root (uid now 0)."),
        ({"mgmt_cidr": "10.94.0.5/24"}, "management CIDR '10.94.0.5/24' is not an IPv4 network"),
        (
            {"mgmt_cidr": "10.96.0.0/16"},
            "management CIDR 10.96.0.0/16 overlaps 10.96.0.11/24 on host interface mgmt0 "
            "(another lab instance or a real network): choose another lab_mgmt_cidr",
        ),
        (
            {"inventory_text": "all:\n  hosts: {}\n"},
            "/work/inventories/misc/hosts.yml was not written by the lab; set "
            "lab_inventory_dir to another directory (lab_name=misc writes inventories/misc "
            "by default).",
        ),
    ],
)  # fmt: skip
def test_names_each_bad_value(over: dict[str, Any], wanted: str) -> None:
    errors = _check(**over)["errors"]
    assert any(e.startswith(wanted) for e in errors), errors


def test_the_own_bridge_and_an_inventory_the_lab_wrote_are_fine() -> None:
    own = [{"ifname": "misc-mbr", "addr_info": [{"family": "inet", "local": "10.94.0.1", "prefixlen": 24}]}]
    text = "# Generated by rdmaops.cluster.lab (lab_name=misc): edits are lost\nall: {}\n"
    assert _check(host_addresses=own, inventory_text=text)["errors"] == []


def test_bad_settings_are_all_named_and_no_plan_is_tried() -> None:
    out = _check(name="Bad", nodes=0, uid="1000")
    assert len(out["errors"]) == 3 and out["plan"]["network"] is None


def test_digests_the_lab_code_for_present(tmp_path: Path) -> None:
    for part in ("roles/lab/tasks", "plugins"):
        (tmp_path / part).mkdir(parents=True)
        (tmp_path / part / "main.yml").write_text(part)
    first = _check(code_root=str(tmp_path))["plan"]["code_digest"]
    assert len(first) == 64
    (tmp_path / "plugins" / "main.yml").write_text("changed")
    assert _check(code_root=str(tmp_path))["plan"]["code_digest"] != first
    assert _check(code_root=str(tmp_path / "nowhere"))["errors"][0].startswith("source_digest:")


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"topology": "switched", "fabric_ports": 9}, "lab_fabric_ports=9: use a whole number from 1 to 8"),
        (
            {"topology": "switched", "fabric_ports": "two"},
            "lab_fabric_ports=two: use a whole number from 1 to 8",
        ),
        ({"topology": "switched", "fabric": "leaf"}, "lab_fabric=leaf: use shared or rails"),
        ({"fabric_ports": 2}, "lab_fabric_ports=2 and lab_fabric=shared are for lab_topology=switched"),
        (
            {"topology": "switched", "fabric_ports": 2, "fabric": "rails", "switches": ["sw1", "sw2", "sw3"]},
            "3 switches for 2 rails: one switch per rail at the most",
        ),
    ],
)
def test_fabric_settings_are_checked(over: dict[str, Any], message: str) -> None:
    assert any(message in e for e in _check(**over)["errors"]), _check(**over)["errors"]


def test_a_switched_lab_with_two_rails_plans_them() -> None:
    out = _check(topology="switched", fabric_ports="2", fabric="rails", switches=["sw1", "sw2"])
    assert out["errors"] == []
    net = out["plan"]["network"]
    assert (net["fabric_ports"], net["fabric"], net["fabric_bridges"]) == (
        2,
        "rails",
        ["misc-dbr", "misc-dbr1"],
    )
