"""A node's data ports and the MTU rules (plugins/module_utils/mesh/data_ports.py)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import data_ports

from .conftest import IFACES, IPROUTE2


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
        data_ports.ip_link_interfaces(text)


def test_port_errors_good_mesh_by_name_and_mac() -> None:
    ifaces = IFACES
    ports = {"n2": "enp1s0f0np0", "n3": {"macaddress": "5c:25:73:00:00:11"}}
    assert data_ports.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, ifaces) == []
    # A peer without a cable (ring, chain) is no error here; whether both ends agree is the graph's check.
    assert data_ports.port_errors("n1", ["n1", "n2", "n3"], "mesh", {"n2": "enp1s0f0np0"}, None, ifaces) == []
    # Two cables to one peer (rails).
    rails = {"n2": ["enp1s0f0np0", {"macaddress": "5c:25:73:00:00:11"}]}
    assert data_ports.port_errors("n1", ["n1", "n2"], "mesh", rails, None, ifaces) == []


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
    errs = data_ports.port_errors("n1", ["n1", "n2", "n3"], "mesh", ports, None, IFACES)
    assert any(needle in e for e in errs), errs


def test_port_errors_switched() -> None:
    ifaces = IFACES
    assert data_ports.port_errors("n1", ["n1", "n2"], "switched", {}, "enp1s0f0np0", ifaces) == []
    assert "'ens9'" in data_ports.port_errors("n1", ["n1", "n2"], "switched", {}, "ens9", ifaces)[0]
    assert (
        "fabric_port is not set" in data_ports.port_errors("n1", ["n1", "n2"], "switched", {}, "", ifaces)[0]
    )
    assert "'ring'" in data_ports.port_errors("n1", ["n1", "n2"], "ring", {}, "", ifaces)[0]


@pytest.mark.parametrize("mtu", [1280, 9000, 9216, "9000"])
def test_mtu_errors_accepts_whole_numbers_in_range(mtu: object) -> None:
    assert data_ports.mtu_errors(mtu, "mtu") == []


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
    assert data_ports.mtu_errors(mtu, "mesh_network_mtu") == [message]


IP_DETAILS = IPROUTE2 / "ip_d_addr_node1_mesh.json"


def test_the_mtu_is_checked_against_each_ports_maxmtu() -> None:
    text = IP_DETAILS.read_text()
    # veths carry up to 65535
    assert data_ports.port_mtu_errors("node1", 9000, text, ["data0", "data1"]) == []
    # the same node with data1 on a NIC that carries at most 1500 (max_mtu as the kernel reports it)
    links = json.loads(text)
    next(lk for lk in links if lk["ifname"] == "data1")["max_mtu"] = 1500
    assert data_ports.port_mtu_errors("node1", "9000", links, ["data0", "data1"]) == [
        "node1: mesh_network_mtu 9000 is larger than port data1's maxmtu 1500 (`ip -d link show "
        "data1`): lower "
        "mesh_network_mtu or use ports that carry it"
    ]
    assert data_ports.port_mtu_errors("node1", "jumbo", links, ["data1"]) == []  # mtu_errors names that one
    assert data_ports.port_mtu_errors("node1", 9000, "not json", ["data1"])[0].startswith(
        "node1: `ip -d -j link` output"
    )
