"""One node's plan and its netplan document (plugins/module_utils/mesh/host_plan.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import data_ports, host_plan

from .conftest import IFACES, PLAN_ARGS, mesh_plans


def test_host_plans_agree_between_the_two_ends() -> None:
    plans = mesh_plans(4)
    for host, plan in plans.items():
        assert plan["socket_ifname"] == "nodeaddr0"
        for link in plan["links"]:  # type: ignore[attr-defined]
            other = next(x for x in plans[link["peer"]]["links"] if x["peer"] == host)  # type: ignore[attr-defined]
            assert other["subnet"] == link["subnet"]
            assert (other["address"], other["peer_address"]) == (link["peer_address"], link["address"])
            assert link["peer_node_address"] == plans[link["peer"]]["node_address"]


def test_host_plan_rejects_unknown_host_and_bad_ports() -> None:
    with pytest.raises(ma.MeshAddressingError, match="host 'x' is not in the host list"):
        host_plan.host_plan("x", ["a", "b"], "mesh", ports={}, interfaces={}, **PLAN_ARGS)
    with pytest.raises(ma.MeshAddressingError, match="mesh_network_ports is empty: no cable joins a"):
        host_plan.host_plan("a", ["a", "b"], "mesh", ports={}, interfaces={}, **PLAN_ARGS)
    # The other end lists the cable, this one does not.
    with pytest.raises(ma.MeshAddressingError, match="a: mesh_network_ports has no port for peer 'c'"):
        host_plan.host_plan(
            "a",
            ["a", "b", "c"],
            "mesh",
            ports={"b": "eth1"},
            all_ports={"b": {"a": "eth1", "c": "eth2"}, "c": {"a": "eth1", "b": "eth2"}},
            interfaces={"eth1": ""},
            **PLAN_ARGS,
        )


def test_netplan_document_mesh() -> None:
    plan = mesh_plans(3)["node1"]
    doc = host_plan.netplan_document(plan, 9000)["network"]
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
    plan = host_plan.host_plan(
        "n1",
        ["n1", "n2"],
        "switched",
        fabric_port={"macaddress": "5c:25:73:00:00:10"},
        interfaces=ifaces,
        **PLAN_ARGS,
    )
    assert plan["socket_ifname"] == "enp1s0f0np0" and plan["node_address"] == "192.168.200.1"
    doc = host_plan.netplan_document(plan, 1500)["network"]
    port = doc["ethernets"]["enp1s0f0np0"]
    assert port["match"] == {"macaddress": "5c:25:73:00:00:10"} and port["set-name"] == "enp1s0f0np0"
    assert port["addresses"] == ["192.168.200.1/24"] and port["mtu"] == 1500
    assert "bridges" not in doc


@pytest.mark.parametrize("mtu", ["jumbo", 100, 10000])
def test_netplan_document_bad_mtu(mtu: object) -> None:
    with pytest.raises(ma.MeshAddressingError, match=f"mtu {mtu!r}"):
        host_plan.netplan_document(mesh_plans(2)["node1"], mtu)


def test_netplan_document_applies_the_mtu_rule() -> None:
    # One rule: the role's validate step and the renderer reject the same values with the same words.
    with pytest.raises(ma.MeshAddressingError) as info:
        host_plan.netplan_document(mesh_plans(2)["node1"], "65000")
    assert [str(info.value)] == data_ports.mtu_errors("65000", "mtu")
